/**
 * The measured loops of the bandwidth tests (ib_write_bw, ib_read_bw,
 * ib_send_bw, ib_atomic_bw): the client keeps up to tx depth requests
 * outstanding (run_iter_bw); the server of the SEND test counts receives
 * (run_iter_bw_server); the server of a one-sided test does nothing and takes
 * the client's report. Each runs for a number of iterations, or in duration
 * mode (perftest -D, -f) for a time, measured inside a window.
 */
import type { SendWr } from '../../stack/work-request';
import { PerftestVerb as Verb } from '../oob/perftest-session';
import { PerftestError, PerftestErrorCode } from './perftest-error';
import { MeasuringWindow } from './measurement';
import { pattern } from './verification';
import { progressMark } from './completion-waits';
import type { PerftestSide } from './perftest-side';

/** Runs this side's part of a bandwidth test. */
export async function runBandwidth(side: PerftestSide): Promise<void> {
  const { rc } = side;
  if (rc.role === 'client') await (rc.durationS > 0 ? runClientForDuration(side) : runClient(side));
  else if (rc.verb === Verb.SEND) await (rc.durationS > 0 ? runSendServerForDuration(side) : runSendServer(side));
}

/** The bandwidth report of what the side measured, as perftest sends it. */
function reportMeasured(side: PerftestSide): void {
  side.myReport = side.measured.bwReport(side.rc.size, side.cfg.reportGbits === true);
}

/** The figures of a duration-mode run: what its measuring window saw. */
function takeWindow(side: PerftestSide, w: MeasuringWindow | null, missing: string): void {
  if (!side.measured.takeWindow(w)) throw new PerftestError(PerftestErrorCode.TIMEOUT, `${side.binary}: ${missing}`, 'completion');
}

/** run_iter_bw: keep up to tx depth requests outstanding, every cq_mod-th (and the last) signaled. */
async function runClient(side: PerftestSide): Promise<void> {
  const { rc, waits, measured } = side;
  const { qp, sendCq: cq } = side.resources();
  let posted = 0;
  let completed = 0;
  const clock = side.dev.clock;
  measured.started = clock.now();
  while (completed < rc.iters) {
    if (posted < rc.iters && posted - completed < rc.txDepth) {
      const batch: SendWr[] = [];
      while (posted < rc.iters && posted - completed < rc.txDepth) {
        const k = posted++;
        batch.push(side.sendWr(k, (k + 1) % rc.cqMod === 0 || k === rc.iters - 1));
      }
      qp.postSend(batch);
    }
    for (const wc of await waits.pollSome(cq, `the completion of ${rc.verb.toUpperCase()} #${completed}`)) {
      waits.check(wc, rc.verb.toUpperCase());
      completed = Number(wc.wrId) + 1;
    }
  }
  measured.finished = clock.now();
  measured.messages = rc.iters;
  reportMeasured(side);
}

/**
 * Duration mode (perftest -D, run_iter_bw with a duration): requests go out for `durationS`; the
 * figures count the messages completed between `marginS` after the start and `marginS` before
 * the end. Then posting stops, and what is outstanding completes (every message posted lands).
 */
async function runClientForDuration(side: PerftestSide): Promise<void> {
  const { rc, waits } = side;
  const { qp, sendCq: cq } = side.resources();
  const clock = side.dev.clock;
  const window = new MeasuringWindow(clock.now(), rc.durationS, rc.marginS);
  let posted = 0;
  let completed = 0;
  const reap = async (): Promise<void> => {
    for (const wc of await waits.pollSome(cq, `the completion of ${rc.verb.toUpperCase()} #${completed}`)) {
      waits.check(wc, rc.verb.toUpperCase());
      completed = Number(wc.wrId) + 1;
    }
  };
  while (window.note(clock.now(), completed)) {
    if (posted - completed < rc.txDepth) {
      const batch: SendWr[] = [];
      while (posted - completed < rc.txDepth) {
        const k = posted++;
        batch.push(side.sendWr(k, (k + 1) % rc.cqMod === 0)); // every cq_mod-th signaled
      }
      qp.postSend(batch);
    }
    await reap();
  }
  // The tail may be unsignaled: one more signaled request completes it (RC completes in order).
  if (completed < posted && posted % rc.cqMod !== 0) qp.postSend(side.sendWr(posted++, true));
  while (completed < posted) await reap();
  side.measured.posted = posted;
  takeWindow(side, window, 'the run ended before its measuring window');
  reportMeasured(side);
}

