/**
 * Why a connection never came up, from the frames alone: the usual causes of a RETRY_EXC_ERR or a
 * hang (a peer without RoCE, a GID index or type that differs between the ends, a path MTU above
 * the peer's, a wrong QPN or start PSN in the exchange, ECN set up on one end only). Fed one frame
 * at a time by the analyzer; a few numbers per host pair, at most `MAX_PAIRS` pairs and
 * `MAX_EVIDENCE` evidence frames per finding, so its memory does not grow with the capture.
 */
import type { RocePacket } from '../packets/decode';
import { AethKind, NakCode } from '../packets/aeth';
import { OpFlag } from '../packets/opcodes';
import { FrameRole, type FrameView } from './frame-view';
import type { IcmpUnreachable } from './icmp-unreachable';
import type { PerftestAnnouncement } from './oob';

/** The causes the diagnosis names. */
export const DiagnosisCause = {
  NO_ROCE_ON_PEER: 'noRoceOnPeer',
  GID_TYPE_MISMATCH: 'gidTypeMismatch',
  GID_INDEX_MISMATCH: 'gidIndexMismatch',
  PATH_MTU_ABOVE_PEER: 'pathMtuAbovePeer',
  WRONG_QPN: 'wrongQpn',
  WRONG_PSN: 'wrongPsn',
  ECN_ONE_END: 'ecnOneEnd',
  RETRY_EXHAUSTED: 'retryExhausted',
} as const;
export type DiagnosisCause = (typeof DiagnosisCause)[keyof typeof DiagnosisCause];

/** One cause found: the frames that show it, what they mean, and what to change. */
export interface Diagnosis {
  cause: DiagnosisCause;
  /** Frame numbers that show it (at most `MAX_EVIDENCE`). */
  frames: number[];
  explanation: string;
  fix: string;
  /** retryExhausted only: the other causes this capture shows that explain it, or the ones it cannot rule out. */
  consistentWith?: DiagnosisCause[];
}

/** Host pairs tracked at most; frames of further pairs are not looked at. */
export const MAX_PAIRS = 1024;
/** Evidence frames kept per finding. */
export const MAX_EVIDENCE = 8;
/** Request QPNs tracked per pair. */
const MAX_QPNS = 8;
/** Transmissions of one PSN, with no response at all, that make the RETRY_EXC_ERR picture (rdma-core's default retry_cnt is 7: 8 in all). */
export const RETRY_TRANSMISSIONS = 3;
/** CE-marked frames towards a host that sends no CNP back before ECN is called one-sided. */
export const CE_WITHOUT_CNP = 4;
/** Recent requests per QPN kept to find the one an invalid-request NAK names by its PSN. */
const RECENT = 32;

/** What a frame's addresses say of the GID the sender used (IBTA annex A17: v1 GRH, v2 IPv4 or IPv6). */
type GidKind = 'v1' | 'ipv4' | 'linkLocal' | 'ipv6';
const GID_KINDS: readonly GidKind[] = ['v1', 'ipv4', 'linkLocal', 'ipv6'];

function gidKind(version: 1 | 2, src: string): GidKind {
  if (version === 1) return 'v1';
  if (!src.includes(':') || src.startsWith('::ffff:')) return 'ipv4';
  return src.toLowerCase().startsWith('fe80:') ? 'linkLocal' : 'ipv6';
}

/** A request QPN of one direction: its PSN window, transmissions of its first PSN, whether anything answered inside the window. */
interface QpnTrack {
  qpn: number;
  frames: number[];
  firstPsn: number;
  lastPsn: number;
  firstPsnSends: number;
  requests: number;
  minPayload: number;
  answered: boolean;
  /** The requests after the last one answered: first PSN, its transmissions, smallest payload, frames. */
  tailPsn: number | null;
  tailSends: number;
  tailMinPayload: number;
  tailFrames: number[];
  /** The last `RECENT` requests, a ring: PSN, payload length, frame number. */
  recentPsn: Int32Array;
  recentPayload: Int32Array;
  /** 1 where the request was a FIRST or MIDDLE packet, whose payload is exactly its sender's path MTU. */
  recentFull: Uint8Array;
  recentFrame: Int32Array;
  recentNext: number;
}

