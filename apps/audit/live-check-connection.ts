/**
 * The connection `roce audit --live-checks` runs its checks on (live-checks.ts): one more perftest
 * WRITE connection to the peer, over TCP, as an ordinary ib_write_bw client up to the run, whose
 * run is the two checks instead of the measured loop. The session then ends as perftest's does
 * (the reports and the closing barrier, with an empty report), so a perftest server in a loop
 * serves the next connection; when the peer's side has ended the session itself (a server that
 * watches its QP gives up once the wrong R_Key put it in the error state), that is said, not
 * counted as a failure of the checks.
 *
 * This side tells the peer a starting PSN P and sends from P+1: PSN P is the injection check's.
 */
import type { Device } from '../../stack/device';
import type { Mtu } from '../../stack/mtu';
import { psnAdd } from '../../base/psn';
import { internalError } from '../../base/programming-error';
import { openOobChannel } from '../oob/oob-endpoint';
import { PerftestOob, PerftestVerb, type PerftestLocalSide, type SysData, executeSession, sessionSteps } from '../oob/perftest-session';
import type { BwReport, PerftestDest, PerftestVersion } from '../oob/perftest-messages';
import { resolveConfig } from '../perftest/config';
import { configError } from '../perftest/perftest-error';
import { PerftestSide } from '../perftest/perftest-side';
import { nextTurn } from '../host/clock-pump';
import { type InjectionResult, LiveOutcome, type WrongRkeyResult, LIVE_CHECK_EXPECTED, injectionCheck, wrongRkeyCheck } from './live-checks';

export interface LiveCheckConfig {
  server: string;
  port: number;
  /** How long to try to connect (the peer restarting its server). */
  connectTimeoutMs: number;
  stepTimeoutMs?: number;
  beforeConnect?: (peerGid: Uint8Array) => void | Promise<void>;
  idleWait?: () => Promise<void>;
}

export interface LiveChecksResult {
  /** The peer's QPN and R_Key on this connection, and the PSN it was told. */
  connection: { qpn: number; rkey: number; vaddr: string; psn: number; localQpn: number } | null;
  injection: InjectionResult | null;
  wrongRkey: WrongRkeyResult | null;
  /** How the perftest session ended after the checks: null when it closed as perftest's does. */
  sessionEnd: string | null;
  /** Why the checks could not run (no connection), or null. */
  stopped: string | null;
}

/** The session side: a perftest client's, whose run is the checks. */
class LiveCheckSide implements PerftestLocalSide {
  injection: InjectionResult | null = null;
  wrongRkey: WrongRkeyResult | null = null;
  /** The PSN the peer was told (this side's QP sends from the next one). */
  told = 0;

  constructor(
    readonly inner: PerftestSide,
    private readonly idle: () => Promise<void>,
  ) {}

  get sysData(): SysData {
    return this.inner.sysData;
  }
  get mtu(): Mtu {
    return this.inner.mtu;
  }
  setup(agreed: { sysData: SysData; mtu: Mtu; peerVersion: PerftestVersion }): void {
    this.inner.setup(agreed);
  }
  dest(i: number): PerftestDest {
    return this.inner.dest(i);
  }
  onPeerDest(i: number, d: PerftestDest, purpose: string): void {
    this.inner.onPeerDest(i, d, purpose);
  }
  async connect(): Promise<void> {
    // The QP starts one PSN after the one in its key message: that PSN is left for the injected frame.
    this.told = this.inner.psns[0] ?? 0;
    this.inner.psns[0] = psnAdd(this.told, 1);
    try {
      await this.inner.connect();
    } finally {
      this.inner.psns[0] = this.told; // later key messages (barriers) repeat the first
    }
  }
  postReceives(): void {
    this.inner.postReceives();
  }
  async run(): Promise<void> {
    const r = this.inner.resources();
    const remote = this.inner.remote;
    if (remote === null) throw internalError('live checks before the key exchange');
    const target = {
      dev: this.inner.dev,
      qp: r.qp,
      mr: r.mr,
      sendCq: r.sendCq,
      remoteQpn: remote.qpn,
      rkey: remote.rkey,
      vaddr: remote.vaddr,
      peerPsn: this.told,
      idle: this.idle,
    };
    this.injection = await injectionCheck(target);
    const ok = this.injection.outcome === LiveOutcome.ACCEPTED || this.injection.outcome === LiveOutcome.REJECTED;
    this.wrongRkey = ok
      ? await wrongRkeyCheck(target, psnAdd(this.told, 2))
      : {
          outcome: LiveOutcome.NOT_RUN,
          psn: psnAdd(this.told, 2),
          rkey: 0,
          realRkey: remote.rkey,
          answer: null,
          peerQp: 'unknown',
          detail: `not run: the connection did not survive the injection check (${this.injection.outcome})`,
          expected: LIVE_CHECK_EXPECTED.wrongRkey,
        };
  }
  report(): BwReport {
    return this.inner.report();
  }
  onPeerReport(r: BwReport): void {
    this.inner.onPeerReport(r);
  }
}

/** Opens the connection, runs both checks on it and ends the session; never rejects for what the peer does. */
export async function runLiveChecks(dev: Device, cfg: LiveCheckConfig): Promise<LiveChecksResult> {
  const pcfg = {
    verb: PerftestVerb.WRITE,
    lat: false,
    role: 'client' as const,
    server: cfg.server,
    port: cfg.port,
    size: 64,
    iters: 5,
    connectTimeoutMs: cfg.connectTimeoutMs,
    ...(cfg.beforeConnect !== undefined ? { beforeConnect: cfg.beforeConnect } : {}),
    ...(cfg.idleWait !== undefined ? { idleWait: cfg.idleWait } : {}),
  };
  const rc = resolveConfig(dev, pcfg);
  const inner = new PerftestSide(dev, rc, pcfg);
  const side = new LiveCheckSide(inner, cfg.idleWait ?? nextTurn);
  const result = (sessionEnd: string | null, stopped: string | null): LiveChecksResult => {
    const remote = inner.remote;
    const qp = inner.qp;
    return {
      connection:
        remote !== null && qp !== null
          ? { qpn: remote.qpn, rkey: remote.rkey, vaddr: `0x${remote.vaddr.toString(16)}`, psn: side.told, localQpn: qp.qpNum }
          : null,
      injection: side.injection,
      wrongRkey: side.wrongRkey,
      sessionEnd,
      stopped,
    };
  };
  try {
    const ch = await openOobChannel(pcfg, 30_000, () => configError('server', 'is needed for the client role'));
    const oob = new PerftestOob(
      ch,
      'client',
      { gid: true, dataValidation: false },
      { stepMs: cfg.stepTimeoutMs ?? 10_000, peerRunMs: cfg.stepTimeoutMs ?? 10_000 },
    );
    try {
      await executeSession(oob, sessionSteps(rc.verb, rc.lat, rc.role, false, rc.duplex), side, 1);
      return result(null, null);
    } catch (e) {
      const msg = (e as Error).message;
      // Once the checks have run, the session's end is the peer's business (see the file comment).
      return side.wrongRkey !== null ? result(msg, null) : result(null, `live-check connection: ${msg}`);
    }
  } catch (e) {
    return result(null, `live-check connection: ${(e as Error).message}`);
  } finally {
    inner.release();
  }
}
