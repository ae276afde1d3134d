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
import { cmStepBound } from '../host/cm-step-bound';
import type { Device } from '../../stack/device';
import { openOobChannel } from '../oob/oob-endpoint';
import { PerftestOob, PerftestVerb, executeSession, sessionSteps, type KeyCodec } from '../oob/perftest-session';
import { PINGPONG_DEFAULT_PORT } from '../oob/pingpong-messages';
import { PINGPONG_DEST_STRUCT_SIZE, decodeDestStruct, encodeDestStruct } from '../oob/perftest-dest-struct';
import { RdmaCm } from '../../stack/cm/rdma-cm';
import { nextTurn } from '../host/clock-pump';
import { type PerftestConfig, type ResolvedConfig, resolveConfig } from './config';
import { CmCommChannel } from './cm-comm-channel';
import { CmTestConnection } from './cm-test-connection';
import { configError } from './perftest-error';
import { PerftestSide } from './perftest-side';
import { type PerftestResult, summarize } from './result';

/** The out-of-band read's own limit while the peer runs (a day): the watch ends it long before. */
const PEER_RUN_BACKSTOP_MS = 86_400_000;

/** Runs one test end to end; throws OobError / PerftestError when the exchange or the test fails. */
export async function runPerftest(dev: Device, cfg: PerftestConfig): Promise<PerftestResult> {
  const rc = resolveConfig(dev, cfg);
  if (rc.rdmaCm) return runOverRdmaCm(dev, cfg, rc);
  const side = new PerftestSide(dev, rc, cfg);
  const steps = sessionSteps(rc.verb, rc.lat, rc.role, false, rc.duplex);
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
    await executeSession(oob, steps, side, rc.qps);
    side.finalVerify();
  } finally {
    side.release();
  }
  return summarize(side, rc, oob);
}

/** Key messages over the communication QP: struct pingpong_dest (rdma_write_keys / rdma_read_keys). */
export const DEST_STRUCT: KeyCodec = { size: PINGPONG_DEST_STRUCT_SIZE, encode: (d) => encodeDestStruct(d), decode: decodeDestStruct };

/**
 * -R: the same session over perftest's RDMA CM communication QP (cm-comm-channel.ts), the test QP
 * connected through the CM (cm-test-connection.ts). The end as perftest's: the test connection
 * disconnected and destroyed, the resources freed, the communication ID destroyed last.
 */
async function runOverRdmaCm(dev: Device, cfg: PerftestConfig, rc: ResolvedConfig): Promise<PerftestResult> {
  const port = cfg.port ?? PINGPONG_DEFAULT_PORT;
  // The CM steps (the test connection's REP/RTU, the DREQ) and the SENDs of the communication QP are
  // bounded by the CM's timers (apps/host/cm-step-bound.ts; longer than the QP's own), unless given.
  const stepMs = cfg.stepTimeoutMs ?? cmStepBound(cfg.cm).ms;
  const connectMs = cfg.connectTimeoutMs ?? 30_000;
  const idle = cfg.idleWait ?? nextTurn;
  const rcm = new RdmaCm(dev);
  const rdAtomic = rc.verb === PerftestVerb.READ || rc.verb === PerftestVerb.ATOMIC ? rc.outReads : 0;
  const cmTest = new CmTestConnection(rcm, {
    role: rc.role,
    dst: cfg.server,
    port,
    rdAtomic,
    stepMs,
    connectMs,
    idle,
    beforeConnect: cfg.beforeConnect,
    cm: cfg.cm,
    tos: rc.trafficClass,
    retryCount: cfg.retryCount,
    // perftest -R sets -u on the test connection's ID (RDMA_OPTION_ID_ACK_TIMEOUT), RC only.
    ackTimeout: rc.qpTimeout,
  });
  const side = new PerftestSide(dev, rc, cfg, cmTest);
  let comm: CmCommChannel | null = null;
  try {
    const o = { stepMs, idle, beforeConnect: cfg.beforeConnect, cm: cfg.cm };
    comm =
      rc.role === 'client'
        ? await CmCommChannel.connect(rcm, cfg.server as string, port, connectMs, o)
        : await CmCommChannel.accept(rcm, port, connectMs, { ...o, onListening: cfg.onListening });
    const ch = comm;
    side.peerDone = () => ch.available > 0;
    const oob = new PerftestOob(ch, rc.role, DEST_STRUCT, { stepMs, peerRunMs: cfg.runTimeoutMs ?? 300_000 }, cfg.dontXchgVersions ?? false, false);
    await executeSession(oob, sessionSteps(rc.verb, rc.lat, rc.role, true), side, 1);
    side.finalVerify();
    await cmTest.disconnect();
    return summarize(side, rc, oob);
  } finally {
    cmTest.destroy();
    side.release();
    comm?.destroy();
    rcm.close();
  }
}
