/**
 * Conversations established by RDMA CM (IBTA vol. 1 chapter 12). When the capture holds a REQ and
 * the REP answering it (matched by communication ID), the connection's QPNs, each side's starting
 * PSN and the path MTU come from them (REQ: the active side's QPN and path MTU, and the passive
 * side's first send PSN; REP: the passive side's QPN and the active side's first send PSN), not
 * from the first packets captured. A replay then
 * starts its QP where the connection started: requests the capture lost at the start are a capture
 * gap like any other.
 */
import { packetAddresses } from '../../packets/decode';
import type { CapturedPacket, RcConversation } from './conversation';

export interface CmConnection {
  activeIp: string;
  passiveIp: string;
  activeQpn: number;
  passiveQpn: number;
  /** Starting PSN of each side's requests. */
  activePsn: number;
  passivePsn: number;
  /** From the REQ's path MTU code (1 = 256 … 5 = 4096), or null. */
  pathMtuBytes: number | null;
  /** The REQ and REP frames. */
  frames: [number, number];
}

/** The connections whose REQ and REP the capture holds. */
export function cmConnections(packets: readonly CapturedPacket[]): CmConnection[] {
  const reqs = new Map<string, { ip: string; peer: string; qpn: number; psn: number; mtu: number; frame: number }>();
  const out: CmConnection[] = [];
  for (const c of packets) {
    const m = c.p.mad?.cm;
    if (m === undefined || m === null) continue;
    const { src, dst } = packetAddresses(c.p);
    if (m.name === 'REQ') {
      const f = m.fields;
      reqs.set(`${src}>${dst}#${f.localCommId}`, { ip: src, peer: dst, qpn: f.localQpn, psn: f.startingPsn, mtu: f.pathMtu, frame: c.frame });
    } else if (m.name === 'REP') {
      const f = m.fields;
      const q = reqs.get(`${dst}>${src}#${f.remoteCommId}`);
      if (q === undefined) continue;
      out.push({
        activeIp: q.ip,
        passiveIp: src,
        activeQpn: q.qpn,
        passiveQpn: f.localQpn,
        // As rdma_cm over ib_cm uses them (and rxe expects): a message's Starting PSN is the first PSN
        // its sender's receive queue expects (cma.c rdma_init_qp_attr() sets rq_psn to the ID's
        // seq_num, the PSN it sent), so each side sends from the PSN of the other side's message.
        activePsn: f.startingPsn,
        passivePsn: q.psn,
        pathMtuBytes: q.mtu >= 1 && q.mtu <= 5 ? 128 << q.mtu : null,
        frames: [q.frame, c.frame],
      });
    }
  }
  return out;
}

/** Sets the starting PSN and path MTU of each conversation a CM exchange in the capture established (the latest before it). */
export function applyCmSetup(convs: readonly RcConversation[], conns: readonly CmConnection[]): void {
  for (const conv of convs) {
    const first = conv.requests[0]?.frame ?? 0;
    let found: { psn: number; mtu: number | null; frames: [number, number] } | null = null;
    for (const k of conns) {
      if (k.frames[1] > first) continue;
      if (k.activeIp === conv.requesterIp && k.activeQpn === conv.requesterQpn && k.passiveIp === conv.responderIp && k.passiveQpn === conv.responderQpn) {
        found = { psn: k.activePsn, mtu: k.pathMtuBytes, frames: k.frames };
      } else if (
        k.passiveIp === conv.requesterIp &&
        k.passiveQpn === conv.requesterQpn &&
        k.activeIp === conv.responderIp &&
        k.activeQpn === conv.responderQpn
      ) {
        found = { psn: k.passivePsn, mtu: k.pathMtuBytes, frames: k.frames };
      }
    }
    if (found === null) continue;
    conv.cm = { startPsn: found.psn, frames: found.frames };
    if (found.mtu !== null) conv.pathMtuBytes = found.mtu;
  }
}
