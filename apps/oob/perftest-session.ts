/**
 * The out-of-band conversation of each perftest binary, step by step, as its
 * main() runs it (linux-rdma/perftest src/write_bw.c, read_bw.c, send_bw.c,
 * atomic_bw.c, write_lat.c, read_lat.c, send_lat.c, atomic_lat.c, at 6.29; the sequences
 * below are the same back to 6.06 for these options): RC, one QP, a fixed
 * number of iterations, no duplex, no data-validation flag; with or without
 * -R (RDMA CM: the same messages over a CM-connected QP, see sessionSteps).
 *
 * A perftest peer mirrors its own main() exactly, so both ends must run the
 * same binary's sequence; a step that comes out of turn shows up as a key
 * message where a report was expected (or the reverse) and fails with an
 * error that names the step.
 */
import type { Mtu } from '../../stack/mtu';
import { OobError, OobErrorCode } from './tcp-channel';
import {
  type BwReport,
  type KeyFormat,
  type PerftestDest,
  type PerftestVersion,
  PERFTEST_VERSION,
  bwReportLayout,
  checkPeerVersion,
  decodeBwReportField,
  decodeInt32BE,
  decodeKeyMessage,
  decodeMtu,
  decodeVersion,
  emptyBwReport,
  encodeBwReportField,
  encodeInt32BE,
  encodeKeyMessage,
  encodeMtu,
  encodeVersion,
  keyMessageSize,
  mtuExchanged,
  mtuMessageSize,
  PERFTEST_VERSION_SIZE,
} from './perftest-messages';

export const PerftestVerb = { WRITE: 'write', READ: 'read', SEND: 'send', ATOMIC: 'atomic' } as const;
export type PerftestVerb = (typeof PerftestVerb)[keyof typeof PerftestVerb];

export type PerftestRole = 'client' | 'server';

/** The binary a (verb, latency) pair stands for: ib_write_bw, ib_send_lat, ... */
export function perftestBinary(verb: PerftestVerb, lat: boolean): string {
  if (verb === PerftestVerb.ATOMIC && lat) return 'ib_atomic_lat';
  return `ib_${verb}_${lat ? 'lat' : 'bw'}`;
}

/** One step of a binary's main(). */
export type SessionStep =
  /** exchange_versions: 16 bytes each way. */
  | { kind: 'versions' }
  /** check_sys_data: cycle buffer and cache line size, 4 bytes each, one exchange each. */
  | { kind: 'sys-data' }
  /** check_mtu: the MTU enum as text. */
  | { kind: 'mtu' }
  /** ctx_hand_shake: one key message each way (for every QP, or for QP 0 only). */
  | { kind: 'keys'; purpose: string; everyQp: boolean; waitsForPeerRun?: boolean }
  /** ctx_connect: this side moves its QPs to RTR (and RTS for clients and latency tests). */
  | { kind: 'connect' }
  /**
   * -R, create_rdma_cm_connection() (perftest_communication.c): a key exchange as a barrier (the
   * still zeroed my_dest), the test QP connected through the RDMA CM, another barrier. Takes the
   * place of `connect`.
   */
  | { kind: 'cm-connect' }
  /** ctx_set_recv_wqes: receive buffers posted before the start barrier. */
  | { kind: 'post-receives' }
  /** The measured loop. */
  | { kind: 'run' }
  /** xchg_bw_reports. */
  | { kind: 'bw-reports' }
  /** ctx_close_connection (one last key message and "done\0", then close) or, when `handshake` is false, just closing the socket. */
  | { kind: 'close'; handshake: boolean; waitsForPeerRun?: boolean };

const setup: SessionStep[] = [{ kind: 'versions' }, { kind: 'sys-data' }, { kind: 'mtu' }];

/**
 * The steps `role` takes in the binary for (verb, lat); with `rdmaCm` (-R) as each main() runs
 * them when work_rdma_cm is ON: create_rdma_cm_connection() right after check_mtu(), before the
 * first key exchange, and no ctx_connect() (the CM has moved the QPs). Atomic latency
 * (ib_atomic_lat) runs read_lat.c's sequence.
 */
