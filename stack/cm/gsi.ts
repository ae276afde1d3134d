/**
 * The General Services Interface: QP 1, the UD QP every MAD travels on (IBTA vol. 1 §13.4), with
 * the part of the kernel's MAD layer (drivers/infiniband/core/ib_mad.c) that sits on it: receive
 * buffers kept posted, each datagram checked and handed to the agent registered for its
 * management class, class version and method, and MADs sent from a ring of send buffers.
 *
 * Why an agent on top of an ordinary UD QP rather than a special QP object inside Device: this is
 * how rxe and the kernel split it. rxe's QP 1 is a UD QP like any other (IB_QPT_GSI gets QP number
 * 1 and the UD code paths); the MAD layer above it posts buffers and polls completions. So the
 * engine's receive dispatch (stack/port.ts, by QPN) and the UD requester and responder
 * (Q_Key check against 0x80010000, the GRH area in front of the data) serve the GSI unchanged, the
 * hot path of the engine gains nothing, and a device that never connects through the CM never has
 * a QP 1.
 *
 * Checks, in the order ib_mad.c makes them (ib_mad_recv_done(), validate_mad(), find_mad_agent()):
 * a datagram that is not one 256-byte MAD, or whose base version is not 1, is counted and dropped;
 * a MAD no agent takes (class, class version or method not registered) is counted and dropped, or
 * for a Get or Set answered with a GetResp carrying status "unsupported method/attribute"
 * (generate_unmatched_resp()). Nothing a peer sends makes this throw.
 */
import { MAD_LEN, MadMethod, MadStatus, GSI_QKEY, GSI_QPN, OFF, type MadHeader, parseMad } from '../../packets/mad';
import { WireError } from '../../packets/errors';
import { ipv6ToString } from '../../packets/bytes';
import { CompletionQueue } from '../completion-queue';
import { VerbsError } from '../errors';
import { QpState, QpType } from '../qp-type-and-state';
import { Access } from '../access-flags';
import { SendFlags, WrOpcode } from '../work-request-codes';
import { WcOpcode, WcStatus, type WorkCompletion } from '../work-completion';
import type { Device } from '../device';
import type { QueuePair } from '../queue-pair';
import type { MemoryRegion } from '../memory-region';
import type { AddressHandle } from '../address';
import type { Clock } from '../../base/clock';
import { type GsiCounters, newGsiCounters } from './gsi-counters';
import { sourceGidIndex } from './source-gid';

/** The GRH area a UD receive buffer starts with (IBTA §11.4.1.1; rxe writes the IP header there). */
const GRH_LEN = 40;
const RECV_SLOT = GRH_LEN + MAD_LEN;

/** Where a MAD came from, and where its answer goes. */
/** Address handles kept for MAD peers (the oldest is dropped past this). */
const MAX_CACHED_AHS = 4096;

export interface MadPeer {
  /** The sender's GID (an IPv4-mapped GID for RoCE v2 over IPv4). */
  gid: Uint8Array;
  /** The sender's QP (1 for every GSI agent). */
  qpn: number;
}

export interface ReceivedMad {
  header: MadHeader;
  /** The 256 bytes of the MAD (a copy the handler may keep). */
  mad: Uint8Array;
  view: DataView;
  from: MadPeer;
}

export type MadHandler = (m: ReceivedMad) => void;

export interface GsiOptions {
  /** Receive buffers kept posted (the kernel's mad_recvq_size default is 512). */
  recvDepth?: number;
  /** Send buffers (the kernel's mad_sendq_size default is 128). */
  sendDepth?: number;
  /** Hop limit and traffic class of the datagrams sent (rdma_cm on RoCE: 64 and the ToS, 0 by default). */
  hopLimit?: number;
  trafficClass?: number;
}

/** A completion queue that asks for the GSI to drain it, on the device's clock, whenever a completion arrives. */
class GsiCompletionQueue extends CompletionQueue {
  private scheduled = false;

  constructor(
    depth: number,
    private readonly clock: Clock,
    private readonly drain: () => void,
  ) {
    super(depth);
  }

