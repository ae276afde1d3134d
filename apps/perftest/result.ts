/**
 * What a perftest run reports (the CLI prints it as text or JSON): the figures
 * of this side, or of the client's report for the server of a one-sided
 * bandwidth test, the addresses exchanged, the verification, the out-of-band
 * traffic and the QP's counters.
 */
import { mtuBytes } from '../../stack/mtu';
import { ipv6ToString } from '../../packets/bytes';
import { type Counters, addCounters, newCounters } from '../../stack/counters';
import { checkBwReport } from '../oob/perftest-messages';
import { type PerftestOob, type PerftestRole, type PerftestVerb, PerftestVerb as Verb, perftestBinary } from '../oob/perftest-session';
import type { WarmUpReport } from './warm-up';
import type { Connection, ResolvedConfig } from './config';
import type { SizeResult } from './measurement';
import { type LatencyStats, bwFormatFactor, latencyStats, peakGbps } from './measurement';
import type { PerftestSide } from './perftest-side';
import { qpHealth } from '../host/qp-health';

/** The test's connection as perftest prints it before the measured loop: the tool, the QPs and the addresses exchanged. */
export interface PerftestConnectionInfo {
  test: string;
  role: PerftestRole;
  verb: PerftestVerb;
  lat: boolean;
  mtu: number;
  /** -R: the QP connected through the RDMA CM and the exchange carried by a CM-connected QP. */
  rdmaCm: boolean;
  peerVersion: string;
  /** QPs (perftest -q); `local` and `remote` describe QP 0, `qpPairs` every one. */
  qps: number;
  /** The test QPs' transport (perftest -c). */
  connection: Connection;
  qpPairs: { local: { qpn: number; psn: number }; remote: { qpn: number; psn: number } }[];
  local: { qpn: number; psn: number; gid: string; rkey: number; vaddr: string };
  remote: { qpn: number; psn: number; gid: string; rkey: number; vaddr: string; outReads: number };
}

export interface PerftestResult extends PerftestConnectionInfo {
  ok: boolean;
  msgSize: number;
  /** Iterations run (duration mode: the messages posted; the measured ones are `messages`). */
  iterations: number;
  /** Duration mode: the -D seconds; null for a run of a number of iterations. */
  durationS: number | null;
  /** Bytes this side moved (bandwidth servers of WRITE/READ/atomic: what the client reported). */
  bytes: number;
  messages: number;
  seconds: number;
  gbps: number;
  /**
   * perftest's BW peak in Gb/s: the shortest time per message over any stretch of the run
   * (apps/perftest/bw-peak.ts), or the peer's bw_peak for a server that takes the client's report;
   * null where perftest does not measure it (duration mode, --run_infinitely, above 20000
   * iterations, a SEND server, latency tests).
   */
  peakGbps: number | null;
  mpps: number;
  /** One-way latency (half the round trip for WRITE and SEND, the whole READ) in microseconds. */
  latencyUs: LatencyStats | null;
  /** Where the numbers come from: this side's own loop, the client's report, or nowhere (the ib_read_lat server). */
  measured: 'local' | 'peer-report' | 'none';
  /** perftest -a: each size's figures as this side measured them (empty for one size, or where this side does not measure); the top-level figures are the last size's. */
  sizes: SizeResult[];
  /** perftest -b: the peer's direction as it reported it, and the sum perftest prints; null otherwise. */
  bidirectional: { peer: { messages: number; gbps: number }; gbpsBothWays: number } | null;
  verify: { enabled: boolean; bytesChecked: number; mismatches: number };
  oob: { messagesOut: number; messagesIn: number; bytesOut: number; bytesIn: number };
  /** --perform_warm_up: the requests sent before the measured loop (not in its figures), or null. */
  warmUp: WarmUpReport | null;
  /** The QPs' counters (rxe names; with -q, summed over the QPs), the ones that are not zero. */
  counters: Partial<Counters>;
  /** What makes the run fail: any one sets `ok` false (a QP in the error state, retries exhausted, bad data, a bad report). */
  problems: string[];
  /** What the run survived but a user should know: retries after timeouts or NAKs, frames dropped as malformed. */
  warnings: string[];
}

/** The counters of `c` that are not zero. */
export function nonZeroCounters(c: Counters): Partial<Counters> {
  const out: Partial<Counters> = {};
  for (const [k, v] of Object.entries(c) as [keyof Counters, number][]) if (v !== 0) out[k] = v;
  return out;
}