export function sessionSteps(verb: PerftestVerb, lat: boolean, role: PerftestRole, rdmaCm = false, duplex = false): SessionStep[] {
  const steps = duplex && !lat ? duplexSessionSteps(verb) : tcpSessionSteps(verb, lat, role);
  if (!rdmaCm) return steps;
  const out: SessionStep[] = [];
  for (const s of steps) {
    if (s.kind === 'connect') continue;
    out.push(s);
    if (s.kind === 'mtu') out.push({ kind: 'cm-connect' });
  }
  return out;
}

/** send_bw.c and send_lat.c up to the start barrier: keys, connect, barrier, keys, receives posted (where this side receives), start barrier. */
function sendPrelude(receives: boolean): SessionStep[] {
  return [
    ...setup,
    { kind: 'keys', purpose: 'exchange QP attributes', everyQp: true },
    { kind: 'connect' },
    { kind: 'keys', purpose: 'barrier after connecting', everyQp: false },
    { kind: 'keys', purpose: 'exchange after connecting (printed as remote address)', everyQp: true },
    ...(receives ? [{ kind: 'post-receives' } as const] : []),
    { kind: 'keys', purpose: 'start barrier (receives posted)', everyQp: false },
  ];
}

/** write_bw.c, read_bw.c and atomic_bw.c up to the barrier after moving the QPs to RTR. */
const ONE_SIDED_BW_PRELUDE: readonly SessionStep[] = [
  ...setup,
  { kind: 'keys', purpose: 'exchange QP attributes', everyQp: true },
  { kind: 'connect' },
  { kind: 'keys', purpose: 'exchange after connecting (printed as remote address)', everyQp: true },
  { kind: 'keys', purpose: 'barrier after moving the QP to RTR', everyQp: false },
];

/**
 * Bidirectional bandwidth (-b, duplex; perftest 6.06 write_bw.c / read_bw.c / atomic_bw.c /
 * send_bw.c, RUN_REGULAR): both sides send, so both take the same steps: a barrier before the run,
 * then the reports exchanged (each prints the sum of both directions), then the closing barrier.
 */
function duplexSessionSteps(verb: PerftestVerb): SessionStep[] {
  const prelude =
    verb === PerftestVerb.SEND
      ? sendPrelude(true)
      : [...ONE_SIDED_BW_PRELUDE, { kind: 'keys', purpose: 'start barrier (both sides run)', everyQp: false } as const];
  return [...prelude, { kind: 'run' }, { kind: 'bw-reports' }, { kind: 'close', handshake: true }];
}

function tcpSessionSteps(verb: PerftestVerb, lat: boolean, role: PerftestRole): SessionStep[] {
  const server = role === 'server';
  if (!lat) {
    // send_bw.c: keys per QP, connect, keys QP 0, keys per QP, receives posted (server), start barrier, run, close.
    if (verb === PerftestVerb.SEND) return [...sendPrelude(server), { kind: 'run' }, { kind: 'close', handshake: true, waitsForPeerRun: true }];
    // write_bw.c, read_bw.c, atomic_bw.c: the server takes no part in the test; it waits for the client's
    // barrier, takes its report and closes.
    return server
      ? [
          ...ONE_SIDED_BW_PRELUDE,
          { kind: 'keys', purpose: 'barrier: client finished', everyQp: false, waitsForPeerRun: true },
          { kind: 'bw-reports' },
          { kind: 'close', handshake: true },
        ]
      : [
          ...ONE_SIDED_BW_PRELUDE,
          { kind: 'run' },
          { kind: 'keys', purpose: 'barrier: client finished', everyQp: false },
          { kind: 'bw-reports' },
          { kind: 'close', handshake: true },
        ];
  }
  switch (verb) {
    case PerftestVerb.WRITE:
      // write_lat.c: an extra barrier before the per-QP exchange; no closing handshake (the process just exits).
      return [
        ...setup,
        { kind: 'keys', purpose: 'first barrier', everyQp: false },
        { kind: 'keys', purpose: 'exchange QP attributes', everyQp: true },
        { kind: 'connect' },
        { kind: 'keys', purpose: 'exchange after connecting (printed as remote address)', everyQp: true },
        { kind: 'keys', purpose: 'barrier after moving the QP to RTR', everyQp: false },
        { kind: 'run' },
        { kind: 'close', handshake: false },
      ];
    case PerftestVerb.READ:
    case PerftestVerb.ATOMIC:
      // read_lat.c and atomic_lat.c (the same main()): only the client reads (or posts atomics); the
      // server closes (after one last barrier) as soon as the client has.
      return [
        ...setup,
        { kind: 'keys', purpose: 'first barrier', everyQp: false },
        { kind: 'keys', purpose: 'exchange QP attributes', everyQp: true },
        { kind: 'connect' },
        { kind: 'keys', purpose: 'exchange after connecting (printed as remote address)', everyQp: true },
        { kind: 'keys', purpose: 'barrier after moving the QP to RTR', everyQp: false },
        ...(server ? [] : [{ kind: 'run' } as const]),
        { kind: 'close', handshake: true, waitsForPeerRun: server },
      ];
    case PerftestVerb.SEND:
      // send_lat.c: both post receives before the start barrier, then ping-pong (client first).
      return [...sendPrelude(true), { kind: 'run' }, { kind: 'close', handshake: true, waitsForPeerRun: true }];
  }
}