/** An invalid-request NAK and the request it names. */
interface InvalidRequestNak {
  frame: number;
  psn: number;
  qpn: number;
  /** The NAK'd request's payload and frame, or -1 when it is not among the recent requests kept. */
  payload: number;
  requestFrame: number;
  /** The NAK'd request was a FIRST or MIDDLE packet. */
  full: boolean;
}

/** What one direction (src to dst) showed. */
interface Direction {
  src: string;
  dst: string;
  requests: number;
  responses: number;
  cnps: number;
  /** Largest payload of any frame sent. */
  maxPayload: number;
  maxPayloadFrame: number;
  /** Largest payload of a FIRST or MIDDLE packet sent: exactly the sender's path MTU (IBTA §9.7.4.1.3 / rxe's check_length), or -1. */
  mtuWitness: number;
  mtuWitnessFrame: number;
  /** The first NAK invalid request this direction sent. */
  invalidRequestNak: InvalidRequestNak | null;
  /** Requests that were ECN-capable (ECT(0), ECT(1) or CE) and ones that were not. */
  ect: number;
  notEct: number;
  ce: number;
  ceFrames: number[];
  cnpFrames: number[];
  qpns: QpnTrack[];
  /** The first ACK or NAK this direction sent: a sequence NAK there (with its PSN, the responder's expected PSN) names a wrong start PSN. */
  firstAck: { frame: number; seqNak: boolean; psn: number } | null;
  /** Responses per PSN window are matched against the other direction's QPN tracks. */
  maxAnsweredPayload: number;
  /** Versions and GID kinds sent, as bits of GID_KINDS. */
  kinds: number;
  kindFrames: number[];
}

function direction(src: string, dst: string): Direction {
  return {
    src,
    dst,
    requests: 0,
    responses: 0,
    cnps: 0,
    maxPayload: -1,
    maxPayloadFrame: 0,
    mtuWitness: -1,
    mtuWitnessFrame: 0,
    invalidRequestNak: null,
    ect: 0,
    notEct: 0,
    ce: 0,
    ceFrames: [],
    cnpFrames: [],
    qpns: [],
    firstAck: null,
    maxAnsweredPayload: -1,
    kinds: 0,
    kindFrames: [],
  };
}

function pushEvidence(list: number[], frame: number): void {
  if (list.length < MAX_EVIDENCE) list.push(frame);
}

/** PSN `p` lies in the 24-bit window [from, to] (IBTA §9.7.1: PSNs wrap at 2^24). */
function inWindow(p: number, from: number, to: number): boolean {
  return ((p - from) & 0xffffff) <= ((to - from) & 0xffffff);
}

/** What the diagnosis reads of a RoCE frame beyond its view: RoCE version, ECN field (0: Not-ECT), MACs (-1 without Ethernet). */
export interface WireFacts {
  version: 1 | 2;
  ecn: number;
  srcMac: number;
  dstMac: number;
}

/** The `WireFacts` of a decoded frame. */
export function wireFacts(p: RocePacket): WireFacts {
  const h = p.ipv6 ?? p.grh;
  const ecn = p.ipv4 !== null ? p.ipv4.ecn : h === null ? 0 : h.trafficClass & 3;
  return { version: p.version, ecn, srcMac: p.eth?.src ?? -1, dstMac: p.eth?.dst ?? -1 };
}

/** Collects what the diagnosis needs from each frame; `finish` names the causes. */
export class ConnectionDoctor {
  /** Directions by "src>dst". */
  private readonly dirs = new Map<string, Direction>();
  /** GID kinds each MAC sent from, as bits, and to which MAC: pairs of hosts by their MACs ("a>b"). */
  private readonly macKinds = new Map<string, { kinds: number; frames: number[] }>();
  private readonly icmp: { frames: number[]; sample: IcmpUnreachable | null; count: number } = { frames: [], sample: null, count: 0 };

