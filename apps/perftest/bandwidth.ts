/**
 * The measured loops of the bandwidth tests (ib_write_bw, ib_read_bw,
 * ib_send_bw, ib_atomic_bw): the client keeps up to tx depth requests
 * outstanding (run_iter_bw); the server of the SEND test counts receives
 * (run_iter_bw_server); the server of a one-sided test does nothing and takes
 * the client's report. Each runs for a number of iterations, or in duration
 * mode (perftest -D, -f) for a time, measured inside a window.
 */
import { PerftestVerb as Verb } from '../oob/perftest-session';
import { PerftestError, PerftestErrorCode } from './perftest-error';
import { Measurement, MeasuringWindow } from './measurement';
import { pattern } from './verification';
import { progressMarkAll } from './completion-waits';
import type { PerftestSide } from './perftest-side';
import { SendCounts } from './send-counts';
import { runWarmUp } from './warm-up';

/** Runs this side's part of a bandwidth test. */
export async function runBandwidth(side: PerftestSide): Promise<void> {
  const { rc } = side;
  // -b: both sides run the client's loop (run_iter_bw), or for SEND both send and receive (run_iter_bi).
  if (rc.runInfinitely && rc.role === 'client') await runClientInfinitely(side);
  else if (rc.duplex) await (rc.verb === Verb.SEND ? runBidirectionalSend(side) : runClient(side));
  else if (rc.role === 'client') await (rc.durationS > 0 ? runClientForDuration(side) : runClient(side));
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

/**
 * run_iter_bw: each QP keeps up to tx depth requests outstanding, every cq_mod-th (and each QP's
 * last) signaled; with -q the QPs take turns posting, and each moves `iters` messages.
 */
async function runClient(side: PerftestSide): Promise<void> {
  const { rc, measured } = side;
  const n = new SendCounts(rc.qps);
  const total = rc.iters * rc.qps;
  const clock = side.dev.clock;
  if (rc.warmUp) side.warmUp = await runWarmUp(side);
  if (rc.measurePeak) measured.keepPeak();
  measured.started = clock.now();
  while (n.totalCompleted < total) {
    n.post(side, rc.iters, (k) => (k + 1) % rc.cqMod === 0 || k === rc.iters - 1);
    await n.reap(side);
  }
  measured.finished = clock.now();
  measured.messages = total;
  reportMeasured(side);
}

/**
 * Duration mode (perftest -D, run_iter_bw with a duration): requests go out for `durationS`; the
 * figures count the messages completed between `marginS` after the start and `marginS` before
 * the end. Then posting stops, and what is outstanding completes (every message posted lands).
 */
async function runClientForDuration(side: PerftestSide): Promise<void> {
  const { rc } = side;
  const clock = side.dev.clock;
  if (rc.warmUp) side.warmUp = await runWarmUp(side);
  const window = new MeasuringWindow(clock.now(), rc.durationS, rc.marginS);
  const n = new SendCounts(rc.qps);
  while (window.note(clock.now(), n.totalCompleted)) {
    n.post(side, Infinity, (k) => (k + 1) % rc.cqMod === 0); // every cq_mod-th signaled
    await n.reap(side);
  }
  n.signalTails(side);
  while (n.totalCompleted < n.totalPosted) await n.reap(side);
  side.measured.posted = n.totalPosted;
  takeWindow(side, window, 'the run ended before its measuring window');
  reportMeasured(side);
}

/**
 * --run_infinitely (run_iter_bw_infinitely): requests go out until `stop` says so (the CLI's
 * SIGINT or SIGTERM); every period of `durationS` seconds the messages completed in it are
 * reported through `onPeriod` (print_bw_infinite_mode: the count since the last report, over the
 * time since it). Then posting stops, what is outstanding completes, and the run's report covers
 * every message of it. A lost peer ends the run as any wait does: the QP's retries run out, or no
 * progress within the bound of its timers.
 */
async function runClientInfinitely(side: PerftestSide): Promise<void> {
  const { rc, measured } = side;
  const clock = side.dev.clock;
  const stop = side.cfg.stop ?? ((): boolean => false);
  const n = new SendCounts(rc.qps);
  const periodNs = rc.durationS * 1e9;
  measured.started = clock.now();
  let period = new Measurement();
  period.started = measured.started;
  let countAtStart = 0;
  while (!stop()) {
    n.post(side, Infinity, (k) => (k + 1) % rc.cqMod === 0);
    await n.reap(side);
    const now = clock.now();
    if (now - period.started >= periodNs) {
      period.finished = now;
      period.messages = n.totalCompleted - countAtStart;
      side.cfg.onPeriod?.(period.bwReport(rc.size, side.cfg.reportGbits === true));
      countAtStart = n.totalCompleted;
      period = new Measurement();
      period.started = now;
    }
  }
  n.signalTails(side);
  while (n.totalCompleted < n.totalPosted) await n.reap(side);
  measured.finished = clock.now();
  measured.messages = n.totalCompleted;
  measured.posted = n.totalPosted;
  reportMeasured(side);
}

/** run_iter_bw_server: count receives (iters on each QP), re-posting each buffer while more messages are due on its QP. */
async function runSendServer(side: PerftestSide): Promise<void> {
  const { rc, waits, measured } = side;
  const { qps, mr, recvCq: cq, layout, verifier } = side.resources();
  let received = 0;
  const total = rc.iters * rc.qps;
  const receivedOn = new Array<number>(rc.qps).fill(0);
  const postedOn = new Array<number>(rc.qps).fill(rc.rxDepth);
  const expected = rc.verify ? Array.from({ length: layout.slots }, (_, s) => pattern(s, rc.size)) : [];
  while (received < total) {
    for (const wc of await waits.pollSome(cq, `SEND #${received}`)) {
      waits.check(wc, 'receive');
      if (received === 0) measured.started = side.dev.clock.now();
      const id = Number(wc.wrId);
      const q = id % rc.qps;
      const j = Math.floor(id / rc.qps);
      const n = receivedOn[q] as number;
      if (rc.verify)
        verifier.check(
          layout.recvPayload(j, q),
          expected[layout.slotIndex(n)] as Uint8Array,
          wc.byteLen - layout.grh,
          `${rc.qps > 1 ? `QP ${q} ` : ''}SEND #${n}`,
        );
      receivedOn[q] = n + 1;
      received++;
      if ((postedOn[q] as number) < rc.iters) {
        (qps[q] as (typeof qps)[number]).postRecv({ wrId: id, sgList: [mr.sge(layout.recvOffset(j, q), layout.recvLength)] });
        postedOn[q] = (postedOn[q] as number) + 1;
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
  const { qps, mr, recvCq: cq, layout, verifier } = side.resources();
  const clock = side.dev.clock;
  const expected = rc.verify ? Array.from({ length: layout.slots }, (_, s) => pattern(s, rc.size)) : [];
  let received = 0;
  const receivedOn = new Array<number>(rc.qps).fill(0);
  let window: MeasuringWindow | null = null; // opens with the first SEND
  let lastAt = 0;
  let deadline = Date.now() + waits.runTimeoutMs;
  let mark = progressMarkAll(qps);
  for (;;) {
    const wcs = cq.poll(64);
    const now = clock.now();
    window?.note(now, received);
    if (wcs.length === 0) {
      // The client decides the end: its closing message comes after its last SEND completed.
      if (side.peerDone()) break;
      waits.assertAlive(`SEND #${received}`);
      const m = progressMarkAll(qps);
      if (m !== mark) {
        mark = m;
        deadline = Date.now() + waits.runTimeoutMs;
      }
      if (Date.now() > deadline)
        throw waits.timeout(`no progress within ${waits.runTimeoutMs} ms (${waits.bound.why}): no SEND arrived (received ${received})`);
      await waits.idle();
      continue;
    }
    deadline = Date.now() + waits.runTimeoutMs;
    window ??= new MeasuringWindow(now, rc.durationS, rc.marginS);
    for (const wc of wcs) {
      waits.check(wc, 'receive');
      const id = Number(wc.wrId);
      const q = id % rc.qps;
      const j = Math.floor(id / rc.qps);
      const n = receivedOn[q] as number;
      receivedOn[q] = n + 1;
      if (rc.verify)
        verifier.check(
          layout.recvPayload(j, q),
          expected[layout.slotIndex(n)] as Uint8Array,
          wc.byteLen - layout.grh,
          `${rc.qps > 1 ? `QP ${q} ` : ''}SEND #${n}`,
        );
      received++;
      lastAt = now;
      (qps[q] as (typeof qps)[number]).postRecv({ wrId: id, sgList: [mr.sge(layout.recvOffset(j, q), layout.recvLength)] });
    }
  }
  // The client's run may end a little before this side's clock reaches the window's end (it started first).
  window?.close(lastAt, received);
  takeWindow(side, window, 'the client stopped before the measuring window began');
}

/**
 * run_iter_bi: both sides SEND and receive at once. Each QP keeps up to tx depth SENDs
 * outstanding and re-posts each receive while more messages are due on it; the run ends when
 * every QP has sent and received `iters` messages. The figures are this side's SENDs.
 */
async function runBidirectionalSend(side: PerftestSide): Promise<void> {
  const { rc, waits, measured } = side;
  const { qps, mr, sendCq, recvCq, layout, verifier } = side.resources();
  const total = rc.iters * rc.qps;
  const n = new SendCounts(rc.qps);
  const receivedOn = new Array<number>(rc.qps).fill(0);
  const recvPosted = new Array<number>(rc.qps).fill(rc.rxDepth);
  const expected = rc.verify ? Array.from({ length: layout.slots }, (_, s) => pattern(s, rc.size)) : [];
  let received = 0;
  const clock = side.dev.clock;
  if (rc.measurePeak) measured.keepPeak();
  measured.started = clock.now();
  while (n.totalCompleted < total || received < total) {
    n.post(side, rc.iters, (k) => (k + 1) % rc.cqMod === 0 || k === rc.iters - 1);
    const wcs = sendCq.poll(64);
    for (const wc of wcs) {
      waits.check(wc, 'SEND');
      n.complete(Number(wc.wrId), rc.qps);
    }
    const rwcs = received < total ? recvCq.poll(64) : [];
    for (const wc of rwcs) {
      waits.check(wc, 'receive');
      const id = Number(wc.wrId);
      const q = id % rc.qps;
      const j = Math.floor(id / rc.qps);
      const n = receivedOn[q] as number;
      if (rc.verify)
        verifier.check(
          layout.recvPayload(j, q),
          expected[layout.slotIndex(n)] as Uint8Array,
          wc.byteLen - layout.grh,
          `${rc.qps > 1 ? `QP ${q} ` : ''}SEND #${n} from the peer`,
        );
      receivedOn[q] = n + 1;
      received++;
      if ((recvPosted[q] as number) < rc.iters) {
        (qps[q] as (typeof qps)[number]).postRecv({ wrId: id, sgList: [mr.sge(layout.recvOffset(j, q), layout.recvLength)] });
        recvPosted[q] = (recvPosted[q] as number) + 1;
      }
    }
    if (wcs.length === 0 && rwcs.length === 0)
      await waits.waitFor(
        () => sendCq.size > 0 || recvCq.size > 0,
        `${n.totalCompleted < total ? `the completion of SEND #${n.totalCompleted}` : ''}${n.totalCompleted < total && received < total ? ' and ' : ''}${received < total ? `the peer's SEND #${received}` : ''}`,
      );
  }
  measured.finished = clock.now();
  measured.messages = total;
  reportMeasured(side);
}