/** Counts of each message a run of the sequence sends (for tests and for the record). */
export function keyMessageCount(steps: readonly SessionStep[], qps = 1): number {
  let n = 0;
  for (const s of steps) {
    if (s.kind === 'keys') n += s.everyQp ? qps : 1;
    else if (s.kind === 'close' && s.handshake) n += 1;
    else if (s.kind === 'cm-connect') n += 2;
  }
  return n;
}

export interface SysData {
  cycleBuffer: number;
  cacheLineSize: number;
}

export interface OobTimeouts {
  /** For every read during set-up (default 10 s). */
  stepMs: number;
  /** For a read that waits while the peer runs its test (default 5 min). */
  peerRunMs: number;
}

/**
 * What carries perftest's messages: the TCP socket (apps/oob/tcp-channel.ts) or, with -R, the
 * RDMA CM communication QP (apps/perftest/cm-comm-channel.ts, one SEND per message).
 */
export interface OobTransport {
  writeExact(b: Uint8Array): Promise<void>;
  readExact(n: number, what: string, timeoutMs: number): Promise<Uint8Array>;
  /** Bytes (or messages) that have arrived and are not read yet. */
  readonly available: number;
  close(): void;
}

/** How key messages are written: text over TCP (KeyFormat), `struct pingpong_dest` over the RDMA CM. */
export interface KeyCodec {
  size: number;
  encode(d: PerftestDest): Uint8Array;
  decode(b: Uint8Array): PerftestDest;
}

/** The text key message of the TCP exchange in format `f`. */
export function textKeyCodec(f: KeyFormat): KeyCodec {
  return { size: keyMessageSize(f), encode: (d) => encodeKeyMessage(d, f), decode: (b) => decodeKeyMessage(b, f) };
}

/**
 * The transport of one perftest conversation: each exchange is symmetric
 * (the client writes first, the server reads first) and each message goes
 * out in one write.
 */
export class PerftestOob {
  /** The peer's version (ours when versions are not exchanged). */
  peerVersion: PerftestVersion = { text: PERFTEST_VERSION, value: Number(PERFTEST_VERSION) };
  /** Messages sent and received so far, by kind (for reports and tests). */
  readonly log: { dir: 'out' | 'in'; what: string; bytes: number }[] = [];

  readonly keyCodec: KeyCodec;

  /**
   * `sendsDone`: ctx_close_connection() writes "done" only on the TCP exchange (not when
   * use_rdma_cm or work_rdma_cm is ON).
   */
  constructor(
    readonly ch: OobTransport,
    readonly role: PerftestRole,
    keyFormat: KeyFormat | KeyCodec,
    readonly timeouts: OobTimeouts,
    readonly dontXchgVersions = false,
    readonly sendsDone = true,
  ) {
    this.keyCodec = 'encode' in keyFormat ? keyFormat : textKeyCodec(keyFormat);
  }

  /** ctx_xchg_data: `mine` out, `size` bytes of `what` in. */
  async exchange(mine: Uint8Array, size: number, what: string, timeoutMs = this.timeouts.stepMs): Promise<Uint8Array> {
    if (this.role === 'client') {
      await this.send(mine, what);
      return this.receive(size, what, timeoutMs);
    }
    const theirs = await this.receive(size, what, timeoutMs);
    await this.send(mine, what);
    return theirs;
  }

