/**
 * Earlier optimisation for the commands that carry live traffic. V8 runs a function unoptimised
 * until it has used up its interrupt budget (bytecode executed between two tier-up checks; 67 584
 * bytes in Node 20's V8) a few times. A live command's hot path (the driver, the busy-poll wait,
 * the application's loop, and the stack's code for the device's own objects) is short and runs
 * once per frame, so it takes thousands of round trips to be optimised, and a `roce pingpong` of
 * 1 000 iterations (ibv_rc_pingpong's default) would run mostly unoptimised (docs/performance.md,
 * "The first thousand round trips", gives the p50 with the budget this sets).
 *
 * The budget is the process's: composition roots set it before the command's modules load (the
 * CLI does for its live commands); library code never does.
 */
import { setFlagsFromString } from 'node:v8';

/** Bytecode bytes between tier-up checks for live commands (V8's default is 67 584). */
export const LIVE_INTERRUPT_BUDGET = 4096;

/** Sets V8's interrupt budget to LIVE_INTERRUPT_BUDGET; `set` is V8's flag setter (a test gives its own). */
export function tierUpEarly(set: (flags: string) => void = setFlagsFromString): void {
  set(`--interrupt-budget=${LIVE_INTERRUPT_BUDGET}`);
}