  /** What each host announced in a perftest exchange: its QPNs and start PSNs, and the frames. */
  private readonly announced = new Map<string, { qpns: Set<number>; psns: Set<number>; frames: number[] }>();

  /** A perftest key message, frame `frame`: the QPN and start PSN its sender announced. */
  onAnnouncement(frame: number, a: PerftestAnnouncement): void {
    let h = this.announced.get(a.src);
    if (h === undefined) {
      if (this.announced.size >= MAX_PAIRS) return;
      h = { qpns: new Set(), psns: new Set(), frames: [] };
      this.announced.set(a.src, h);
    }
    if (h.qpns.size < MAX_QPNS) h.qpns.add(a.qpn);
    if (h.psns.size < MAX_QPNS) h.psns.add(a.psn);
    pushEvidence(h.frames, frame);
  }

  /** An ICMP unreachable quoting a RoCE datagram, frame `frame`. */
  onIcmp(frame: number, u: IcmpUnreachable): void {
    this.icmp.count++;
    this.icmp.sample ??= u;
    pushEvidence(this.icmp.frames, frame);
  }

  private dir(src: string, dst: string): Direction | null {
    const key = `${src}>${dst}`;
    let d = this.dirs.get(key);
    if (d === undefined) {
      if (this.dirs.size >= MAX_PAIRS) return null;
      d = direction(src, dst);
      this.dirs.set(key, d);
    }
    return d;
  }