  private async send(b: Uint8Array, what: string): Promise<void> {
    this.log.push({ dir: 'out', what, bytes: b.length });
    await this.ch.writeExact(b);
  }

  private async receive(n: number, what: string, timeoutMs: number): Promise<Uint8Array> {
    const b = await this.ch.readExact(n, what, timeoutMs);
    this.log.push({ dir: 'in', what, bytes: n });
    return b;
  }

  async versions(): Promise<PerftestVersion> {
    if (this.dontXchgVersions) return this.peerVersion;
    const b = await this.exchange(encodeVersion(PERFTEST_VERSION), PERFTEST_VERSION_SIZE, 'perftest version');
    const v = decodeVersion(b);
    checkPeerVersion(v);
    this.peerVersion = v;
    return v;
  }

  /** check_sys_data: both sides go on with the larger of each value. */
  async sysData(mine: SysData): Promise<SysData> {
    if (this.dontXchgVersions || this.peerVersion.value < 5.32) return mine;
    const c = decodeInt32BE(await this.exchange(encodeInt32BE(mine.cycleBuffer), 4, 'perftest cycle buffer size'), 'cycle_buffer');
    const l = decodeInt32BE(await this.exchange(encodeInt32BE(mine.cacheLineSize), 4, 'perftest cache line size'), 'cache_line_size');
    return { cycleBuffer: Math.max(c, mine.cycleBuffer), cacheLineSize: Math.max(l, mine.cacheLineSize) };
  }

  /** check_mtu: both sides go on with the smaller MTU. */
  async mtu(mine: Mtu): Promise<Mtu> {
    if (this.dontXchgVersions || !mtuExchanged(this.peerVersion.value)) return mine;
    const size = mtuMessageSize(this.peerVersion.value);
    const theirs = decodeMtu(await this.exchange(encodeMtu(mine, size), size, 'perftest MTU'));
    return theirs < mine ? theirs : mine;
  }

  /** ctx_hand_shake for one QP. */
  async keys(mine: PerftestDest, purpose: string, timeoutMs = this.timeouts.stepMs): Promise<PerftestDest> {
    const b = await this.exchange(this.keyCodec.encode(mine), this.keyCodec.size, `perftest key message (${purpose})`, timeoutMs);
    return this.keyCodec.decode(b);
  }

  /**
   * A key exchange used only as a barrier (create_rdma_cm_connection()'s, with my_dest still all
   * zero); `between` runs on the server after it has read the client's message and before it
   * answers (this side listens for the test connection there, so the client's REQ finds it).
   */
  async barrier(purpose: string, between?: () => void | Promise<void>): Promise<void> {
    const zero: PerftestDest = { lid: 0, outReads: 0, qpn: 0, psn: 0, rkey: 0, vaddr: 0n, tailMarkersVaddr: 0n, gid: new Uint8Array(16), srqn: 0 };
    const what = `perftest key message (${purpose})`;
    if (this.role === 'client') {
      await this.send(this.keyCodec.encode(zero), what);
      await this.receive(this.keyCodec.size, what, this.timeouts.stepMs);
      return;
    }
    await this.receive(this.keyCodec.size, what, this.timeouts.stepMs);
    await between?.();
    await this.send(this.keyCodec.encode(zero), what);
  }

  /** xchg_bw_reports: one exchange per field. */
  async bwReports(mine: BwReport, timeoutMs = this.timeouts.stepMs): Promise<BwReport> {
    const theirs = emptyBwReport();
    for (const { field, size } of bwReportLayout(this.peerVersion.value)) {
      const b = await this.exchange(encodeBwReportField(mine, field, size), size, `perftest bandwidth report (${field})`, timeoutMs);
      decodeBwReportField(theirs, field, b);
    }
    return theirs;
  }

  /**
   * ctx_close_connection ends with write(sockfd, "done", sizeof "done") on both sides (without
   * RDMA CM), then closes; nobody reads it. Sent the same way, best effort: the peer may already
   * have closed. Not counted in `log` (not part of an exchange).
   */
  async done(): Promise<void> {
    if (!this.sendsDone) return;
    try {
      await this.ch.writeExact(PERFTEST_DONE);
    } catch {
      // the peer closed first: nothing is lost, it would not have read it
    }
  }

