/**
 * `roce audit --live-checks`: two checks on one live RC connection to the peer, each measured
 * from what this side's own QP sees (its completions and its retransmissions), so they work over
 * any driver without watching the peer's answers on the wire.
 *
 * Injection (ReDMArk A1): one RDMA WRITE with the peer's QPN and the PSN it expects next, sent
 * from another source IP and MAC than the connection's. This side's QP starts one PSN later (the
 * connection is set up so: the peer is told PSN P, the QP sends from P+1), so its first request
 * only lands if the peer took the injected one. Acknowledged at once: the peer accepted the
 * injection. Not acknowledged within two of the QP's local ACK timeouts (the peer answers a
 * sequence NAK for P, which names nothing this QP sent, then drops the resends): this side sends
 * PSN P itself, from its own address, and the connection goes on: the peer rejected it.
 *
 * Wrong R_Key (ReDMArk A2): one RDMA WRITE from this QP, at the right QPN and PSN, with an R_Key
 * the peer never gave (its own key with the key byte changed). IBTA: NAK remote access error and
 * the responder's QP to the error state (§9.9.3, class C; C9-88). Then one valid WRITE on the same
 * connection (this QP reset and connected again at the PSN the peer expects): answered means the
 * peer's QP is alive, no answer within the QP's retry bound means it is in the error state.
 *
 * Every wait ends by the QP's own timers: its retry counter completes a request nobody answers
 * within (retry_cnt + 1) local ACK timeouts, and the no-progress bound of those timers
 * (apps/host/no-progress-bound.ts) backs that up.
 */
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import { QpState } from '../../stack/qp-type-and-state';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WC_STATUS_NAMES, WcStatus, type WorkCompletion } from '../../stack/work-completion';
import type { Path } from '../../stack/address';
import { buildRoceV2Frame } from '../../packets/build';
import { Opcode } from '../../packets/opcodes';
import { ipv6ToString } from '../../packets/bytes';
import { psnAdd } from '../../base/psn';
import { noProgressBound } from '../host/no-progress-bound';
import { internalError } from '../../base/programming-error';

/** What a check measured. */
export const LiveOutcome = {
  /** The peer took the frame (injection: it moved its expected PSN; wrong R_Key: the WRITE completed). */
  ACCEPTED: 'accepted',
  /** The peer refused the frame and the connection went on. */
  REJECTED: 'rejected',
  /** The peer's QP went to the error state (it answered nothing more on the connection). */
  QP_ERROR: 'qp-error',
  /** Nothing came back within the QP's retry bound: the outcome is unknown. */
  NO_ANSWER: 'no-answer',
  /** The check did not run (an earlier check ended the connection). */
  NOT_RUN: 'not-run',
} as const;
export type LiveOutcome = (typeof LiveOutcome)[keyof typeof LiveOutcome];

/** What IBTA and ReDMArk say of each check, for the report. */
export const LIVE_CHECK_EXPECTED = {
  injection:
    'ReDMArk A1: an off-path host that knows the QPN and the next PSN can inject into a connection. RoCE v2 authenticates nothing; rxe drops a request ' +
    "whose IP addresses are not the connected QP's (rxe_recv.c check_addr()), so only a spoofed source address gets in there.",
  wrongRkey:
    "ReDMArk A2: one request with a wrong R_Key tears a connection down. IBTA: NAK remote access error, the responder's QP to the error state (§9.9.3 class C, C9-88).",
} as const;

export interface InjectionResult {
  outcome: LiveOutcome;
  /** The PSN the injected frame carried (the peer's expected PSN). */
  psn: number;
  /** The source address it came from (not the connection's). */
  spoofedIp: string;
  spoofedMac: string;
  /** How the outcome was seen. */
  detail: string;
  expected: string;
}

export interface WrongRkeyResult {
  outcome: LiveOutcome;
  psn: number;
  /** The R_Key the WRITE named, and the one the peer gave. */
  rkey: number;
  realRkey: number;
  /** The completion status of the wrong-key WRITE (REM_ACCESS_ERR: the peer's NAK remote access error), or null when not run. */
  answer: string | null;
  /** The peer's QP afterwards: alive (a valid request was answered), error (it was not), or unknown. */
  peerQp: 'alive' | 'error' | 'unknown';
  detail: string;
  expected: string;
}