/** run_iter_bw_server: count receives, re-posting each buffer while more messages are due. */
async function runSendServer(side: PerftestSide): Promise<void> {
  const { rc, waits, measured } = side;
  const { qp, mr, recvCq: cq, layout, verifier } = side.resources();
  let received = 0;
  let postedTotal = rc.rxDepth;
  const expected = rc.verify ? Array.from({ length: layout.slots }, (_, s) => pattern(s, rc.size)) : [];
  while (received < rc.iters) {
    for (const wc of await waits.pollSome(cq, `SEND #${received}`)) {
      waits.check(wc, 'receive');
      if (received === 0) measured.started = side.dev.clock.now();
      const j = Number(wc.wrId);
      if (rc.verify) verifier.check(layout.recvOffset(j), expected[layout.slotIndex(received)] as Uint8Array, wc.byteLen, `SEND #${received}`);
      received++;
      if (postedTotal < rc.iters) {
        qp.postRecv({ wrId: j, sgList: [mr.sge(layout.recvOffset(j), rc.size)] });
        postedTotal++;
      }
    }
  }
  measured.finished = side.dev.clock.now();
  measured.messages = received;
}

/**
 * The send test's server in duration mode: receives (re-posting every buffer) and measures the
 * messages that arrive between `marginS` after the first one and `marginS` before the duration
 * ends. It keeps receiving after that until the client has said it is done (its closing
 * message is on the out-of-band channel), so the client's last SENDs always find a buffer.
 */
async function runSendServerForDuration(side: PerftestSide): Promise<void> {
  const { rc, waits } = side;
  const { qp, mr, recvCq: cq, layout, verifier } = side.resources();
  const clock = side.dev.clock;
  const expected = rc.verify ? Array.from({ length: layout.slots }, (_, s) => pattern(s, rc.size)) : [];
  let received = 0;
  let window: MeasuringWindow | null = null; // opens with the first SEND
  let lastAt = 0;
  let deadline = Date.now() + waits.runTimeoutMs;
  let mark = progressMark(qp);
  for (;;) {
    const wcs = cq.poll(64);
    const now = clock.now();
    window?.note(now, received);
    if (wcs.length === 0) {
      // The client decides the end: its closing message comes after its last SEND completed.
      if (side.peerDone()) break;
      waits.assertAlive(`SEND #${received}`);
      const m = progressMark(qp);
      if (m !== mark) {
        mark = m;
        deadline = Date.now() + waits.runTimeoutMs;
      }
      if (Date.now() > deadline) throw waits.timeout(`no progress within ${waits.runTimeoutMs} ms (${waits.bound.why}): no SEND arrived (received ${received})`);
      await waits.idle();
      continue;
    }
    deadline = Date.now() + waits.runTimeoutMs;
    window ??= new MeasuringWindow(now, rc.durationS, rc.marginS);
    for (const wc of wcs) {
      waits.check(wc, 'receive');
      const j = Number(wc.wrId);
      if (rc.verify) verifier.check(layout.recvOffset(j), expected[layout.slotIndex(received)] as Uint8Array, wc.byteLen, `SEND #${received}`);
      received++;
      lastAt = now;
      qp.postRecv({ wrId: j, sgList: [mr.sge(layout.recvOffset(j), rc.size)] });
    }
  }
  // The client's run may end a little before this side's clock reaches the window's end (it started first).
  window?.close(lastAt, received);
  takeWindow(side, window, 'the client stopped before the measuring window began');
}