/** The result of the run `side` made, with what `oob` carried. */
export function summarize(side: PerftestSide, rc: ResolvedConfig, oob: PerftestOob): PerftestResult {
  const m = side.measured;
  const v = side.verifier;
  const problems = [...(v?.problems ?? [])];
  let measured: PerftestResult['measured'] = 'local';
  let bytes = rc.size * m.messages;
  let messages = m.messages;
  let seconds = Math.max(0, (m.finished - m.started) / 1e9);
  let mpps = seconds > 0 ? messages / seconds / 1e6 : 0;
  let gbps = seconds > 0 ? (bytes * 8) / seconds / 1e9 : 0;
  let peak = rc.lat ? null : peakGbps(m, rc.size);
  const round = (x: number, d = 6): number => Math.round(x * 10 ** d) / 10 ** d;
  let peerDirection: { messages: number; gbps: number } | null = null;
  const oneSidedServer = !rc.lat && rc.role === 'server' && rc.verb !== Verb.SEND && !rc.duplex;
  if (oneSidedServer) {
    measured = 'peer-report';
    const r = side.peerReport;
    if (r === null) problems.push('no bandwidth report from the client');
    else {
      try {
        // print_report_bw: the report's iters are iters × num_of_qps.
        checkBwReport(r, rc.durationS > 0 ? { size: rc.size } : { size: rc.size, iters: rc.iters * rc.qps });
        messages = Number(r.iters);
        bytes = rc.size * messages;
        mpps = r.msgRateAvg;
        seconds = mpps > 0 ? messages / (mpps * 1e6) : 0;
        gbps = (mpps * 1e6 * rc.size * 8) / 1e9;
        // bw_peak in the client's unit (--report_gbits is symmetric: both ends are given it); 0 when not measured.
        peak = r.bwPeak > 0 ? (r.bwPeak * bwFormatFactor(side.cfg.reportGbits === true) * 8) / 1e9 : null;
      } catch (e) {
        problems.push((e as Error).message);
      }
    }
  } else if (rc.duplex) {
    // -b: the peer's report of its own direction; perftest prints the sum of both.
    const r = side.peerReport;
    if (r === null) problems.push('no bandwidth report from the peer');
    else {
      try {
        checkBwReport(r, { size: rc.size, iters: rc.iters * rc.qps });
        peerDirection = { messages: Number(r.iters), gbps: round((r.msgRateAvg * 1e6 * rc.size * 8) / 1e9) };
      } catch (e) {
        problems.push((e as Error).message);
      }
    }
  } else if (rc.lat && (rc.verb === Verb.READ || rc.verb === Verb.ATOMIC) && rc.role === 'server') {
    measured = 'none';
    bytes = 0;
    messages = 0;
    seconds = 0;
    mpps = 0;
    gbps = 0;
  }
  const health = { problems: [] as string[], warnings: [] as string[] };
  side.qps.forEach((q, i) => {
    const h = qpHealth(q);
    const name = side.qps.length > 1 ? `QP ${i}: ` : '';
    health.problems.push(...h.problems.map((p) => name + p));
    health.warnings.push(...h.warnings.map((w) => name + w));
  });
  problems.push(...health.problems);
  const mismatches = v?.mismatches ?? 0;
  const verifyFailed = rc.verify && mismatches > 0;
  const out = oob.log.filter((l) => l.dir === 'out');
  const inn = oob.log.filter((l) => l.dir === 'in');
  return {
    ok: problems.length === 0 && !verifyFailed,
    ...connectionInfo(side, rc, side.peerVersion?.text ?? oob.peerVersion.text),
    msgSize: rc.size,
    iterations: rc.durationS > 0 ? m.posted || messages : rc.iters,
    durationS: rc.durationS > 0 ? rc.durationS : null,
    bytes,
    messages,
    seconds: round(seconds, 9),
    gbps: round(gbps),
    peakGbps: peak === null ? null : round(peak),
    mpps: round(mpps),
    latencyUs: rc.lat ? latencyStats(m.latSamplesNs.map((ns) => ns / 1000)) : null,
    measured,
    sizes: side.sizeResults,
    bidirectional: peerDirection === null ? null : { peer: peerDirection, gbpsBothWays: round(gbps + peerDirection.gbps) },
    verify: { enabled: rc.verify, bytesChecked: v?.bytesChecked ?? 0, mismatches },
    counters: nonZeroCounters(side.qps.reduce((sum, q) => addCounters(sum, q.counters), newCounters())),
    oob: { messagesOut: out.length, messagesIn: inn.length, bytesOut: out.reduce((a, l) => a + l.bytes, 0), bytesIn: inn.reduce((a, l) => a + l.bytes, 0) },
    warmUp: side.warmUp,
    problems,
    warnings: health.warnings,
  };
}

/** The connection `side` made (after the exchange, before the measured loop), as perftest prints it. */
export function connectionInfo(side: PerftestSide, rc: ResolvedConfig, peerVersion: string): PerftestConnectionInfo {
  const r = side.remote;
  const mr = side.mr;
  const qp = side.qp;
  const gid = side.dev.gids[rc.gidIndex] as Uint8Array;
  return {
    test: perftestBinary(rc.verb, rc.lat),
    role: rc.role,
    verb: rc.verb,
    lat: rc.lat,
    mtu: mtuBytes(side.agreedMtu),
    rdmaCm: rc.rdmaCm,
    peerVersion,
    qps: rc.qps,
    connection: rc.connection,
    qpPairs: side.qps.map((q, i) => ({
      local: { qpn: q.qpNum, psn: side.psns[i] ?? 0 },
      remote: { qpn: side.remotes[i]?.qpn ?? 0, psn: side.remotes[i]?.psn ?? 0 },
    })),
    local: {
      qpn: qp?.qpNum ?? 0,
      psn: side.psn,
      gid: ipv6ToString(gid),
      rkey: mr?.rkey ?? 0,
      vaddr: `0x${(mr !== null && side.layout !== null ? mr.addr(side.layout.targetBase(0)) : 0n).toString(16)}`,
    },
    remote: {
      qpn: r?.qpn ?? 0,
      psn: r?.psn ?? 0,
      gid: r?.gid ? ipv6ToString(r.gid) : '',
      rkey: r?.rkey ?? 0,
      vaddr: `0x${(r?.vaddr ?? 0n).toString(16)}`,
      outReads: r?.outReads ?? 0,
    },
  };
}