/** The connected QP the checks run on, and what the peer handed out for it. */
export interface LiveTarget {
  dev: Device;
  qp: QueuePair;
  mr: MemoryRegion;
  sendCq: CompletionQueue;
  /** The peer's QPN, its region's R_Key and an address in it. */
  remoteQpn: number;
  rkey: number;
  vaddr: bigint;
  /** The PSN the peer expects next: the one it was told; the QP sends from the next one. */
  peerPsn: number;
  idle: () => Promise<void>;
}

/** Bytes each WRITE of the checks moves. */
const LEN = 64;
const PAYLOAD = new Uint8Array(LEN).fill(0x5a);
/** Local ACK timeouts the injection check waits for its own request's ACK before it fills the gap itself. */
const INJECTION_TIMEOUTS = 2;

const hex2 = (b: number): string => b.toString(16).padStart(2, '0');
/** A MAC (48-bit integer) as text. */
const macText = (m: number): string => Array.from({ length: 6 }, (_, i) => hex2(Math.floor(m / 2 ** (8 * (5 - i))) % 256)).join(':');
const ipText = (b: Uint8Array): string => (b.length === 4 ? Array.from(b).join('.') : ipv6ToString(b));

/**
 * Another address on the connection's own subnet: the source address with its last byte changed
 * (not to the peer's, nor 0 or 255), and the source MAC with its last byte changed (not to the
 * peer's). A frame from there reaches the peer as the connection's would; only its source differs.
 */
export function spoofedSource(path: Path): { ip: Uint8Array; mac: number } {
  const last = path.srcIp.length - 1;
  const ip = path.srcIp.slice();
  const mine = path.srcIp[last] as number;
  const sameNet = path.dstIp.length === ip.length && path.dstIp.subarray(0, last).every((b, i) => b === ip[i]);
  for (let k = 1; k < 256; k++) {
    const b = (mine + k) & 0xff;
    if (b === 0 || (b === 0xff && ip.length === 4) || (sameNet && b === path.dstIp[last])) continue;
    ip[last] = b;
    break;
  }
  let mac = path.srcMac - (path.srcMac % 256) + ((path.srcMac + 1) % 256);
  if (mac === path.dstMac) mac = path.srcMac - (path.srcMac % 256) + ((path.srcMac + 2) % 256);
  return { ip, mac };
}

/** One RDMA WRITE ONLY of the checks' 64 bytes to the peer's QP at `psn`, from `src` (default: the connection's own address). */
function writeFrame(t: LiveTarget, path: Path, psn: number, rkey: number, src?: { ip: Uint8Array; mac: number }): Uint8Array {
  const ipSrc = src?.ip ?? path.srcIp;
  return buildRoceV2Frame({
    eth: { src: src?.mac ?? path.srcMac, dst: path.dstMac, vlan: path.vlan },
    ip:
      path.ipVersion === 4
        ? {
            version: 4,
            src: ipText(ipSrc),
            dst: ipText(path.dstIp),
            dscp: path.trafficClass >>> 2,
            ecn: path.trafficClass & 3,
            ttl: path.hopLimit,
            dontFragment: true,
          }
        : { version: 6, src: ipSrc, dst: path.dstIp, trafficClass: path.trafficClass, flowLabel: path.flowLabel, hopLimit: path.hopLimit },
    udp: { srcPort: t.qp.udpSport },
    bth: { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: t.remoteQpn, psn, ackReq: true },
    reth: { va: t.vaddr, rkey, dmaLength: LEN },
    payload: PAYLOAD,
  });
}

/** The completions of the target's send CQ, gathered by work request ID while the checks wait. */
class Completions {
  private readonly seen = new Map<bigint, WorkCompletion>();
  constructor(private readonly cq: CompletionQueue) {}
  get(wrId: bigint): WorkCompletion | undefined {
    for (const wc of this.cq.poll(64)) this.seen.set(wc.wrId, wc);
    return this.seen.get(wrId);
  }
}

