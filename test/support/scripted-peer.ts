/**
 * A scripted peer: one `Device` on a virtual clock whose NIC is a recording
 * driver, with one QP connected to a fictitious remote QP (QPN 0x99 at
 * 198.18.0.2). A test plays the remote side by hand: it injects exactly the
 * frames the remote would send (`inject`), reads exactly the frames the stack
 * sent back (`sent`), moves time (`advance`) and polls completions.
 *
 * Every frame the stack emits is decoded on the way out; one that does not
 * decode cleanly (bad ICRC, bad lengths, wrong addresses) fails the test at
 * once, so every dialogue also checks the wire format of the stack.
 */
import type { AllocationOrder } from '../../stack/allocation-order';
import { VirtualClock } from '../../base/clock';
import { Device } from '../../stack/device';
import type { NicDriver, DriverStats } from '../../nic-driver/driver';
import { emptyStats } from '../../nic-driver/driver';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import type { WorkCompletion } from '../../stack/work-completion';
import { type Mtu, mtuBytes } from '../../stack/mtu';
import { connectQp, endpointOf, type ConnectOptions, type Endpoint } from '../../stack/connect';
import type { QueuePair } from '../../stack/queue-pair';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion, ProtectionDomain } from '../../stack/memory-region';
import type { SharedReceiveQueue } from '../../stack/shared-receive-queue';
import { buildRoceV2Frame, type BthSpec, type TransportSpec } from '../../packets/build';
import { decodeFrame, type RocePacket } from '../../packets/decode';
import { type AethKind, decodeSyndrome, encodeSyndrome, CREDITS_INVALID } from '../../packets/aeth';
import { ipv6FromString, ipv4ToString } from '../../packets/bytes';
import { opcodeByName } from '../../packets/opcodes';
import type { CongestionConfig } from '../../stack/congestion/parameters';

export const LOCAL_IP = '198.18.0.1';
export const PEER_IP = '198.18.0.2';
export const PEER_GID = `::ffff:${PEER_IP}`;
export const LOCAL_MAC = 0x02_00_00_00_00_01;
export const PEER_MAC = 0x02_00_00_00_00_02;
export const PEER_QPN = 0x99;
/** The UDP source port the scripted peer sends from. */
export const PEER_SPORT = 0xc123;
/** Syndromes as they appear on the wire. */
export const SYN = {
  ACK: encodeSyndrome('ACK', CREDITS_INVALID), // 0x1f
  NAK_SEQ: encodeSyndrome('NAK', 0), // 0x60
  NAK_INV_REQ: encodeSyndrome('NAK', 1), // 0x61
  NAK_REM_ACCESS: encodeSyndrome('NAK', 2), // 0x62
  NAK_REM_OP: encodeSyndrome('NAK', 3), // 0x63
  rnr: (timer: number): number => encodeSyndrome('RNR_NAK', timer), // 0x20 | timer
} as const;

/** A driver that records what the stack transmits and delivers what the test injects. */
export class RecordingDriver implements NicDriver {
  readonly name = 'scripted0';
  readonly stats: DriverStats = emptyStats();
  readonly tx: Uint8Array[] = [];
  private rxq: Uint8Array[] = [];
  private handler: (() => void) | null = null;

  constructor(
    readonly mac: number,
    readonly mtu: number,
  ) {}

  txBurst(frames: readonly Uint8Array[]): number {
    for (const f of frames) {
      this.tx.push(f.slice());
      this.stats.txFrames++;
      this.stats.txBytes += f.length;
    }
    return frames.length;
  }

  rxBurst(max: number): Uint8Array[] {
    const out = this.rxq.splice(0, max);
    this.stats.rxFrames += out.length;
    for (const f of out) this.stats.rxBytes += f.length;
    return out;
  }

  setRxHandler(fn: (() => void) | null): void {
    this.handler = fn;
  }

  /** Queues frames for receive and runs the handler once for the burst, as a NIC interrupt would. */
  deliver(frames: readonly Uint8Array[]): void {
    this.rxq.push(...frames);
    this.handler?.();
  }

  close(): void {
    this.handler = null;
  }
}

/** A transport packet as the remote sends it: `destQp` defaults to the scripted QP. */
export type InjectSpec = Omit<TransportSpec, 'bth'> & { bth: Omit<BthSpec, 'destQp'> & { destQp?: number } };