  /** A RoCE frame: its view and its version, ECN field and MACs. */
  onRoce(v: FrameView, p: WireFacts): void {
    const d = this.dir(v.src, v.dst);
    if (d === null) return;
    const version = p.version;
    const kindBit = 1 << GID_KINDS.indexOf(gidKind(version, v.src));
    if ((d.kinds & kindBit) === 0) pushEvidence(d.kindFrames, v.frame);
    d.kinds |= kindBit;
    if (p.srcMac >= 0) {
      const key = `${p.srcMac}>${p.dstMac}`;
      let m = this.macKinds.get(key);
      if (m === undefined && this.macKinds.size < MAX_PAIRS) {
        m = { kinds: 0, frames: [] };
        this.macKinds.set(key, m);
      }
      if (m !== undefined) {
        if ((m.kinds & kindBit) === 0) pushEvidence(m.frames, v.frame);
        m.kinds |= kindBit;
      }
    }
    if (v.payloadLength > d.maxPayload) {
      d.maxPayload = v.payloadLength;
      d.maxPayloadFrame = v.frame;
    }
    // C9-29: a FIRST or MIDDLE packet carries exactly one path MTU of payload.
    const firstOrMiddle = (v.opFlags & OpFlag.MIDDLE) !== 0 || (v.opFlags & (OpFlag.START | OpFlag.END)) === OpFlag.START;
    if (firstOrMiddle && v.payloadLength > d.mtuWitness) {
      d.mtuWitness = v.payloadLength;
      d.mtuWitnessFrame = v.frame;
    }
    if (v.role === FrameRole.CNP) {
      d.cnps++;
      pushEvidence(d.cnpFrames, v.frame);
      return;
    }
    if (v.role === FrameRole.REQUEST) {
      if (v.transport !== 'RC' || v.destQp === 1) return;
      d.requests++;
      if (p.ecn > 0) d.ect++;
      else d.notEct++;
      if (v.ecnCe) {
        d.ce++;
        pushEvidence(d.ceFrames, v.frame);
      }
      let q = d.qpns.find((t) => t.qpn === v.destQp);
      if (q === undefined) {
        if (d.qpns.length >= MAX_QPNS) return;
        q = {
          qpn: v.destQp,
          frames: [],
          firstPsn: v.psn,
          lastPsn: v.psn,
          firstPsnSends: 0,
          requests: 0,
          minPayload: v.payloadLength,
          answered: false,
          tailPsn: null,
          tailSends: 0,
          tailMinPayload: v.payloadLength,
          tailFrames: [],
          recentPsn: new Int32Array(RECENT).fill(-1),
          recentPayload: new Int32Array(RECENT),
          recentFull: new Uint8Array(RECENT),
          recentFrame: new Int32Array(RECENT),
          recentNext: 0,
        };
        d.qpns.push(q);
      }
      q.requests++;
      q.recentPsn[q.recentNext] = v.psn;
      q.recentPayload[q.recentNext] = v.payloadLength;
      q.recentFull[q.recentNext] = firstOrMiddle ? 1 : 0;
      q.recentFrame[q.recentNext] = v.frame;
      q.recentNext = (q.recentNext + 1) % RECENT;
      if (v.psn === q.firstPsn) q.firstPsnSends++;
      if (!inWindow(v.psn, q.firstPsn, q.lastPsn) && ((v.psn - q.lastPsn) & 0xffffff) < 0x800000) q.lastPsn = v.psn;
      q.minPayload = Math.min(q.minPayload, v.payloadLength);
      pushEvidence(q.frames, v.frame);
      if (q.tailPsn === null) {
        q.tailPsn = v.psn;
        q.tailSends = 0;
        q.tailMinPayload = v.payloadLength;
        q.tailFrames = [];
      }
      if (v.psn === q.tailPsn) q.tailSends++;
      q.tailMinPayload = Math.min(q.tailMinPayload, v.payloadLength);
      pushEvidence(q.tailFrames, v.frame);
      return;
    }
    if (v.role !== FrameRole.RESPONSE || v.transport !== 'RC') return;
    d.responses++;
    if (v.aethKind !== null && d.firstAck === null) d.firstAck = { frame: v.frame, seqNak: v.aethKind === AethKind.NAK && v.aethValue === 0, psn: v.psn };
    // A response answers the other direction's requests whose PSN window holds its PSN (a NAK's
    // PSN is the responder's expected PSN: IBTA §9.7.5.2.8; it answers only when inside the window).
    const back = this.dirs.get(`${v.dst}>${v.src}`);
    if (back === undefined) return;
    const invalidRequest = v.aethKind === AethKind.NAK && v.aethValue === NakCode.INVALID_REQUEST && d.invalidRequestNak === null;
    for (const q of back.qpns) {
      if (!inWindow(v.psn, q.firstPsn, q.lastPsn)) continue;
      // An invalid-request NAK carries the PSN of the request it refuses (a class C error: IBTA
      // §9.7.5.2.8; rxe do_class_ac_error() sends it with the request's PSN).
      if (invalidRequest && d.invalidRequestNak === null) {
        const i = q.recentPsn.lastIndexOf(v.psn);
        d.invalidRequestNak = {
          frame: v.frame,
          psn: v.psn,
          qpn: q.qpn,
          payload: i < 0 ? -1 : (q.recentPayload[i] ?? -1),
          full: i >= 0 && q.recentFull[i] === 1,
          requestFrame: i < 0 ? -1 : (q.recentFrame[i] ?? -1),
        };
      }
      q.answered = true;
      // The requests up to the response's PSN got through: the tail after it starts afresh.
      if (q.tailPsn !== null && inWindow(q.tailPsn, q.firstPsn, v.psn)) {
        back.maxAnsweredPayload = Math.max(back.maxAnsweredPayload, q.tailMinPayload);
        q.tailPsn = null;
      }
    }
  }

