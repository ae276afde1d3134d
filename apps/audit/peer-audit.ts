/**
 * `roce audit`'s active method: connect to a peer that serves perftest runs N times (ib_write_bw or
 * `roce perftest write` as server, restarted after each run, e.g. in a shell loop; with -R the
 * exchange and the QP go through the RDMA CM), and collect what the peer hands out in each run's
 * exchange: its R_Key and buffer address (perftest's key message: qpn, psn, rkey, vaddr), and each
 * QP's number and starting PSN. Each run is a short, real WRITE test (a few 64-byte messages), so
 * the peer sees an ordinary client. The values are judged as `roce analyze --audit` judges those of
 * a capture (analysis/guessability.ts).
 *
 * Every wait is bounded by the perftest run's own timers (the out-of-band step timeout, the QP's
 * retry and RNR timers) and by `restartWaitMs` for the peer to listen again; a run that fails ends
 * the audit, which reports the values collected so far and why it stopped.
 *
 * With `liveChecks`, one more connection follows the runs, on which the peer is tested with one
 * injected frame from another source address and one WRITE with a wrong R_Key
 * (live-check-connection.ts, live-checks.ts).
 */
import type { Device } from '../../stack/device';
import { runPerftest } from '../perftest/run';
import type { PerftestResult } from '../perftest/result';
import { GuessCollector, GuessKind, type GuessReport, guessReport } from '../../analysis/guessability';
import { type LiveChecksResult, runLiveChecks } from './live-check-connection';

export interface PeerAuditConfig {
  /** The peer's address. */
  server: string;
  /** Its out-of-band TCP port (or, with rdmaCm, its CM port). */
  port: number;
  /** Runs to make (connections opened): at least 3 for a verdict. */
  runs: number;
  /** QPs per run (perftest -q): each adds a QPN and a starting PSN. */
  qps?: number;
  /** perftest -R: connect through the RDMA CM. */
  rdmaCm?: boolean;
  /** How long to wait for the peer to listen again before each run. */
  restartWaitMs: number;
  /** perftest's out-of-band step timeout. */
  stepTimeoutMs?: number;
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  idleWait?: () => Promise<void>;
  /** Each finished run, as it ends (a live report). */
  onRun?: (r: AuditRun) => void;
  /** After the runs, one more connection with the injection and wrong-R_Key checks (off by default). */
  liveChecks?: boolean;
}

/** What one run's exchange handed out. */
export interface AuditRun {
  run: number;
  rkey: number;
  vaddr: string;
  qpns: number[];
  psns: number[];
}

export interface PeerAuditResult {
  ok: boolean;
  server: string;
  runs: AuditRun[];
  report: GuessReport;
  /** Why the audit stopped before its last run, or null. */
  stopped: string | null;
  /** The live checks' results, or null when they were not asked for (or the runs stopped first). */
  live: LiveChecksResult | null;
  problems: string[];
}

/** Messages per run and their size: enough for a real run, little traffic. */
const RUN_ITERS = 5;
const RUN_SIZE = 64;

export async function auditPeer(dev: Device, cfg: PeerAuditConfig): Promise<PeerAuditResult> {
  const runs: AuditRun[] = [];
  let stopped: string | null = null;
  for (let i = 1; i <= cfg.runs; i++) {
    let r: PerftestResult;
    try {
      r = await runPerftest(dev, {
        verb: 'write',
        lat: false,
        role: 'client',
        server: cfg.server,
        port: cfg.port,
        size: RUN_SIZE,
        iters: RUN_ITERS,
        connectTimeoutMs: cfg.restartWaitMs,
        ...(cfg.qps !== undefined ? { qps: cfg.qps } : {}),
        ...(cfg.rdmaCm === true ? { rdmaCm: true } : {}),
        ...(cfg.stepTimeoutMs !== undefined ? { stepTimeoutMs: cfg.stepTimeoutMs } : {}),
        ...(cfg.beforeConnect !== undefined ? { beforeConnect: cfg.beforeConnect } : {}),
        ...(cfg.idleWait !== undefined ? { idleWait: cfg.idleWait } : {}),
      });
    } catch (e) {
      stopped = `run ${i} of ${cfg.runs}: ${(e as Error).message}`;
      break;
    }
    const run: AuditRun = {
      run: i,
      rkey: r.remote.rkey,
      vaddr: r.remote.vaddr,
      qpns: r.qpPairs.map((p) => p.remote.qpn),
      psns: r.qpPairs.map((p) => p.remote.psn),
    };
    runs.push(run);
    cfg.onRun?.(run);
    if (!r.ok) {
      stopped = `run ${i} of ${cfg.runs} failed: ${r.problems[0] ?? 'unknown problem'}`;
      break;
    }
  }
  const c = new GuessCollector();
  for (const r of runs) {
    c.add(cfg.server, GuessKind.RKEY, r.rkey >>> 0);
    c.add(cfg.server, GuessKind.VA, BigInt(r.vaddr));
    for (const q of r.qpns) c.add(cfg.server, GuessKind.QPN, q);
    for (const p of r.psns) c.add(cfg.server, GuessKind.START_PSN, p);
  }
  const report = guessReport(c.all());
  let live: LiveChecksResult | null = null;
  if (cfg.liveChecks === true && stopped === null) {
    live = await runLiveChecks(dev, {
      server: cfg.server,
      port: cfg.port,
      connectTimeoutMs: cfg.restartWaitMs,
      ...(cfg.stepTimeoutMs !== undefined ? { stepTimeoutMs: cfg.stepTimeoutMs } : {}),
      ...(cfg.beforeConnect !== undefined ? { beforeConnect: cfg.beforeConnect } : {}),
      ...(cfg.idleWait !== undefined ? { idleWait: cfg.idleWait } : {}),
    });
    if (live.stopped !== null) stopped = live.stopped;
  }
  const problems = stopped !== null ? [stopped] : [];
  return { ok: stopped === null, server: cfg.server, runs, report, stopped, live, problems };
}