  override push(wc: WorkCompletion, solicited = false): boolean {
    const ok = super.push(wc, solicited);
    if (!this.scheduled) {
      this.scheduled = true;
      this.clock.soon(() => {
        this.scheduled = false;
        this.drain();
      });
    }
    return ok;
  }
}

interface Agent {
  mgmtClass: number;
  classVersion: number;
  methods: ReadonlySet<number>;
  handler: MadHandler;
}

export class Gsi {
  readonly qp: QueuePair;
  readonly counters: GsiCounters = newGsiCounters();
  private readonly dev: Device;
  private readonly cq: GsiCompletionQueue;
  private readonly recvMr: MemoryRegion;
  private readonly sendMr: MemoryRegion;
  private readonly freeSlots: number[] = [];
  private readonly agents: Agent[] = [];
  private readonly ahs = new Map<string, AddressHandle>();
  private readonly hopLimit: number;
  private readonly trafficClass: number;
  private closed = false;

  constructor(dev: Device, o: GsiOptions = {}) {
    this.dev = dev;
    const recvDepth = o.recvDepth ?? 512;
    const sendDepth = o.sendDepth ?? 128;
    this.hopLimit = o.hopLimit ?? 64;
    this.trafficClass = o.trafficClass ?? 0;
    const pd = dev.allocPd();
    this.cq = new GsiCompletionQueue(2 * (recvDepth + sendDepth), dev.clock, () => this.drain());
    this.qp = dev.createQp(pd, { qpType: QpType.UD, sendCq: this.cq, recvCq: this.cq, cap: { maxSendWr: sendDepth, maxRecvWr: recvDepth } }, GSI_QPN);
    this.recvMr = dev.regMr(pd, new Uint8Array(recvDepth * RECV_SLOT), Access.LOCAL_WRITE);
    this.sendMr = dev.regMr(pd, new Uint8Array(sendDepth * MAD_LEN), 0);
    for (let i = sendDepth - 1; i >= 0; i--) this.freeSlots.push(i);
    this.qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qkey: GSI_QKEY });
    this.qp.modify({ qpState: QpState.RTR });
    this.qp.modify({ qpState: QpState.RTS, sqPsn: 0 }); // rxe's QP 1 counts PSNs from 0 (captures/rxe)
    for (let i = 0; i < recvDepth; i++) this.postRecvSlot(i);
  }

  /**
   * Takes the MADs of `mgmtClass`/`classVersion` with one of `methods` (ib_register_mad_agent()
   * with a method mask). One agent per class and version.
   */
  register(mgmtClass: number, classVersion: number, methods: readonly number[], handler: MadHandler): void {
    this.agents.push({ mgmtClass, classVersion, methods: new Set(methods), handler });
  }

  /**
   * Sends one 256-byte MAD to the GSI of `to`. Returns false (and counts gsi_send_err) when the
   * peer cannot be reached (no neighbour entry for its address) or no send buffer is free: a MAD
   * is a datagram, and its sender's retries cover a lost one.
   */
  send(to: MadPeer, mad: Uint8Array): boolean {
    if (this.closed) return false;
    const ah = this.addressHandle(to.gid);
    const slot = this.freeSlots.pop();
    if (ah === null || slot === undefined || mad.length !== MAD_LEN) {
      if (slot !== undefined) this.freeSlots.push(slot);
      this.counters.gsi_send_err++;
      return false;
    }
    this.sendMr.buffer.set(mad, slot * MAD_LEN);
    this.qp.postSend({
      wrId: slot,
      opcode: WrOpcode.SEND,
      sgList: [this.sendMr.sge(slot * MAD_LEN, MAD_LEN)],
      sendFlags: SendFlags.SIGNALED,
      ud: { ah, remoteQpn: to.qpn, remoteQkey: GSI_QKEY },
    });
    this.counters.gsi_sent_mads++;
    return true;
  }

  /** The address handle towards `gid`, or null when the device cannot resolve it (no neighbour entry). */
  addressHandle(gid: Uint8Array): AddressHandle | null {
    const key = ipv6ToString(gid);
    let ah = this.ahs.get(key);
    if (ah === undefined) {
      try {
        ah = this.dev.createAh(this.qp.pd, {
          dgid: gid,
          sgidIndex: sourceGidIndex(this.dev.gids, gid),
          hopLimit: this.hopLimit,
          trafficClass: this.trafficClass,
        });
      } catch (e) {
        if (!(e instanceof VerbsError)) throw e;
        return null; // unreachable: resolvePath found no neighbour entry (or no source GID of that family)
      }
      // A bounded cache: peers that come and go (or a flood of spoofed sources on the local
      // subnet, which the kernel's neighbour table resolves) must not grow it without end.
      if (this.ahs.size >= MAX_CACHED_AHS) this.ahs.delete(this.ahs.keys().next().value as string);
      this.ahs.set(key, ah);
    }
    return ah;
  }

  /** Stops taking and sending MADs and gives QP 1 back to the device. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.dev.destroyQp(this.qp);
  }

  private postRecvSlot(slot: number): void {
    this.qp.postRecv({ wrId: slot, sgList: [this.recvMr.sge(slot * RECV_SLOT, RECV_SLOT)] });
  }

  private drain(): void {
    for (;;) {
      const wcs = this.cq.poll(64);
      if (wcs.length === 0) break;
      for (const wc of wcs) {
        if (wc.opcode === WcOpcode.RECV) this.received(wc);
        else this.freeSlots.push(Number(wc.wrId));
      }
    }
    this.dev.flush();
  }

  private received(wc: WorkCompletion): void {
    const slot = Number(wc.wrId);
    if (this.closed || wc.status === WcStatus.WR_FLUSH_ERR) return;
    const at = slot * RECV_SLOT;
    try {
      if (wc.status !== WcStatus.SUCCESS) {
        // A datagram longer than one MAD does not fit the buffer (LOC_LEN_ERR).
        this.counters.gsi_bad_length++;
        return;
      }
      const buf = this.recvMr.buffer;
      const mad = buf.slice(at + GRH_LEN, at + wc.byteLen);
      const view = new DataView(mad.buffer);
      let header: MadHeader;
      try {
        header = parseMad(view, 0, mad.length);
      } catch (e) {
        if (!(e instanceof WireError)) throw e;
        if (mad.length !== MAD_LEN) this.counters.gsi_bad_length++;
        else this.counters.gsi_bad_base_version++;
        return;
      }
      const from: MadPeer = { gid: sourceGid(buf.subarray(at, at + GRH_LEN)), qpn: wc.srcQp };
      const agent = this.agents.find((a) => a.mgmtClass === header.mgmtClass && a.classVersion === header.classVersion && a.methods.has(header.method));
      if (agent === undefined) {
        this.counters.gsi_unmatched++;
        if (header.method === MadMethod.GET || header.method === MadMethod.SET) this.answerUnsupported(mad, from);
        return;
      }
      this.counters.gsi_rcvd_mads++;
      agent.handler({ header, mad, view, from });
    } finally {
      if (!this.closed) this.postRecvSlot(slot);
    }
  }

  /** generate_unmatched_resp(): the MAD back as a GetResp with status "unsupported method/attribute". */
  private answerUnsupported(mad: Uint8Array, to: MadPeer): void {
    const resp = mad.slice();
    const v = new DataView(resp.buffer);
    v.setUint8(OFF.METHOD, MadMethod.GET_RESP);
    v.setUint16(OFF.STATUS, MadStatus.UNSUPPORTED_METHOD_ATTRIBUTE);
    if (this.send(to, resp)) this.counters.gsi_unsupported_resp_sent++;
  }
}

/** The source GID from the GRH area of a UD receive: the IPv6 source, or for IPv4 (header at byte 20) the IPv4-mapped source. */
export function sourceGid(grh: Uint8Array): Uint8Array {
  const gid = new Uint8Array(16);
  if ((grh[20] ?? 0) >>> 4 === 4) {
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid.set(grh.subarray(20 + 12, 20 + 16), 12);
  } else {
    gid.set(grh.subarray(8, 24));
  }
  return gid;
}
