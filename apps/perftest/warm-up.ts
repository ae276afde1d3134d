/**
 * perftest --perform_warm_up for the write, read and atomic bandwidth clients: requests before the
 * measured loop, left out of its figures. perftest (perform_warm_up() in perftest_resources.c)
 * posts one tx depth per QP and waits for them, to warm the memory caches; a NIC needs no more.
 *
 * This stack and a peer of its own kind run JavaScript that V8 compiles while it runs: for the
 * first few hundred milliseconds of a run both ends go at about half their steady rate (measured
 * in docs/performance.md, "Short runs"), with a plateau on the way that looks settled for a few
 * hundred milliseconds. So the warm-up lasts at least MIN_NS, then goes on, in windows of
 * WINDOW_NS, until the completion rate of a window is within SETTLED of the window before, or
 * MAX_NS have passed; then everything it posted completes before the measured loop starts. Its
 * windows run on the process's own time, not the device clock: compiling is what it waits for,
 * and a simulated link's virtual time says nothing about that. The
 * requests are the measured loop's own (same sizes, buffers and remote addresses), so a peer sees
 * nothing but more of them: a real perftest server takes part without knowing.
 */
import { performance } from 'node:perf_hooks';
import type { PerftestSide } from './perftest-side';
import { SendCounts } from './send-counts';

const WINDOW_NS = 200e6;
const MIN_NS = 600e6;
const MAX_NS = 1.5e9;
/** Two windows whose rates differ by at most this share of the earlier one: the rate has settled. */
const SETTLED = 0.1;

export interface WarmUpReport {
  /** Requests sent and completed before the measured loop. */
  messages: number;
  seconds: number;
  /** True when the rate settled; false when MAX_NS ended the warm-up first. */
  settled: boolean;
}

/** Runs the warm-up of the client `side` (every request completed when it returns). */
export async function runWarmUp(side: PerftestSide): Promise<WarmUpReport> {
  const { rc } = side;
  const n = new SendCounts(rc.qps);
  const what = `warm-up ${rc.verb.toUpperCase()}`;
  const wallNs = (): number => performance.now() * 1e6;
  const t0 = wallNs();
  let windowAt = t0;
  let windowCount = 0;
  let lastRate = -1;
  let settled = false;
  for (;;) {
    n.post(side, Infinity, (k) => (k + 1) % rc.cqMod === 0);
    await n.reap(side, what);
    const now = wallNs();
    if (now - windowAt < WINDOW_NS) continue;
    const rate = (n.totalCompleted - windowCount) / (now - windowAt);
    settled = now - t0 >= MIN_NS && lastRate > 0 && Math.abs(rate - lastRate) <= SETTLED * lastRate;
    if (settled || now - t0 >= MAX_NS) break;
    lastRate = rate;
    windowAt = now;
    windowCount = n.totalCompleted;
  }
  n.signalTails(side);
  while (n.totalCompleted < n.totalPosted) await n.reap(side, what);
  return { messages: n.totalPosted, seconds: (wallNs() - t0) / 1e9, settled };
}