/** The QP's local ACK timeout in ns (IBTA vol. 1 §9.7.6.1.3: 4.096 µs × 2^timeout). */
function ackTimeoutNs(qp: QueuePair): number {
  return 4096 * 2 ** qp.attr.timeout;
}

/** The longest any wait of a check may take on the device's clock: the no-progress bound of the QP's timers. */
function boundNs(qp: QueuePair): number {
  const b = noProgressBound({ timeout: qp.attr.timeout, retryCnt: qp.attr.retryCnt, rnrRetry: qp.attr.rnrRetry, minRnrTimer: qp.attr.minRnrTimer });
  return b.ms * 1e6;
}

/** Waits until `done()` or until the bound from now has passed on the device's clock; true when `done()`. */
async function waitUntil(t: LiveTarget, done: () => boolean): Promise<boolean> {
  const end = t.dev.clock.now() + boundNs(t.qp);
  while (!done()) {
    if (t.dev.clock.now() > end) return false;
    await t.idle();
  }
  return true;
}

function postWrite(t: LiveTarget, wrId: number, rkey: number): void {
  t.qp.postSend({
    wrId,
    opcode: WrOpcode.RDMA_WRITE,
    sgList: [t.mr.sge(0, LEN)],
    sendFlags: SendFlags.SIGNALED,
    rdma: { remoteAddr: t.vaddr, rkey },
  });
}

const statusName = (wc: WorkCompletion): string => WC_STATUS_NAMES[wc.status] ?? String(wc.status);

const WR_OWN = 1;
const WR_WRONG_KEY = 2;
const WR_PROBE = 3;

/**
 * The injection check (see the file comment). On return the connection is at PSN `peerPsn + 2` on
 * both ends when the outcome is accepted or rejected; otherwise it is broken.
 */
export async function injectionCheck(t: LiveTarget): Promise<InjectionResult> {
  const path = t.qp.path;
  if (path === null || t.qp.state !== QpState.RTS) throw internalError('injection check on a QP that is not connected');
  const spoof = spoofedSource(path);
  const base = { psn: t.peerPsn, spoofedIp: ipText(spoof.ip), spoofedMac: macText(spoof.mac), expected: LIVE_CHECK_EXPECTED.injection };
  const comps = new Completions(t.sendCq);
  const own = BigInt(WR_OWN);
  t.dev.driver.txBurst([writeFrame(t, path, t.peerPsn, t.rkey, spoof)]);
  const timeoutsBefore = t.qp.counters.local_ack_timeout_err;
  postWrite(t, WR_OWN, t.rkey);
  const ackNs = ackTimeoutNs(t.qp);
  await waitUntil(t, () => comps.get(own) !== undefined || t.qp.counters.local_ack_timeout_err - timeoutsBefore >= INJECTION_TIMEOUTS);
  const first = comps.get(own);
  if (first !== undefined) {
    if (first.status === WcStatus.SUCCESS)
      return {
        ...base,
        outcome: LiveOutcome.ACCEPTED,
        detail: `this side's request at PSN ${psnAdd(t.peerPsn, 1)}, sent after it, was acknowledged at once: the peer had taken the injected PSN ${t.peerPsn}`,
      };
    return {
      ...base,
      outcome: LiveOutcome.QP_ERROR,
      detail: `this side's request sent after it completed with ${statusName(first)}: the connection is broken`,
    };
  }
  // Not taken: this side sends PSN P itself, from its own address, and its request at P+1 then goes through on a resend.
  t.dev.driver.txBurst([writeFrame(t, path, t.peerPsn, t.rkey)]);
  await waitUntil(t, () => comps.get(own) !== undefined);
  const after = comps.get(own);
  const waited = `${INJECTION_TIMEOUTS} local ACK timeouts (${(ackNs / 1e6).toFixed(1)} ms each)`;
  if (after === undefined)
    return {
      ...base,
      outcome: LiveOutcome.NO_ANSWER,
      detail: `no answer to the request at PSN ${psnAdd(t.peerPsn, 1)}, even once PSN ${t.peerPsn} came from the connection's own address`,
    };
  if (after.status !== WcStatus.SUCCESS)
    return {
      ...base,
      outcome: after.status === WcStatus.RETRY_EXC_ERR ? LiveOutcome.NO_ANSWER : LiveOutcome.QP_ERROR,
      detail: `the request at PSN ${psnAdd(t.peerPsn, 1)} ended with ${statusName(after)} after PSN ${t.peerPsn} came from the connection's own address`,
    };
  return {
    ...base,
    outcome: LiveOutcome.REJECTED,
    detail: `the request at PSN ${psnAdd(t.peerPsn, 1)} went unacknowledged for ${waited}; once PSN ${t.peerPsn} came from the connection's own address it was acknowledged: the peer had not taken the injected frame`,
  };
}

