/**
 * `roce demo`: the main job on the embedded default. Two RoCE v2 endpoints in
 * one process over the in-memory link, a mixed RC workload on several QPs
 * with seeded loss, every byte verified, a trace of the interesting moments,
 * a per-QP summary, and the whole conversation written to a pcap.
 */
import * as path from 'node:path';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { parseCommand } from './command';
import type { Output } from './output';
import { OUTPUT_FILE_STATUS, outputFileWritable, writeOutputFile } from './output-file';
import { createSimPair } from '../apps/sim/sim-pair';
import { runWorkload, type WorkloadResult } from '../apps/sim/workload';
import { demoRecoveryFigures } from '../apps/sim/demo-figures';
import { PcapTap } from '../nic-driver/pcap-tap';
import { mtuFromBytes, type Mtu } from '../stack/mtu';
import type { TraceEvent } from '../stack/trace';
import { NAK_CODE_NAMES } from '../packets/aeth';
import { RECOVERY_TRIGGER_WORDS, recoveryText } from '../base/recovery-trigger';

export const DEMO_OPTIONS: readonly OptionSpec[] = [
  { name: 'loss', kind: 'string', value: 'P', help: 'packet loss each way, as a fraction (0.01) or percent (1%); default 1%' },
  { name: 'seed', kind: 'string', value: 'N', help: 'seed for the workload and the faults (default 1)' },
  { name: 'bytes', kind: 'string', value: 'N', help: 'payload bytes to move, with an optional K/M suffix (default 2M)' },
  { name: 'mtu', kind: 'string', value: 'N', help: 'path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)' },
  { name: 'qps', kind: 'string', value: 'N', help: 'RC QP pairs (default 4)' },
  {
    name: 'pcap',
    kind: 'string',
    value: 'FILE',
    help: 'where to write the capture (default demo.pcap in the current directory, as tcpdump -w would; "-" for none)',
  },
  { name: 'trace', kind: 'string', value: 'N', help: 'trace lines to print (default 25; 0 for none)' },
  { name: 'json', kind: 'flag', help: 'print one JSON summary object instead of the text report' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const DEMO_USAGE = `usage: roce demo [options]

Runs two RoCE v2 stacks in this process over an in-memory link with seeded
faults: SEND/RECV, RDMA WRITE (with immediate), READ, compare-and-swap and
fetch-and-add on several RC QPs, every byte checked at the end. Deterministic:
the same seed gives the same frames. Needs no root and no native code.

${formatOptions(DEMO_OPTIONS)}

Exit status: 0 when every completion succeeded and every byte verified, 1 when
not (the reason is printed), 2 on a usage error or when the --pcap file cannot be
written (one line naming it).`;

/** The capture's default path, relative to the current directory: never inside an installed package. */
export const DEFAULT_DEMO_PCAP = 'demo.pcap';

function parseLoss(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(text.trim());
  const v = m === null ? NaN : Number(m[1]) / (m[2] === '%' ? 100 : 1);
  if (!Number.isFinite(v) || v < 0 || v > 1) throw new UsageError(`--loss must be a fraction 0..1 or a percentage 0%..100%, not ${JSON.stringify(text)}`);
  return v;
}

function parseBytes(text: string): number {
  const m = /^(\d+)([kKmMgG]?)$/.exec(text.trim());
  if (m === null) throw new UsageError(`--bytes must be a number with an optional K, M or G suffix, not ${JSON.stringify(text)}`);
  const mult = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(m[2] ?? '').toLowerCase()] ?? 1;
  const v = Number(m[1]) * mult;
  if (v < 1 || v > 1024 ** 3) throw new UsageError('--bytes must be from 1 byte to 1G');
  return v;
}

const us = (ns: number): string => `${(ns / 1000).toFixed(1).padStart(9)} us`;

function describe(e: TraceEvent, side: string): string {
  const who = `${side} QP 0x${e.qpn.toString(16)}`;
  switch (e.kind) {
    case 'nak-sent':
      return `${us(e.timeNs)}  ${who}  sends NAK (${NAK_CODE_NAMES[e.code] ?? e.code}) for PSN ${e.psn}: ${e.reason}`;
    case 'rnr-nak-sent':
      return `${us(e.timeNs)}  ${who}  sends RNR NAK for PSN ${e.psn}: no receive posted (timer code ${e.timerCode})`;
    case 'nak-received':
      return `${us(e.timeNs)}  ${who}  receives NAK (${NAK_CODE_NAMES[e.code] ?? e.code}) at PSN ${e.psn}`;
    case 'rnr-nak-received':
      return `${us(e.timeNs)}  ${who}  receives RNR NAK at PSN ${e.psn}: waits ${e.waitUs} us`;
    case 'timeout':
      return `${us(e.timeNs)}  ${who}  local ACK timeout at PSN ${e.psn} (${e.retriesLeft} retries left)`;
    case 'retransmit':
      return `${us(e.timeNs)}  ${who}  go-back-N from PSN ${e.fromPsn} (${RECOVERY_TRIGGER_WORDS[e.cause]})`;
    case 'qp-error':
      return `${us(e.timeNs)}  ${who}  moves to ERR: ${e.reason}`;
  }
}

export async function demoCommand(argv: readonly string[], out: Output): Promise<number> {
  const args = parseCommand(argv, out, { name: 'demo', options: DEMO_OPTIONS, usage: DEMO_USAGE, operands: 'none' });
  if (args === null) return 0;
  const loss = parseLoss(args.values.get('loss') ?? '1%');
  const seed = intValue(args.values.get('seed') ?? '1', 'seed', 0, 0xffffffff);
  const bytes = parseBytes(args.values.get('bytes') ?? '2M');
  const mtuBytes = intValue(args.values.get('mtu') ?? '1024', 'mtu', 256, 4096);
  const pathMtu = mtuFromBytes(mtuBytes);
  if (pathMtu === undefined) throw new UsageError(`--mtu must be 256, 512, 1024, 2048 or 4096, not ${mtuBytes}`);
  const qps = intValue(args.values.get('qps') ?? '4', 'qps', 1, 256);
  const traceMax = intValue(args.values.get('trace') ?? '25', 'trace', 0, 1_000_000);
  const pcapArg = args.values.get('pcap');
  const pcapPath = pcapArg === '-' ? null : (pcapArg ?? DEFAULT_DEMO_PCAP);
  const json = args.flags.has('json');
  if (pcapPath !== null && !outputFileWritable('demo', pcapPath, out)) return OUTPUT_FILE_STATUS;

  const tap = pcapPath === null ? undefined : new PcapTap({ where: 'host-a' });
  const f = { drop: loss };
  const sim = createSimPair({ seed, faults: { aToB: f, bToA: f }, ...(tap ? { tap } : {}) });
  const lines: string[] = [];
  let traced = 0;
  const listen =
    (side: string) =>
    (e: TraceEvent): void => {
      traced++;
      if (lines.length < traceMax) lines.push(describe(e, side));
    };
  sim.a.tracer = listen('A');
  sim.b.tracer = listen('B');
  const t0 = process.hrtime.bigint();
  const r = runWorkload(sim, { seed, qps, bytes, pathMtu: pathMtu as Mtu });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  let pcapFrames = 0;
  if (tap !== undefined && pcapPath !== null) {
    if (!writeOutputFile('demo', pcapPath, tap.bytes(), out)) return OUTPUT_FILE_STATUS;
    pcapFrames = tap.frames;
  }
  const summary = {
    ok: r.ok,
    bytesVerified: r.bytesVerified,
    bytesPlanned: r.bytesPlanned,
    completions: r.completions,
    completionErrors: r.completionErrors,
    errorStatuses: r.errorStatuses,
    ...demoRecoveryFigures(r.totals),
    episodes: r.episodes,
    sentPackets: r.totals.sent_pkts,
    virtualTimeUs: Math.round(r.virtualTimeNs / 1000),
    wallTimeMs: Math.round(wallMs),
    seed,
    loss,
    pathMtu: mtuBytes,
    qps,
    pcap: pcapPath === null ? null : path.relative(process.cwd(), pcapPath) || pcapPath,
    pcapFrames,
    problems: r.problems,
    counters: { A: r.countersA, B: r.countersB },
  };
  if (json) {
    out.stdout(`${JSON.stringify(summary)}\n`);
  } else {
    report(out, r, summary, lines, traced, traceMax);
  }
  if (!r.ok) {
    out.stderr(
      `roce demo: FAILED: ${r.problems[0] ?? 'not every byte was verified'}${
        r.completionErrors > 0
          ? ` (${r.completionErrors} error completions: ${Object.entries(r.errorStatuses)
              .map(([k, v]) => `${v} ${k}`)
              .join(', ')})`
          : ''
      }\n`,
    );
    return 1;
  }
  return 0;
}

function report(
  out: Output,
  r: WorkloadResult,
  s: { loss: number; seed: number; qps: number; pathMtu: number; pcap: string | null; pcapFrames: number; wallTimeMs: number },
  lines: string[],
  traced: number,
  traceMax: number,
): void {
  const mib = (n: number): string => `${(n / 1024 / 1024).toFixed(2)} MiB`;
  out.stdout(
    `roce demo: ${s.qps} RC QP pairs, ${mib(r.bytesPlanned)}, path MTU ${s.pathMtu}, ${(s.loss * 100).toFixed(s.loss < 0.01 ? 2 : 1)}% loss each way, seed ${s.seed}\n`,
  );
  out.stdout(`  A = 198.18.0.1, B = 198.18.0.2, in-memory link, virtual clock\n\n`);
  if (traceMax > 0) {
    out.stdout(`Interesting moments (virtual time)${traced > lines.length ? `, first ${lines.length} of ${traced}` : ''}:\n`);
    out.stdout(lines.length === 0 ? '  none: no loss, no NAK, no timeout\n' : `${lines.map((l) => `  ${l}`).join('\n')}\n`);
    out.stdout('\n');
  }
  out.stdout('Per QP pair (A -> B):\n');
  out.stdout(
    `  ${'QPs'.padEnd(15)} ${'ops'.padStart(5)} ${'bytes'.padStart(9)} ${'compl'.padStart(6)} ${'errors'.padStart(6)} ${'retrans'.padStart(8)}   episodes: ${'NAK'.padStart(4)} ${'RNR'.padStart(4)} ${'timeout'.padStart(7)} ${'implied'.padStart(7)} ${'done at'.padStart(12)}\n`,
  );
  for (const q of r.perQp) {
    const name = `0x${q.qpnA.toString(16)}->0x${q.qpnB.toString(16)}`;
    out.stdout(
      `  ${name.padEnd(15)} ${String(q.ops).padStart(5)} ${String(q.bytes).padStart(9)} ${String(q.completions).padStart(6)} ${String(q.completionErrors).padStart(6)} ${String(q.retransmittedPackets).padStart(8)}             ${String(q.episodes.nak).padStart(4)} ${String(q.episodes.rnr).padStart(4)} ${String(q.episodes.timeout).padStart(7)} ${String(q.episodes.impliedNak).padStart(7)} ${us(q.finishedAtNs)}${q.error ? `  ${q.error}` : ''}\n`,
    );
  }
  out.stdout(`\nLoss recovery: ${recoveryText(r.episodes)} (go-back-N rewinds by what started them; roce analyze counts the capture's the same way)\n`);
  const t = r.totals;
  out.stdout(
    `\nCounters (rxe names, both sides): sent_pkts ${t.sent_pkts}, rcvd_pkts ${t.rcvd_pkts}, retransmitted_pkts ${t.retransmitted_pkts}, out_of_seq_request ${t.out_of_seq_request}, duplicate_request ${t.duplicate_request}, rcvd_seq_err ${t.rcvd_seq_err}, send_rnr_err ${t.send_rnr_err}, rcvd_rnr_err ${t.rcvd_rnr_err}, local_ack_timeout_err ${t.local_ack_timeout_err}, completer_retry_err ${t.completer_retry_err}\n`,
  );
  out.stdout(
    `\nResult: ${r.ok ? 'OK' : 'FAILED'}: ${r.bytesVerified} of ${r.bytesPlanned} bytes verified, ${r.completions} completions, ${r.completionErrors} errors; ${(r.virtualTimeNs / 1e6).toFixed(3)} ms of virtual time in ${s.wallTimeMs} ms\n`,
  );
  if (s.pcap !== null)
    out.stdout(
      `Capture: ${s.pcap} (${s.pcapFrames} frames, taken at A's NIC as tcpdump on A would: A's frames as sent, B's as A received them); look at it with: roce decode ${s.pcap}, or roce analyze ${s.pcap}\n`,
    );
}