  close(): void {
    this.ch.close();
  }
}

/** The 5 bytes each side writes last in ctx_close_connection ("done" and its NUL). */
export const PERFTEST_DONE = new Uint8Array([0x64, 0x6f, 0x6e, 0x65, 0]);

/** What the local side does at the steps that are not messages. */
export interface PerftestLocalSide {
  readonly sysData: SysData;
  readonly mtu: Mtu;
  /** Called once the agreed values are known, before the first key message (ctx_init). */
  setup(agreed: { sysData: SysData; mtu: Mtu; peerVersion: PerftestVersion }): void;
  /** This side's key message for QP `i`. */
  dest(i: number): PerftestDest;
  /** The peer's key message for QP `i`, each time one arrives. */
  onPeerDest(i: number, d: PerftestDest, purpose: string): void;
  connect(): void | Promise<void>;
  /** -R: the server starts listening for the test connection (between the barrier's read and write). */
  cmListen?(): void | Promise<void>;
  /** -R: the test QP connected through the RDMA CM (client: connect; server: accept the request). */
  cmConnect?(): Promise<void>;
  postReceives(): void;
  run(): Promise<void>;
  /** This side's bandwidth report. */
  report(): BwReport;
  onPeerReport(r: BwReport): void;
  /**
   * Every out-of-band wait after the QP is connected goes through this when given: the side watches
   * its QP meanwhile (fails at once when it goes to the error state; with `peerRuns`, when the
   * peer's run makes no progress on it), so a hijacked QP is not reported as a timed-out read.
   */
  whileConnected?<T>(wait: Promise<T>, what: string, peerRuns: boolean): Promise<T>;
}

/** Runs `steps` over `oob`, calling `local` at the local steps, and closes the connection at the end. */
export async function executeSession(oob: PerftestOob, steps: readonly SessionStep[], local: PerftestLocalSide, qps = 1): Promise<void> {
  try {
    let sys = local.sysData;
    let mtu = local.mtu;
    let connected = false;
    const watched = <T>(wait: Promise<T>, what: string, peerRuns: boolean): Promise<T> =>
      connected && local.whileConnected !== undefined ? local.whileConnected(wait, what, peerRuns) : wait;
    for (const step of steps) {
      switch (step.kind) {
        case 'versions':
          await oob.versions();
          break;
        case 'sys-data':
          sys = await oob.sysData(local.sysData);
          break;
        case 'mtu':
          mtu = await oob.mtu(local.mtu);
          local.setup({ sysData: sys, mtu, peerVersion: oob.peerVersion });
          break;
        case 'keys': {
          const t = step.waitsForPeerRun ? oob.timeouts.peerRunMs : oob.timeouts.stepMs;
          const what = `perftest key message (${step.purpose})`;
          for (let i = 0; i < (step.everyQp ? qps : 1); i++)
            local.onPeerDest(i, await watched(oob.keys(local.dest(i), step.purpose, t), what, step.waitsForPeerRun === true), step.purpose);
          break;
        }
        case 'connect':
          await local.connect();
          connected = true;
          break;
        case 'cm-connect': {
          if (local.cmConnect === undefined) throw new OobError(OobErrorCode.INCOMPATIBLE, 'this side cannot connect through the RDMA CM', 'rdma_cm');
          const listen = local.cmListen?.bind(local);
          await oob.barrier('before creating the RDMA CM connection', listen);
          await local.cmConnect();
          await oob.barrier('after creating the RDMA CM connection');
          break;
        }
        case 'post-receives':
          local.postReceives();
          break;
        case 'run':
          await local.run();
          break;
        case 'bw-reports':
          local.onPeerReport(await watched(oob.bwReports(local.report()), 'perftest bandwidth report', false));
          break;
        case 'close':
          if (step.handshake) {
            const t = step.waitsForPeerRun ? oob.timeouts.peerRunMs : oob.timeouts.stepMs;
            local.onPeerDest(
              0,
              await watched(oob.keys(local.dest(0), 'closing barrier', t), 'perftest key message (closing barrier)', step.waitsForPeerRun === true),
              'closing barrier',
            );
            await oob.done();
          }
          break;
      }
    }
  } finally {
    oob.close();
  }
}