/**
 * The wrong-R_Key check (see the file comment), on a connection whose peer expects `psn` next and
 * whose QP sends that PSN next.
 */
export async function wrongRkeyCheck(t: LiveTarget, psn: number): Promise<WrongRkeyResult> {
  const qp = t.qp;
  // The peer's own key with its key byte changed: the frame a guess of the byte (ReDMArk) sends.
  const wrong = (t.rkey ^ 0xff) >>> 0;
  const base = { psn, rkey: wrong, realRkey: t.rkey, expected: LIVE_CHECK_EXPECTED.wrongRkey };
  const comps = new Completions(t.sendCq);
  postWrite(t, WR_WRONG_KEY, wrong);
  await waitUntil(t, () => comps.get(BigInt(WR_WRONG_KEY)) !== undefined);
  const answer = comps.get(BigInt(WR_WRONG_KEY));
  const answerText = answer === undefined ? null : statusName(answer);
  // The probe: one valid WRITE at the PSN the peer expects next (a refused request does not move it;
  // one it took did, and this QP's own next PSN is then the right one).
  if (qp.state !== QpState.RTS) {
    const a = { ...qp.attr };
    if (a.ahAttr === null) throw internalError('wrong-R_Key check on a QP without an address vector');
    qp.modify({ qpState: QpState.RESET });
    qp.modify({ qpState: QpState.INIT, pkeyIndex: a.pkeyIndex, portNum: a.portNum, qpAccessFlags: a.qpAccessFlags });
    qp.modify({
      qpState: QpState.RTR,
      ahAttr: a.ahAttr,
      pathMtu: a.pathMtu,
      destQpNum: a.destQpNum,
      rqPsn: a.rqPsn,
      maxDestRdAtomic: a.maxDestRdAtomic,
      minRnrTimer: a.minRnrTimer,
    });
    qp.modify({ qpState: QpState.RTS, sqPsn: psn, timeout: a.timeout, retryCnt: a.retryCnt, rnrRetry: a.rnrRetry, maxRdAtomic: a.maxRdAtomic });
  }
  postWrite(t, WR_PROBE, t.rkey);
  await waitUntil(t, () => comps.get(BigInt(WR_PROBE)) !== undefined);
  const probe = comps.get(BigInt(WR_PROBE));
  const alive = probe?.status === WcStatus.SUCCESS;
  const peerQp = alive ? 'alive' : probe?.status === WcStatus.RETRY_EXC_ERR ? 'error' : 'unknown';
  const probeText = probe === undefined ? 'no completion within the bound' : statusName(probe);
  const tail = `; a valid WRITE after it: ${alive ? 'answered (the QP is alive)' : `${probeText} (${peerQp === 'error' ? "no answer within the QP's retry bound" : 'no verdict'})`}`;
  if (answer?.status === WcStatus.SUCCESS)
    return { ...base, outcome: LiveOutcome.ACCEPTED, answer: answerText, peerQp, detail: `the WRITE with the wrong R_Key completed${tail}` };
  const nak = answer?.status === WcStatus.REM_ACCESS_ERR;
  const said = nak ? 'answered NAK remote access error (REM_ACCESS_ERR)' : `ended with ${answerText ?? 'nothing'}`;
  const outcome = alive ? LiveOutcome.REJECTED : peerQp === 'error' && nak ? LiveOutcome.QP_ERROR : LiveOutcome.NO_ANSWER;
  return { ...base, outcome, answer: answerText, peerQp, detail: `the WRITE with the wrong R_Key ${said}${tail}` };
}