  /** The causes the frames show, most specific first; empty for a healthy capture. */
  finish(): Diagnosis[] {
    const out: Diagnosis[] = [];
    const icmpTo = new Set<string>();
    if (this.icmp.sample !== null) {
      const s = this.icmp.sample;
      icmpTo.add(`${s.to}>${s.quotedDst}`);
      const port = (s.family === 4 && s.code === 3) || (s.family === 6 && s.code === 4);
      out.push({
        cause: DiagnosisCause.NO_ROCE_ON_PEER,
        frames: [...this.icmp.frames],
        explanation:
          `${s.from} answered ${this.icmp.count} RoCE v2 datagram(s) from ${s.to} to ${s.quotedDst} with ICMP${s.family === 6 ? 'v6' : ''} destination unreachable ` +
          `(type ${s.type} code ${s.code}${port ? ', port unreachable' : ''}): no RoCE device took UDP port 4791 there`,
        fix: `load RoCE on ${s.quotedDst} (rdma link add rxe0 type rxe netdev IF, or the NIC's RoCE driver) and check that ${s.quotedDst} is the peer's RoCE address`,
      });
    }
    this.gidMismatches(out);
    const specific = new Map<string, DiagnosisCause[]>();
    const note = (d: Direction, c: DiagnosisCause): void => {
      const k = `${d.src}>${d.dst}`;
      specific.set(k, [...(specific.get(k) ?? []), c]);
    };
    for (const d of this.dirs.values()) {
      const back = this.dirs.get(`${d.dst}>${d.src}`);
      const peerSent = back !== undefined && back.requests + back.responses + back.cnps > 0;
      for (const q of d.qpns) {
        // The peer's largest frame is its MTU's witness: requests above it, resent and never answered.
        const peerMax = Math.max(back?.maxPayload ?? -1, d.maxAnsweredPayload);
        if (q.tailPsn !== null && q.tailSends >= 2 && peerMax >= 0 && q.tailMinPayload > peerMax) {
          note(d, DiagnosisCause.PATH_MTU_ABOVE_PEER);
          out.push({
            cause: DiagnosisCause.PATH_MTU_ABOVE_PEER,
            frames: [...q.tailFrames.slice(0, MAX_EVIDENCE - 1), ...(back?.maxPayload === peerMax ? [back.maxPayloadFrame] : [])].sort((x, y) => x - y),
            explanation: `${d.src} sent requests of ${q.tailMinPayload} payload bytes or more to QP 0x${q.qpn.toString(16)} at ${d.dst}, resent and never answered, while the largest payload ${d.dst} sent or had answered was ${peerMax} bytes: the requester's path MTU is above the peer's`,
            fix: `set both ends to the same path MTU (ibv_modify_qp path_mtu, perftest -m, roce ... --mtu) no larger than the smaller interface MTU minus the RoCE headers; check ip link show on both ends`,
          });
        } else if (!q.answered && q.firstPsnSends >= 2 && peerSent) {
          note(d, DiagnosisCause.WRONG_QPN);
          const answeredOther = d.qpns.find((o) => o !== q && o.answered);
          out.push({
            cause: DiagnosisCause.WRONG_QPN,
            frames: [...q.frames],
            explanation:
              `${d.src} resent requests to QP 0x${q.qpn.toString(16)} at ${d.dst} and nothing answered them, ` +
              (answeredOther !== undefined
                ? `while ${d.dst} answered QP 0x${answeredOther.qpn.toString(16)}`
                : `while ${d.dst} is alive (it sent ${back?.requests ?? 0} request(s) and ${back?.responses ?? 0} response(s) of its own)`) +
              ': the destination QPN is not a QP of the peer in RTR/RTS (rxe drops a packet to an unknown QPN: rxe_recv.c hdr_check())',
            fix: 'check the QPN each side received in the exchange (perftest prints it as "remote address: ... QPN"); with several QPs, that each side pairs the right ones',
          });
        }
      }
      const nak = back?.invalidRequestNak ?? null;
      // rxe checks every request's payload against its own path MTU and refuses one that breaks
      // C9-29..31 with NAK invalid request (rxe_resp.c check_length(): RESPST_ERR_LENGTH, a class C
      // error), as this stack does; so a peer with RoCE answers instead of staying silent. Two
      // pictures name the cause: the refused packet is a FIRST or MIDDLE, whose payload is exactly
      // the requester's path MTU, so the responder's is another; or it is longer than the path MTU
      // the responder's own FIRST and MIDDLE packets show.
      const refusedFull = nak !== null && nak.full && nak.payload > 0;
      const aboveWitness = nak !== null && back !== undefined && back.mtuWitness >= 0 && nak.payload > back.mtuWitness;
      if (
        back !== undefined &&
        nak !== null &&
        (refusedFull || aboveWitness) &&
        !(specific.get(`${d.src}>${d.dst}`) ?? []).includes(DiagnosisCause.PATH_MTU_ABOVE_PEER)
      ) {
        note(d, DiagnosisCause.PATH_MTU_ABOVE_PEER);
        const witness = back.mtuWitness >= 0 ? `its own FIRST and MIDDLE packets show a path MTU of ${back.mtuWitness} bytes` : null;
        const request = `${d.dst} answered a ${refusedFull ? 'FIRST or MIDDLE packet' : 'request'} of ${nak.payload} payload bytes from ${d.src} (QP 0x${nak.qpn.toString(16)}, PSN ${nak.psn}) with NAK invalid request`;
        out.push({
          cause: DiagnosisCause.PATH_MTU_ABOVE_PEER,
          frames: [...(witness !== null ? [back.mtuWitnessFrame] : []), nak.requestFrame, nak.frame].sort((x, y) => x - y),
          explanation: refusedFull
            ? `${request}: a FIRST or MIDDLE packet carries exactly its sender's path MTU (C9-29), so the path MTU of ${d.dst} is not ${nak.payload}${witness !== null ? ` (${witness})` : ''}: the two ends' path MTUs differ`
            : `${request}, while ${witness}: the requester's path MTU is above the peer's, and the peer refuses the longer packet`,
          fix: `set both ends to the same path MTU (ibv_modify_qp path_mtu, perftest -m, roce ... --mtu) no larger than the smaller interface MTU minus the RoCE headers; check ip link show on both ends`,
        });
      }
      this.exchangeMismatches(d, note, specific.get(`${d.src}>${d.dst}`) ?? [], out);
      const first = d.qpns[0];
      if (back?.firstAck?.seqNak === true && first !== undefined && back.firstAck.psn !== first.firstPsn) {
        note(d, DiagnosisCause.WRONG_PSN);
        out.push({
          cause: DiagnosisCause.WRONG_PSN,
          frames: [first.frames[0] ?? 0, back.firstAck.frame],
          explanation: `the first answer from ${d.dst} to ${d.src} is a PSN sequence error NAK expecting PSN ${back.firstAck.psn} while the requester started at PSN ${first.firstPsn}: the peer's RQ PSN (rq_psn) is not the requester's start PSN (IBTA §9.7.5.1.2)`,
          fix: "give each side the other's start PSN from the exchange: the responder's rq_psn (IBV_QP_RQ_PSN) must equal the requester's sq_psn (IBV_QP_SQ_PSN)",
        });
      }
      if (d.ce >= CE_WITHOUT_CNP && back !== undefined && back.cnps === 0 && back.requests + back.responses > 0) {
        note(d, DiagnosisCause.ECN_ONE_END);
        out.push({
          cause: DiagnosisCause.ECN_ONE_END,
          frames: [...d.ceFrames],
          explanation: `${d.ce} frame(s) from ${d.src} reached ${d.dst} marked CE and ${d.dst} sent no CNP back: the notification point at ${d.dst} does not have ECN/DCQCN enabled (IBTA annex A17.9)`,
          fix: `enable RoCE ECN on ${d.dst} (the NIC's ECN/DCQCN setting, e.g. /sys/class/net/IF/ecn/roce_np/enable/3 on mlx5) or turn ECN marking off on both ends`,
        });
      }
      if (d.cnps > 0 && back !== undefined && back.notEct > 0 && back.ect === 0) {
        note(back, DiagnosisCause.ECN_ONE_END);
        out.push({
          cause: DiagnosisCause.ECN_ONE_END,
          frames: [...d.cnpFrames],
          explanation: `${d.src} sent ${d.cnps} CNP(s) to ${d.dst}, whose ${back.notEct} request(s) are all Not-ECT: the reaction point at ${d.dst} is not ECN-capable, so it neither marks ECT nor slows down on a CNP`,
          fix: `enable RoCE ECN on ${d.dst} (roce_rp on mlx5; net.ipv4.tcp_ecn does not apply to RoCE) so that it sends ECT and reacts to CNPs`,
        });
      }
    }
    for (const d of this.dirs.values()) {
      const back = this.dirs.get(`${d.dst}>${d.src}`);
      if (back !== undefined && back.responses > 0) continue;
      const q = d.qpns.find((t) => t.firstPsnSends >= RETRY_TRANSMISSIONS);
      if (q === undefined) continue;
      const found = specific.get(`${d.src}>${d.dst}`) ?? [];
      const icmp = icmpTo.has(`${d.src}>${d.dst}`) ? [DiagnosisCause.NO_ROCE_ON_PEER] : [];
      const gid = out.filter((g) => g.cause === DiagnosisCause.GID_TYPE_MISMATCH || g.cause === DiagnosisCause.GID_INDEX_MISMATCH).map((g) => g.cause);
      const known = [...new Set([...icmp, ...gid, ...found])];
      const consistentWith: DiagnosisCause[] =
        known.length > 0
          ? known
          : [
              DiagnosisCause.NO_ROCE_ON_PEER,
              DiagnosisCause.GID_TYPE_MISMATCH,
              DiagnosisCause.GID_INDEX_MISMATCH,
              DiagnosisCause.PATH_MTU_ABOVE_PEER,
              DiagnosisCause.WRONG_QPN,
            ];
      out.push({
        cause: DiagnosisCause.RETRY_EXHAUSTED,
        frames: [...q.frames],
        explanation:
          `${d.src} sent PSN ${q.firstPsn} to QP 0x${q.qpn.toString(16)} at ${d.dst} ${q.firstPsnSends} times and got no response at all: the requester ends with IBV_WC_RETRY_EXC_ERR once its retry count is spent (IBTA §9.7.6.1.3, C9-142)` +
          (known.length > 0
            ? `; this capture shows why: ${known.join(', ')}`
            : `; ${back === undefined || back.requests + back.cnps === 0 ? `${d.dst} sent nothing at all, ` : ''}the frames do not say which of ${consistentWith.join(', ')} it is`),
        fix:
          known.length > 0
            ? 'see the findings named above'
            : `run roce probe --doctor --dut ${d.dst} on the requester, and check the peer has RoCE, the GID index both sides use, the MTU and the exchanged QPN`,
        consistentWith,
      });
    }
    return out;
  }