/** A compact view of one frame the stack sent. Optional parts are present only when the packet has them. */
export interface Sent {
  /** Opcode name from the table, e.g. `RC_ACKNOWLEDGE`. */
  op: string;
  opcode: number;
  psn: number;
  destQp: number;
  ackReq: boolean;
  /** AETH: kind (ACK / RNR_NAK / NAK), value (credit code, timer code, NAK code), raw syndrome and MSN. */
  aeth?: { kind: AethKind; value: number; syndrome: number; msn: number };
  reth?: { va: bigint; rkey: number; len: number };
  atomic?: { va: bigint; rkey: number; swapAdd: bigint; compare: bigint };
  origData?: bigint;
  imm?: number;
  invRkey?: number;
  deth?: { qkey: number; srcQp: number };
  payload: Uint8Array;
  pkt: RocePacket;
  frame: Uint8Array;
}

export interface ScriptedPeerOptions {
  qpType?: QpType;
  /** The device's key and QPN order (default random from its seed; 'sequential' as rxe). */
  allocation?: AllocationOrder;
  /** Path MTU enum (default 1 = 256 bytes, so short payloads make multi-packet messages). */
  pathMtu?: Mtu;
  /** The scripted QP's send PSN (the first PSN it sends). */
  sqPsn?: number;
  /** The remote's send PSN = the scripted QP's expected PSN. */
  rqPsn?: number;
  timeout?: number;
  retryCnt?: number;
  rnrRetry?: number;
  minRnrTimer?: number;
  maxRdAtomic?: number;
  maxDestRdAtomic?: number;
  /** QP access flags (default local write, remote write, read and atomic). */
  qpAccess?: number;
  /** UD Q_Key (default 0x11111111). */
  qkey?: number;
  /** Size of `buf` (default 64 KiB). */
  bufSize?: number;
  /** Access flags of `mr` (default all remote access). */
  mrAccess?: number;
  /** Give the QP a shared receive queue. */
  srq?: boolean;
  sqSigAll?: boolean;
  maxUnackedPsns?: number;
  /** IP MTU of the fictitious link (default 4200). */
  linkMtu?: number;
  /** The device's congestion control (default off). */
  congestion?: CongestionConfig;
  /**
   * The remote responder's end-to-end credits as the QP knows them at start. `none` (default): the
   * remote is modelled on rxe, whose responder sends credit code 31 on every ACK, and the QP starts as
   * if it had heard one already, so a dialogue may have several messages in flight before its first
   * ACK. `counted`: the QP starts as a fresh one does, with no credits: one message that takes a
   * receive WQE until an ACK brings a count (IBTA vol. 1 §9.7.7.2).
   */
  peerCredits?: 'none' | 'counted';
}

export interface ScriptedPeer {
  clock: VirtualClock;
  driver: RecordingDriver;
  dev: Device;
  pd: ProtectionDomain;
  cq: CompletionQueue;
  qp: QueuePair;
  srq: SharedReceiveQueue | null;
  /** Registered memory (`mr` covers all of `buf`). */
  mr: MemoryRegion;
  buf: Uint8Array;
  /** Path MTU in bytes. */
  mtu: number;
  /** The scripted QP's first send PSN and the remote's first PSN (our ePSN at start). */
  sqPsn: number;
  rqPsn: number;
  local: Endpoint;
  remote: Endpoint;
  /** Builds the frame the remote would send for `t` (addresses, UDP, ICRC filled in). */
  frame(t: InjectSpec): Uint8Array;
  /** Delivers one or more remote packets to the stack and runs every event due now. */
  inject(...ts: InjectSpec[]): void;
  /** Delivers raw frames (e.g. corrupted ones) and runs every event due now. */
  injectFrames(...frames: Uint8Array[]): void;
  /** Frames the stack sent since the last call, decoded (each must decode cleanly, with a good ICRC). */
  sent(): Sent[];
  /** `sent()` as short strings, e.g. `RC_ACKNOWLEDGE 100 ACK/31 msn=1`. */
  sentText(): string[];
  /** Runs the virtual clock `ns` forward (events due in between run). */
  advance(ns: number): void;
  /** Completions from the CQ (send and receive share it). */
  completions(): WorkCompletion[];
  /** Registers another buffer in the QP's PD (or `pd`). */
  reg(size: number, access: number, pd?: ProtectionDomain): { mr: MemoryRegion; buf: Uint8Array };
  /** Posts one receive WQE over `len` bytes of `buf` from `off`. */
  postRecv(wrId: number, off: number, len: number): void;
  /** Puts the QP back to RTS from any state (RESET, then the same connect as at start). */
  reconnect(): void;
}

