/**
 * `roce sim`: a congestion scenario in simulation: hosts around one output-queued
 * switch, RC flows of RDMA WRITEs between them, DCQCN or no congestion control, RED or threshold
 * ECN marking, PFC, on the virtual clock under a seed (apps/sim/star-scenario.ts). Prints each
 * flow's throughput and the bottleneck queue over time, the CNPs, pauses and drops; `--json` the
 * whole result, `--pcap` every frame the switch sent.
 */
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { parseCommand } from './command';
import type { Output } from './output';
import { type StarFlowSpec, type StarResult, type StarScenario, hostName, runStarScenario } from '../apps/sim/star-scenario';
import type { EcnMarking, EcnMarkingPoint, PfcConfig } from '../nic-driver/star-switch';
import { PcapFileWriter } from '../nic-driver/pcap-file-writer';
import { ccModeParams } from './cc-args';
import { LinkConfigError } from '../nic-driver/link-config-error';
import { VerbsError } from '../stack/errors';
import { type FluidComparison, type FluidFigure, compareWithFluid, fluidUnfit } from '../apps/sim/fluid-comparison';
import { mtuBytes, mtuFromBytes } from '../stack/mtu';

export const SIM_OPTIONS: readonly OptionSpec[] = [
  { name: 'hosts', kind: 'string', value: 'N', help: 'hosts around the switch, named a, b, c, ... (default 3, at most 64)' },
  {
    name: 'flows',
    kind: 'string',
    value: 'LIST',
    help: 'RC flows of RDMA WRITEs, e.g. a>c,b>c; each may add :size=BYTES, :start=TIME, :duration=TIME (default: a>LAST,b>LAST,... every other host into the last)',
  },
  { name: 'link-rate', kind: 'string', value: 'RATE', help: 'line rate of every port, bits/s with K, M or G (default 10G)' },
  { name: 'buffer', kind: 'string', value: 'BYTES', help: 'buffer of each output port, with K or M (1000s; default 1M)' },
  { name: 'propagation', kind: 'string', value: 'TIME', help: 'one-way delay of each link (default 1us)' },
  {
    name: 'ecn',
    kind: 'string',
    value: 'SPEC',
    help: "switch marking: kmin=BYTES,kmax=BYTES,pmax=P (RED), threshold=BYTES, or off (default kmin=5K,kmax=200K,pmax=0.01, the DCQCN paper's); add at=enqueue to mark frames as they join the queue instead of as they leave it (at=dequeue, the default)",
  },
  { name: 'pfc', kind: 'string', value: 'SPEC', help: 'xoff=BYTES,xon=BYTES: pause a host while it has more than xoff queued in the switch (default off)' },
  { name: 'cc', kind: 'string', value: 'MODE', help: "dcqcn (mlx5 defaults), dcqcn-paper (the DCQCN paper's parameters) or none (default dcqcn)" },
  { name: 'cc-param', kind: 'string', value: 'LIST', help: "DCQCN parameters over the mode's, e.g. rp_time_reset=55,rp_ai_rate=40 (mlx5 cc_params names)" },
  { name: 'duration', kind: 'string', value: 'TIME', help: 'simulated time to run, with ns, us, ms or s (default 10ms)' },
  { name: 'seed', kind: 'string', value: 'N', help: 'seed of the marking and the stacks (default 1): the same seed gives the same run' },
  { name: 'msg-size', kind: 'string', value: 'BYTES', help: 'RDMA WRITE size of the flows (default 64K = 65536)' },
  { name: 'outstanding', kind: 'string', value: 'N', help: 'WRITEs each flow keeps posted (default 16)' },
  { name: 'mtu', kind: 'string', value: 'BYTES', help: 'path MTU of the flows: 256, 512, 1024, 2048 or 4096 (default 4096)' },
  { name: 'steady-from', kind: 'string', value: 'TIME', help: 'where the steady-state figures start (default: half the duration)' },
  {
    name: 'converge-window',
    kind: 'string',
    value: 'TIME',
    help: 'the window of the convergence check, a whole number of bins (default: a twentieth of the duration)',
  },
  {
    name: 'stall-window',
    kind: 'string',
    value: 'TIME',
    help: "a flow with WRITEs outstanding that has no frame leave the switch and no WRITE complete for this long is stalled (default: the larger of two bins and four times a full buffer's drain plus the base round trip)",
  },
  { name: 'expect-stalls', kind: 'flag', help: 'stalls are what the scenario shows (a lossy incast, say): report them and exit 0' },
  {
    name: 'fluid',
    kind: 'flag',
    help: "set three DCQCN models beside the steady state (rate, queue, marking probability, CNPs): the fluid model (the paper's equations), the marks model (one reaction point kept discrete under independent marks) and the hybrid model (N reaction points on one fluid queue)",
  },
  { name: 'bin', kind: 'string', value: 'TIME', help: "the figures' time step (default: the duration in 100 steps)" },
  { name: 'json', kind: 'flag', help: 'print the result as one JSON object' },
  { name: 'pcap', kind: 'string', value: 'FILE', help: 'write every frame the switch sends (data leaving its ports, PFC frames) to FILE' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const SIM_USAGE = `usage: roce sim [options]

Runs a congestion scenario in simulation: hosts, each a roce-ts stack, around
one output-queued switch; RC flows of RDMA WRITEs; DCQCN or none; RED or
threshold ECN marking and PFC at the switch. For example:

  roce sim --hosts 3 --flows 'a>c,b>c' --link-rate 10G --buffer 1M \\
    --ecn kmin=5K,kmax=200K,pmax=0.01 --cc dcqcn-paper --duration 20ms --seed 1 --json

${formatOptions(SIM_OPTIONS)}

Exit status: 0 when no flow stalled (or --expect-stalls), no WRITE completed in
error and every flow with a size moved it; 1 when not; 2 on a usage error.`;

const SI: Readonly<Record<string, number>> = { '': 1, k: 1e3, m: 1e6, g: 1e9 };
const TIME: Readonly<Record<string, number>> = { ns: 1, us: 1e3, µs: 1e3, ms: 1e6, s: 1e9 };

/** 10G, 1M, 5K, 200000: a number with an optional K, M or G (powers of 1000). */
export function siValue(text: string, name: string): number {
  const m = /^(\d+(?:\.\d+)?)([kmg]?)$/i.exec(text.trim());
  if (m === null) throw new UsageError(`--${name} must be a number with an optional K, M or G, not ${JSON.stringify(text)}`);
  return Number(m[1]) * (SI[(m[2] ?? '').toLowerCase()] as number);
}

/** 20ms, 100us, 1s, 500ns: a time in ns. */
export function timeValue(text: string, name: string): number {
  const m = /^(\d+(?:\.\d+)?)(ns|us|µs|ms|s)$/.exec(text.trim());
  if (m === null) throw new UsageError(`--${name} must be a time with ns, us, ms or s (e.g. 20ms), not ${JSON.stringify(text)}`);
  return Math.round(Number(m[1]) * (TIME[m[2] as string] as number));
}

/** key=value,key=value into a map (keys checked against `known`). */
function pairs(text: string, name: string, known: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of text.split(',')) {
    const m = /^([a-z_]+)=(.+)$/i.exec(part.trim());
    if (m === null) throw new UsageError(`--${name}: ${JSON.stringify(part)} is not key=value`);
    const k = (m[1] as string).toLowerCase();
    if (!known.includes(k)) throw new UsageError(`--${name}: unknown key ${JSON.stringify(k)} (keys: ${known.join(', ')})`);
    out.set(k, m[2] as string);
  }
  return out;
}

function hostIndex(name: string, hosts: number, flow: string): number {
  const i = /^[a-z]$/.test(name) ? name.charCodeAt(0) - 97 : /^h\d+$/.test(name) ? Number(name.slice(1)) : -1;
  if (i < 0 || i >= hosts)
    throw new UsageError(
      `--flows ${JSON.stringify(flow)}: no host ${JSON.stringify(name)} (hosts: ${Array.from({ length: hosts }, (_, k) => hostName(k)).join(', ')})`,
    );
  return i;
}

/** a>c,b>c:size=1M:start=2ms into flow specs. */
export function flowsValue(text: string, hosts: number): StarFlowSpec[] {
  return text.split(',').map((f) => {
    const [path, ...opts] = f.trim().split(':');
    const m = /^([a-z0-9]+)>([a-z0-9]+)$/.exec(path ?? '');
    if (m === null) throw new UsageError(`--flows: ${JSON.stringify(f)} must look like a>c (with :size=, :start=, :duration= after it)`);
    const src = hostIndex(m[1] as string, hosts, f);
    const dst = hostIndex(m[2] as string, hosts, f);
    if (src === dst) throw new UsageError(`--flows: ${JSON.stringify(f)} goes from a host to itself`);
    const spec: StarFlowSpec = { src, dst };
    for (const [k, v] of opts.length > 0 ? pairs(opts.join(','), 'flows', ['size', 'start', 'duration']).entries() : []) {
      if (k === 'size') spec.bytes = Math.round(siValue(v, 'flows size'));
      else if (k === 'start') spec.startNs = timeValue(v, 'flows start');
      else spec.durationNs = timeValue(v, 'flows duration');
    }
    return spec;
  });
}

function ecnValue(text: string): EcnMarking | null {
  if (text === 'off') return null;
  const p = pairs(text, 'ecn', ['kmin', 'kmax', 'pmax', 'threshold', 'at']);
  const atText = p.get('at');
  p.delete('at');
  if (atText !== undefined && atText !== 'dequeue' && atText !== 'enqueue')
    throw new UsageError(`--ecn: at= is dequeue or enqueue, not ${JSON.stringify(atText)}`);
  const at = atText === undefined ? {} : { at: atText as EcnMarkingPoint };
  const th = p.get('threshold');
  if (th !== undefined) {
    if (p.size > 1) throw new UsageError('--ecn: threshold= stands alone, with at= at most (or give kmin, kmax and pmax for RED)');
    return { kind: 'threshold', kBytes: siValue(th, 'ecn threshold'), ...at };
  }
  const [kmin, kmax, pmax] = [p.get('kmin'), p.get('kmax'), p.get('pmax')];
  if (kmin === undefined || kmax === undefined || pmax === undefined) throw new UsageError('--ecn: RED needs kmin=, kmax= and pmax= (or threshold=, or off)');
  const pm = Number(pmax);
  if (!(pm >= 0 && pm <= 1)) throw new UsageError(`--ecn: pmax must be 0..1, not ${JSON.stringify(pmax)}`);
  return { kind: 'red', kminBytes: siValue(kmin, 'ecn kmin'), kmaxBytes: siValue(kmax, 'ecn kmax'), pmax: pm, ...at };
}

function pfcValue(text: string): PfcConfig | null {
  if (text === 'off') return null;
  const p = pairs(text, 'pfc', ['xoff', 'xon']);
  const [xoff, xon] = [p.get('xoff'), p.get('xon')];
  if (xoff === undefined || xon === undefined) throw new UsageError('--pfc needs xoff= and xon= (or off)');
  return { xoffBytes: siValue(xoff, 'pfc xoff'), xonBytes: siValue(xon, 'pfc xon') };
}

export async function simCommand(argv: readonly string[], out: Output): Promise<number> {
  const args = parseCommand(argv, out, { name: 'sim', options: SIM_OPTIONS, usage: SIM_USAGE, operands: 'none' });
  if (args === null) return 0;
  const v = (name: string): string | undefined => args.values.get(name);
  const hosts = intValue(v('hosts') ?? '3', 'hosts', 2, 64);
  const last = hostName(hosts - 1);
  const flows = flowsValue(v('flows') ?? Array.from({ length: hosts - 1 }, (_, i) => `${hostName(i)}>${last}`).join(','), hosts);
  const cc = v('cc') ?? 'dcqcn';
  if (cc === 'off') throw new UsageError('--cc must be dcqcn, dcqcn-paper or none, not "off"');
  const ccParams = ccModeParams(cc, v('cc-param'));
  const durationNs = timeValue(v('duration') ?? '10ms', 'duration');
  if (durationNs < 1000 || durationNs > 10e9) throw new UsageError('--duration must be 1us..10s');
  const scenario: StarScenario = {
    hosts,
    flows,
    linkRateBps: siValue(v('link-rate') ?? '10G', 'link-rate'),
    bufferBytes: siValue(v('buffer') ?? '1M', 'buffer'),
    propagationNs: timeValue(v('propagation') ?? '1us', 'propagation'),
    ecn: ecnValue(v('ecn') ?? 'kmin=5K,kmax=200K,pmax=0.01'),
    pfc: pfcValue(v('pfc') ?? 'off'),
    cc: ccParams === null ? 'none' : 'dcqcn',
    ...(ccParams !== null ? { ccParams } : {}),
    durationNs,
    seed: intValue(v('seed') ?? '1', 'seed', 0, 2 ** 31 - 1),
    messageBytes: Math.round(siValue(v('msg-size') ?? '65536', 'msg-size')),
    outstanding: intValue(v('outstanding') ?? '16', 'outstanding', 1, 4096),
    ...(v('bin') !== undefined ? { binNs: timeValue(v('bin') as string, 'bin') } : {}),
    ...(v('steady-from') !== undefined ? { steadyFromNs: timeValue(v('steady-from') as string, 'steady-from') } : {}),
    ...(v('converge-window') !== undefined ? { convergeWindowNs: timeValue(v('converge-window') as string, 'converge-window') } : {}),
    ...(v('stall-window') !== undefined ? { stallWindowNs: timeValue(v('stall-window') as string, 'stall-window') } : {}),
    ...(args.flags.has('expect-stalls') ? { expectStalls: true } : {}),
  };
  if (scenario.stallWindowNs !== undefined && !(scenario.stallWindowNs > 0)) throw new UsageError('--stall-window must be more than 0');
  if (scenario.convergeWindowNs !== undefined && !(scenario.convergeWindowNs > 0 && scenario.convergeWindowNs <= durationNs))
    throw new UsageError('--converge-window must be more than 0 and at most --duration');
  const mtu = v('mtu');
  if (mtu !== undefined) {
    const code = mtuFromBytes(Number(mtu));
    if (code === undefined || String(mtuBytes(code)) !== mtu) throw new UsageError(`--mtu must be 256, 512, 1024, 2048 or 4096, not ${JSON.stringify(mtu)}`);
    scenario.pathMtu = code;
  }
  if (scenario.steadyFromNs !== undefined && scenario.steadyFromNs >= durationNs) throw new UsageError('--steady-from must be before the end of --duration');
  const wantFluid = args.flags.has('fluid');
  if (wantFluid) {
    const why = fluidUnfit(scenario);
    if (why !== null) throw new UsageError(`--fluid: ${why}`);
  }
  if (!(scenario.messageBytes! >= 1 && scenario.messageBytes! <= 1 << 30)) throw new UsageError('--msg-size must be 1 byte..1G');
  const pcapPath = v('pcap');
  const pcap = pcapPath !== undefined ? PcapFileWriter.open(pcapPath) : null;
  // Frames are stamped from a fixed epoch (the simulation's t = 0 is 2023-11-14 22:13:20 UTC).
  if (pcap !== null) scenario.capture = (frame, t) => pcap.write(frame, 1_700_000_000_000_000_000n + BigInt(Math.round(t)));
  let r: StarResult;
  try {
    r = runStarScenario(scenario);
  } catch (e) {
    if (e instanceof LinkConfigError || e instanceof VerbsError) throw new UsageError(e.message);
    throw e;
  } finally {
    pcap?.close();
  }
  // The models take every flow as moving for the whole run: beside a run where some stalled, their
  // per-flow figures would be another scenario's.
  const fluidSkipped =
    wantFluid && r.stalled.length > 0
      ? `not set beside this run: ${r.stalled.length} of ${r.flows.length} flows stalled (${r.stalled.join(', ')}), and the models take every flow as moving`
      : null;
  const fluid = wantFluid && fluidSkipped === null ? compareWithFluid(scenario, r) : null;
  if (args.flags.has('json')) out.stdout(`${JSON.stringify(fluid !== null ? { ...r, fluid } : fluidSkipped !== null ? { ...r, fluidSkipped } : r)}\n`);
  else {
    report(out, r, scenario, cc);
    if (fluid !== null) reportFluid(out, fluid);
    if (fluidSkipped !== null) out.stdout(` models: ${fluidSkipped}\n`);
  }
  return r.ok ? 0 : 1;
}

function report(out: Output, r: StarResult, s: StarScenario, mode: string): void {
  out.stdout(
    `roce sim: ${r.hosts.length} hosts around one switch, ${s.linkRateBps / 1e9} Gb/s ports, ${s.bufferBytes} B buffers, ${r.durationUs} µs, seed ${r.seed}, congestion control ${s.cc === 'none' ? 'none' : mode}\n`,
  );
  const rows = 10;
  const step = Math.max(1, Math.round((r.queue.overTime.length || 1) / rows));
  const head = ['time µs', ...r.flows.map((f) => `${f.name} Gb/s`), `queue ${r.queue.port} B`];
  out.stdout(`${head.map((h) => h.padStart(12)).join(' ')}\n`);
  for (let i = step - 1; i < r.queue.overTime.length; i += step) {
    const t = r.queue.overTime[i]?.[0] ?? 0;
    const cells = [t.toFixed(0), ...r.flows.map((f) => (f.gbpsOverTime[i]?.[1] ?? 0).toFixed(3)), String(r.queue.overTime[i]?.[1] ?? 0)];
    out.stdout(`${cells.map((c) => c.padStart(12)).join(' ')}\n`);
  }
  for (const f of r.flows) {
    out.stdout(
      ` flow ${f.name}: ${f.state}, ${f.bytes} bytes, ${f.meanGbps.toFixed(3)} Gb/s mean${f.problems.length > 0 ? ` (${f.problems.join('; ')})` : ''}\n`,
    );
    for (const x of f.stalls)
      out.stdout(`  stalled ${x.untilUs === null ? `since ${x.sinceUs} µs to the end` : `${x.sinceUs}..${x.untilUs} µs`}: ${x.reason}, ${x.detail}\n`);
  }
  out.stdout(` queue ${r.queue.port}: max ${r.queue.maxBytes} B, mean ${r.queue.meanBytes} B\n`);
  out.stdout(
    ` ECN marked ${r.ecnMarked}, CNPs sent ${r.cnpsSent}, handled ${r.cnpsHandled}, PFC pauses ${r.pfcPauses}${r.pfcPausesUs !== null ? ` (${r.pfcPausesUs.first}..${r.pfcPausesUs.last} µs)` : ''}, drops ${r.drops}, retransmissions ${r.retransmissions}\n`,
  );
  const st = r.steady;
  const cover =
    st.flows.length > 0
      ? `flows ${st.flows.map((name, i) => `${name} ${(st.flowsGbps[i] ?? 0).toFixed(2)}`).join(', ')} Gb/s (Jain ${(st.jainIndex ?? 1).toFixed(3)})`
      : 'no flow had work over the whole window without a stall';
  out.stdout(
    ` steady state ${st.fromUs}..${st.toUs} µs: ${cover}, queue mean ${st.queueMeanBytes} B, ${st.frames} frames, ${(st.markProbability * 100).toFixed(3)} % marked, ${st.cnpsPerFlowPerMs.toFixed(2)} CNPs per flow per ms\n`,
  );
  const at = (x: number | null): string => (x === null ? 'never' : `${x} µs`);
  const c = r.convergence;
  out.stdout(
    ` convergence (every flow within ${c.tolerance * 100} % of the flows' mean over ${c.windowUs} µs windows): first at ${at(c.firstUs)}, for good at ${at(c.sustainedUs)}, ${(c.windowsWithin * 100).toFixed(0)} % of the windows since the first\n`,
  );
  out.stdout(`${verdict(r)}\n`);
}

/** The run's verdict in one line: stalled flows by name, or the problems, or ok. */
function verdict(r: StarResult): string {
  const stalls = `${r.stalled.length} of ${r.flows.length} flows stalled (${r.stalled.join(', ')}; stall window ${r.stallWindowUs} µs)`;
  const problems = r.flows.filter((f) => f.problems.length > 0).map((f) => f.name);
  const also = problems.length > 0 ? `; problems in ${problems.join(', ')}` : '';
  if (r.stalled.length > 0 && r.stallsExpected) return `${r.ok ? 'ok' : 'not ok'}: ${stalls}, as the scenario expects (--expect-stalls)${also}`;
  if (r.stalled.length > 0) return `not ok: ${stalls}${also}`;
  if (!r.ok) return `not ok: problems in ${problems.join(', ')}`;
  return `ok: no flow stalled (stall window ${r.stallWindowUs} µs)`;
}

function reportFluid(out: Output, f: FluidComparison): void {
  const m = f.model;
  // A model's figure of 0 (no queue in a window too short to settle) has no relative difference.
  const pct = (x: number): string => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %` : 'n/a');
  const row = (name: string, fig: FluidFigure | null, fmt: (x: number) => string, model = 'fixed point'): void => {
    if (fig !== null) out.stdout(`  ${name.padEnd(18)} sim ${fmt(fig.sim).padStart(12)}   ${model} ${fmt(fig.fluid).padStart(12)}   ${pct(fig.difference)}\n`);
  };
  const gbps = (x: number): string => `${x.toFixed(2)} Gb/s`;
  const bytes = (x: number): string => `${Math.round(x)} B`;
  const percent = (x: number): string => `${(x * 100).toFixed(3)} %`;
  const perMs = (x: number): string => `${x.toFixed(2)} /ms`;
  out.stdout(
    ` fluid model: ${m.flows} flows, ${m.linkRateBps / 1e9} Gb/s, ${m.packetWireBytes} B packets on the wire, feedback delay ${m.feedbackDelayUs.toFixed(2)} µs\n`,
  );
  if (f.fixedPoint === null) out.stdout("  no fixed point on RED's slope: the model's queue sits above kmax\n");
  else {
    row('rate per flow', f.rateGbps, gbps);
    row('queue', f.queueBytes, bytes);
    row('marked', f.markProbability, percent);
    row('CNPs per flow', f.cnpsPerFlowPerMs, perMs);
    if (f.cnpsPerMark !== null) {
      row('CNPs per mark', f.cnpsPerMark, (x) => x.toFixed(3));
      out.stdout(`  ${''.padEnd(18)} independent marks at the run's mark rate, the NP's rule: ${f.cnpsPerMark.independent.toFixed(3)}\n`);
    }
    out.stdout(
      `  the equations run in time: queue ${Math.round(f.run.meanQueueBytes)} B mean (${Math.round(f.run.minQueueBytes)}..${Math.round(f.run.maxQueueBytes)}), ${(f.run.meanMarkProbability * 100).toFixed(3)} % marked, ${f.run.meanRateGbps.toFixed(2)} Gb/s per flow\n`,
    );
  }
  const mk = f.marks;
  if (mk.fixedPoint === null) out.stdout(" marks model (each reaction point discrete, marks independent, the queue fluid): no fixed point on RED's slope\n");
  else {
    out.stdout(` marks model (each reaction point discrete, marks independent, the queue fluid; ${mk.fixedPoint.decreases} rate cuts at each p):\n`);
    row('rate per flow', mk.rateGbps, gbps);
    row('queue', mk.queueBytes, bytes);
    row('marked', mk.markProbability, percent);
    row('CNPs per flow', mk.cnpsPerFlowPerMs, perMs);
    row('CNPs per mark', mk.cnpsPerMark, (x) => x.toFixed(3));
  }
  const hy = f.hybrid;
  out.stdout(` hybrid model (N discrete reaction points on one fluid queue, the run's window, mean of ${hy.seeds} seeds):\n`);
  row('rate per flow', hy.rateGbps, gbps, 'model');
  row('queue', hy.queueBytes, bytes, 'model');
  row('marked', hy.markProbability, percent, 'model');
  row('CNPs per flow', hy.cnpsPerFlowPerMs, perMs, 'model');
  out.stdout(
    `  ${''.padEnd(18)} the model's queue ${hy.queueMinBytes}..${hy.queueMaxBytes} B, ${(hy.aboveKmax * 100).toFixed(2)} % of its packets sent above kmax\n`,
  );
}