  /**
   * The perftest exchange against the wire: requests to a QPN the responder did not announce, or a
   * requester starting at a PSN it did not announce (the responder set its rq_psn from the announcement).
   */
  private exchangeMismatches(d: Direction, note: (d: Direction, c: DiagnosisCause) => void, already: readonly DiagnosisCause[], out: Diagnosis[]): void {
    const peer = this.announced.get(d.dst);
    const self = this.announced.get(d.src);
    const hex = (n: number): string => `0x${n.toString(16)}`;
    for (const q of d.qpns) {
      if (peer !== undefined && peer.qpns.size < MAX_QPNS && !peer.qpns.has(q.qpn) && !already.includes(DiagnosisCause.WRONG_QPN)) {
        note(d, DiagnosisCause.WRONG_QPN);
        out.push({
          cause: DiagnosisCause.WRONG_QPN,
          frames: [...peer.frames.slice(0, 2), ...q.frames.slice(0, MAX_EVIDENCE - 2)],
          explanation: `${d.src} sent requests to QP ${hex(q.qpn)} at ${d.dst}, which announced QPN ${[...peer.qpns].map(hex).join(', ')} in the perftest exchange`,
          fix: 'use the QPN the peer sent in the exchange as the destination QP (IBV_QP_DEST_QPN)',
        });
      }
      if (self !== undefined && self.psns.size < MAX_QPNS && !self.psns.has(q.firstPsn) && !already.includes(DiagnosisCause.WRONG_PSN)) {
        note(d, DiagnosisCause.WRONG_PSN);
        out.push({
          cause: DiagnosisCause.WRONG_PSN,
          frames: [...self.frames.slice(0, 2), q.frames[0] ?? 0],
          explanation: `${d.src} started its requests to QP ${hex(q.qpn)} at PSN ${q.firstPsn} but announced start PSN ${[...self.psns].join(', ')} in the perftest exchange: the responder expects the announced one`,
          fix: "set the requester's sq_psn (IBV_QP_SQ_PSN) to the PSN it announces",
        });
      }
    }
  }