/** Bytes 0, 1, 2, ... (mod 251) starting at `seed`: recognisable payloads. */
export function pattern(len: number, seed = 0): Uint8Array {
  const b = new Uint8Array(len);
  for (let i = 0; i < len; i++) b[i] = (seed + i) % 251;
  return b;
}

export function summarize(frame: Uint8Array): Sent {
  const d = decodeFrame(frame);
  if (!d.roce) throw new Error('the stack sent a frame that is not RoCE');
  if (d.error !== null) throw new Error(`the stack sent a frame that does not decode: ${d.error.code}: ${d.error.message}`);
  if (d.icrcOk !== true) throw new Error('the stack sent a frame with a bad ICRC');
  const bth = d.bth;
  const info = d.info;
  if (bth === null || info === undefined) throw new Error('the stack sent a frame without a BTH');
  const s: Sent = {
    op: info.name,
    opcode: bth.opcode,
    psn: bth.psn,
    destQp: bth.destQp,
    ackReq: bth.ackReq,
    payload: frame.slice(d.payloadOff, d.payloadOff + d.payloadLength),
    pkt: d,
    frame,
  };
  if (d.aeth !== null) {
    const syn = decodeSyndrome(d.aeth.syndrome);
    s.aeth = { kind: syn.kind, value: syn.value, syndrome: d.aeth.syndrome, msn: d.aeth.msn };
  }
  if (d.reth !== null) s.reth = { va: d.reth.va, rkey: d.reth.rkey, len: d.reth.dmaLength };
  if (d.atomicEth !== null) s.atomic = { va: d.atomicEth.va, rkey: d.atomicEth.rkey, swapAdd: d.atomicEth.swapAdd, compare: d.atomicEth.compare };
  if (d.atomicAckEth !== null) s.origData = d.atomicAckEth.origData;
  if (d.immDt !== null) s.imm = d.immDt.value;
  if (d.ieth !== null) s.invRkey = d.ieth.rkey;
  if (d.deth !== null) s.deth = { qkey: d.deth.qkey, srcQp: d.deth.srcQp };
  return s;
}

export function sentText(s: Sent): string {
  const parts = [s.op, String(s.psn)];
  if (s.ackReq) parts.push('A');
  if (s.aeth) parts.push(`${s.aeth.kind}/${s.aeth.value}`, `msn=${s.aeth.msn}`);
  if (s.reth) parts.push(`va=+0x${s.reth.va.toString(16)}`, `len=${s.reth.len}`);
  if (s.payload.length > 0) parts.push(`data=${s.payload.length}`);
  return parts.join(' ');
}

