/**
 * perftest's "BW peak": the shortest time per message over any stretch of consecutive messages,
 * from the post of message i to the completion of message j (i <= j), as print_report_bw
 * (perftest_parameters.c) finds it:
 *
 *   opt_delta = min over i, j >= i of (tcompleted[j] - tposted[i]) / (j - i + 1)
 *   bw_peak   = size / opt_delta
 *
 * tposted[i] is when message i was posted (perftest stamps each post call; the messages of one
 * call share its time), tcompleted[j] when the completion of message j was polled (only signaled
 * messages, every cq_mod-th, have one). perftest loops over every pair; this finds the same
 * minimum by bisection on the ratio t, each step one pass: some pair has
 * C[j] - P[i] <= t (j - i + 1), i.e. C[j] - t (j + 1) <= P[i] - t i, exactly when the running
 * maximum of P[i] - t i up to j reaches C[j] - t (j + 1) for some j.
 */

/** Times (clock ns) of each message's post, and of the polled completions (index: message number). */
export interface PeakSamples {
  /** posted[i]: when message i was posted. */
  readonly posted: readonly number[];
  /** completed.get(j): when the completion of message j was polled. */
  readonly completed: ReadonlyMap<number, number>;
}

/** The shortest time per message (ns) over the stretches `s` holds, or null when it holds none. */
export function shortestNsPerMessage(s: PeakSamples): number | null {
  const js = [...s.completed.keys()].filter((j) => j < s.posted.length).sort((a, b) => a - b);
  if (js.length === 0 || s.posted.length === 0) return null;
  const feasible = (t: number): boolean => {
    let best = -Infinity;
    let i = 0;
    for (const j of js) {
      for (; i <= j; i++) best = Math.max(best, (s.posted[i] as number) - t * i);
      if ((s.completed.get(j) as number) - t * (j + 1) <= best) return true;
    }
    return false;
  };
  // The whole run (first post to last completion) is one of the stretches: its ratio bounds t from above.
  const last = js[js.length - 1] as number;
  let hi = Math.max(0, ((s.completed.get(last) as number) - (s.posted[0] as number)) / (last + 1));
  let lo = 0;
  if (feasible(0)) return 0;
  for (let k = 0; k < 200 && hi - lo > hi * 1e-12; k++) {
    const mid = (lo + hi) / 2;
    if (feasible(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * perftest measures no peak above this many iterations (force_dependecies sets noPeak: "BW peak
 * won't be measured in this run"); nor in duration mode, with --run_infinitely, or on a SEND
 * test's receiving server (ResolvedConfig.measurePeak).
 */
export const PEAK_MAX_ITERS = 20000;