  /** A pair of hosts (by MAC) where one sends RoCE v1 and the other v2, or one from a link-local GID and the other from an IPv4-mapped one. */
  private gidMismatches(out: Diagnosis[]): void {
    const seen = new Set<string>();
    for (const [key, m] of this.macKinds) {
      const [a, b] = key.split('>') as [string, string];
      const other = this.macKinds.get(`${b}>${a}`);
      if (other === undefined || seen.has(key)) continue;
      seen.add(`${b}>${a}`);
      // Ends that share a kind of GID can reach each other: a host may use several (IPv4 and IPv6 conversations).
      if ((m.kinds & other.kinds) !== 0) continue;
      const bit = (k: GidKind): number => 1 << GID_KINDS.indexOf(k);
      const has = (x: number, k: GidKind): boolean => (x & bit(k)) !== 0;
      const frames = [...m.frames, ...other.frames].sort((x, y) => x - y).slice(0, MAX_EVIDENCE);
      const names = (x: number): string =>
        GID_KINDS.filter((k) => has(x, k))
          .map(
            (k) =>
              ({
                v1: 'RoCE v1 (EtherType 0x8915)',
                ipv4: 'RoCE v2 from an IPv4-mapped GID',
                linkLocal: 'RoCE v2 from a link-local (fe80::) GID',
                ipv6: 'RoCE v2 from a global IPv6 GID',
              })[k],
          )
          .join(' and ');
      const macText = (mac: string): string =>
        Number(mac)
          .toString(16)
          .padStart(12, '0')
          .replace(/(..)(?!$)/g, '$1:');
      const what = `${macText(a)} sends ${names(m.kinds)}, ${macText(b)} sends ${names(other.kinds)}`;
      if (has(m.kinds, 'v1') !== has(other.kinds, 'v1')) {
        out.push({
          cause: DiagnosisCause.GID_TYPE_MISMATCH,
          frames,
          explanation: `${what}: the two ends chose GID indexes of different types (RoCE v1 against v2), so neither takes the other's frames`,
          fix: 'pick on both ends a GID index whose type is RoCE v2 (show_gids, or /sys/class/infiniband/DEV/ports/1/gid_attrs/types/N; perftest -x N, ib_send_bw --gid-index)',
        });
      } else {
        out.push({
          cause: DiagnosisCause.GID_INDEX_MISMATCH,
          frames,
          explanation: `${what}: the two ends chose GID indexes of different kinds (a link-local GID against an IPv4-mapped one), so each sends to an address the other does not use for RoCE`,
          fix: 'pick on both ends the GID index of the same kind (the IPv4-mapped RoCE v2 GID for an IPv4 network: show_gids; perftest -x N)',
        });
      }
    }
  }
}