export function scriptedPeer(o: ScriptedPeerOptions = {}): ScriptedPeer {
  const clock = new VirtualClock(1_000_000);
  const driver = new RecordingDriver(LOCAL_MAC, o.linkMtu ?? 4200);
  const dev = new Device({
    driver,
    clock,
    ipv4: [LOCAL_IP],
    neighbors: { [PEER_IP]: PEER_MAC },
    name: 'scripted',
    ...(o.maxUnackedPsns !== undefined ? { maxUnackedPsns: o.maxUnackedPsns } : {}),
    ...(o.congestion !== undefined ? { congestion: o.congestion } : {}),
    ...(o.allocation !== undefined ? { allocation: o.allocation } : {}),
  });
  const pd = dev.allocPd();
  const cq = dev.createCq(1 << 16);
  const buf = new Uint8Array(o.bufSize ?? 64 * 1024);
  const mr = dev.regMr(pd, buf, o.mrAccess ?? Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
  const srq = o.srq === true ? dev.createSrq(pd, { maxWr: 1024 }) : null;
  const qpType = o.qpType ?? QpType.RC;
  const qp = dev.createQp(pd, {
    qpType,
    sendCq: cq,
    recvCq: cq,
    cap: { maxSendWr: 4096, maxRecvWr: 4096 },
    ...(srq !== null ? { srq } : {}),
    ...(o.sqSigAll !== undefined ? { sqSigAll: o.sqSigAll } : {}),
  });
  const pathMtu: Mtu = o.pathMtu ?? 1;
  const sqPsn = o.sqPsn ?? 5000;
  const rqPsn = o.rqPsn ?? 1000;
  const local = endpointOf(dev, qp, sqPsn);
  const remote: Endpoint = { qpn: PEER_QPN, psn: rqPsn, gid: ipv6FromString(PEER_GID), mac: PEER_MAC };
  const copt: ConnectOptions = {
    pathMtu,
    timeout: o.timeout ?? 14,
    retryCnt: o.retryCnt ?? 7,
    rnrRetry: o.rnrRetry ?? 7,
    minRnrTimer: o.minRnrTimer ?? 12,
    maxRdAtomic: o.maxRdAtomic ?? 16,
    maxDestRdAtomic: o.maxDestRdAtomic ?? 16,
    accessFlags: o.qpAccess ?? Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC,
    qkey: o.qkey ?? 0x11111111,
  };
  const connect = (): void => {
    connectQp(qp, local, remote, copt);
    if ((o.peerCredits ?? 'none') === 'none') qp.req.unlimitedCredit = true;
  };
  connect();
  clock.runUntil(clock.now());
  driver.tx.length = 0;

  let taken = 0;
  const runNow = (): void => {
    clock.runUntil(clock.now());
  };
  const frame = (t: InjectSpec): Uint8Array => {
    const { bth, ...rest } = t;
    return buildRoceV2Frame({
      ...rest,
      bth: { ...bth, destQp: bth.destQp ?? qp.qpNum },
      eth: { src: PEER_MAC, dst: LOCAL_MAC },
      ip: { version: 4, src: PEER_IP, dst: LOCAL_IP },
      udp: { srcPort: PEER_SPORT },
    });
  };
  const h: ScriptedPeer = {
    clock,
    driver,
    dev,
    pd,
    cq,
    qp,
    srq,
    mr,
    buf,
    mtu: mtuBytes(pathMtu),
    sqPsn,
    rqPsn,
    local,
    remote,
    frame,
    inject(...ts) {
      driver.deliver(ts.map(frame));
      runNow();
    },
    injectFrames(...frames) {
      driver.deliver(frames);
      runNow();
    },
    sent() {
      runNow();
      const out = driver.tx.slice(taken).map((f) => {
        const s = summarize(f);
        // Everything the QP sends goes to the peer, from the local address.
        const ip = s.pkt.ipv4;
        if (ip === null || ipv4ToString(ip.src) !== LOCAL_IP || ipv4ToString(ip.dst) !== PEER_IP)
          throw new Error('the stack sent a frame with wrong IP addresses');
        if (s.pkt.eth?.dst !== PEER_MAC || s.pkt.eth.src !== LOCAL_MAC) throw new Error('the stack sent a frame with wrong MAC addresses');
        return s;
      });
      taken = driver.tx.length;
      return out;
    },
    sentText() {
      return h.sent().map(sentText);
    },
    advance(ns) {
      clock.runUntil(clock.now() + ns);
    },
    completions() {
      return cq.poll(1 << 16);
    },
    reg(size, access, inPd = pd) {
      const b = new Uint8Array(size);
      return { mr: dev.regMr(inPd, b, access), buf: b };
    },
    postRecv(wrId, off, len) {
      const wr = { wrId, sgList: [mr.sge(off, len)] };
      if (srq !== null) srq.postRecv(wr);
      else qp.postRecv(wr);
    },
    reconnect() {
      connect();
      runNow();
    },
  };
  return h;
}

/** The PSN `n` after `psn` (mod 2^24). */
export function psnPlus(psn: number, n: number): number {
  return (psn + n) & 0xffffff;
}

/** The opcode number of a table name, e.g. `op('RC_SEND_ONLY')` = 0x04. Throws on a typo. */
export function op(name: string): number {
  const e = opcodeByName(name);
  if (e === undefined) throw new Error(`no opcode named ${name}`);
  return e.opcode;
}
