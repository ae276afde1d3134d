/**
 * One perftest test on a `Device`, as ib_write_bw, ib_read_bw, ib_send_bw,
 * ib_atomic_bw, ib_write_lat, ib_read_lat or ib_send_lat run it: the same
 * out-of-band conversation (apps/oob/perftest-session.ts), the same QP
 * attributes and defaults (perftest_parameters.h, perftest_resources.c), the
 * same traffic pattern, so either end can be the real tool.
 *
 * The pieces: config.ts (parameters, defaults, checks), perftest-side.ts (this
 * end's resources and connection), bandwidth.ts and latency.ts (the measured
 * loops), buffer-layout.ts, verification.ts, measurement.ts,
 * completion-waits.ts, result.ts (what the run reports).
 */
import type { Device } from '../../stack/device';
import { openOobChannel } from '../oob/oob-endpoint';
import { PerftestOob, executeSession, sessionSteps } from '../oob/perftest-session';
import { type PerftestConfig, resolveConfig } from './config';
import { configError } from './perftest-error';
import { PerftestSide } from './perftest-side';
import { type PerftestResult, summarize } from './result';

/** The out-of-band read's own limit while the peer runs (a day): the watch ends it long before. */
const PEER_RUN_BACKSTOP_MS = 86_400_000;

/** Runs one test end to end; throws OobError / PerftestError when the exchange or the test fails. */
export async function runPerftest(dev: Device, cfg: PerftestConfig): Promise<PerftestResult> {
  const rc = resolveConfig(dev, cfg);
  const side = new PerftestSide(dev, rc, cfg);
  const steps = sessionSteps(rc.verb, rc.lat, rc.role);
  const ch = await openOobChannel(cfg, 30_000, () => configError('server', 'is needed for the client role'));
  side.peerDone = () => ch.available > 0;
  const oob = new PerftestOob(
    ch,
    rc.role,
    { gid: true, dataValidation: false },
    // A read that waits while the peer runs is bounded by the side's watch of its QP (no progress
    // within the bound of its timers, or the QP's error): the read's own limit only backs it up.
    { stepMs: cfg.stepTimeoutMs ?? 10_000, peerRunMs: PEER_RUN_BACKSTOP_MS },
    cfg.dontXchgVersions ?? false,
  );
  try {
    await executeSession(oob, steps, side, 1);
    side.finalVerify();
  } finally {
    side.release();
  }
  return summarize(side, rc, oob);
}

