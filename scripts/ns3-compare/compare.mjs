#!/usr/bin/env node
/**
 * `roce sim` against HPCC's ns-3 (`rdma-hw`, DCQCN in its mlx5 form), one scenario:
 * one switch, 9 hosts at 10 Gb/s on 1 µs links, 8 flows into host 8, the parameters HPCC's
 * run.py writes for `--cc dcqcn --bw 10`.
 *
 *   (a) 8 long flows: the bottleneck queue's distribution from 10 ms to 30 ms, and the PFC pauses;
 *   (b) 8 flows of 5 MB starting together: each flow's completion time.
 *
 * Writes the ns-3 topology, flow and config files into a work directory, runs ns-3's
 * `scratch/third` (as run.py sets it, and without hyper increase) and `roce sim` for both, under
 * seeds 1..N, and prints one markdown table.
 *
 *   node scripts/ns3-compare/compare.mjs --ns3 /path/to/High-Precision-Congestion-Control [--work DIR]
 *
 * The ns-3 tree must be built already (`./waf build` in its simulation/ directory); the roce-ts
 * CLI too (`npm run build`). docs/congestion.md ("Against HPCC's ns-3") explains every setting.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '..', '..');

// ---- the scenario --------------------------------------------------------------------------

const HOSTS = 9; // nodes 0..8 are hosts, node 9 the switch
const SWITCH = HOSTS;
const RECEIVER = HOSTS - 1;
const SENDERS = HOSTS - 1;
const RATE_GBPS = 10;
const LINK_DELAY_MS = 0.001; // 1 µs
/** ns-3 starts the flows here (s); the queue monitor dumps only at multiples of 100 ms, so the run ends at 0.1 s. */
const T0_S = 0.07;
const RUN_MS = 30;
const STEADY_FROM_MS = 10;
const LONG_BYTES = 200_000_000;
const FINITE_BYTES = 5_000_000;

/** run.py at bw=10 (python 2 integer division): the DCQCN column of HPCC's config template. */
const NS3 = {
  payload: 1000,
  kminKB: (100 * RATE_GBPS) / 25, // 40
  kmaxKB: (400 * RATE_GBPS) / 25, // 160
  pmax: 0.2,
  bufferMB: Math.floor((16 * RATE_GBPS) / 50), // 3 (MiB: third.cc multiplies by 1024 * 1024)
  alphaResumeUs: 1,
  rateDecreaseUs: 4,
  rpTimerUs: 300,
  ewmaGain: 0.00390625,
  fastRecoveryTimes: 1,
  rateAiMbps: Math.floor((5 * RATE_GBPS) / 25), // 2
  rateHaiMbps: Math.floor((50 * RATE_GBPS) / 25), // 20
  minRateMbps: 1000,
  clampTargetRate: 0,
  ackHighPrio: 1,
};

/**
 * The static PFC thresholds that match ns-3's dynamic one (switch-mmu.cc) when the 8 senders hold
 * equal shares. ns-3 pauses an ingress port when its shared bytes (ingress bytes above the 4 KiB
 * reserve) reach (buffer − headroom − reserves − all shared bytes) >> pfc_a_shift; third.cc sets
 * the shift to 3 (α = 1/8) and each port's headroom to 3 × rate × delay. With 8 equal shares S:
 * S = (A − 8S)/8, so S = A/16. It resumes when S + 3 KiB ≤ the threshold: S ≤ (A − 8·3072)/16.
 */
function pfcEquivalent() {
  const buffer = NS3.bufferMB * 1024 * 1024;
  const headroom = Math.floor((RATE_GBPS * 1e9 * (LINK_DELAY_MS * 1e6)) / 8 / 1e9) * 3;
  const reserve = 4 * 1024;
  const resumeOffset = 3 * 1024;
  const a = buffer - HOSTS * headroom - HOSTS * reserve;
  const xoff = reserve + Math.ceil(a / 16) - 1; // roce sim pauses above xoff
  const xon = reserve + Math.floor((a - SENDERS * resumeOffset) / 16) + 1; // and resumes below xon
  return { buffer, headroom, reserve, shared: a, xoff, xon, oneHost: reserve + Math.floor(a / 9) };
}

/** ns-3's DCQCN onto mlx5's cc_params (stack/congestion/parameters.ts). */
const CC_PARAMS = {
  rp_time_reset: NS3.rpTimerUs,
  rp_ai_rate: NS3.rateAiMbps,
  rp_hai_rate: NS3.rateHaiMbps,
  rp_min_rate: NS3.minRateMbps,
  rp_threshold: NS3.fastRecoveryTimes,
  rp_clamp_tgt_rate: NS3.clampTargetRate,
  rp_clamp_tgt_rate_ati: 1,
  rp_dce_tcp_g: 1024 - Math.round(NS3.ewmaGain * 1024),
  rp_dce_tcp_rtt: NS3.alphaResumeUs,
  rp_rate_reduce_monitor_period: NS3.rateDecreaseUs,
  rp_byte_reset: 4294967295,
  rp_initial_alpha_value: 1023,
  rp_min_dec_fac: 50,
  rp_gd: 11,
  np_min_time_between_cnps: 0,
};

// ---- arguments and checks ------------------------------------------------------------------

function fail(msg) {
  process.stderr.write(`ns3-compare: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const out = { ns3: null, work: null, timeoutS: 1800, roceOnly: false, seeds: 3 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      const v = argv[++i];
      if (v === undefined) fail(`${a} needs a value`);
      return v;
    };
    if (a === '--ns3') out.ns3 = val();
    else if (a === '--work') out.work = val();
    else if (a === '--timeout') out.timeoutS = Number(val());
    else if (a === '--roce-only') out.roceOnly = true;
    else if (a === '--seeds') out.seeds = Number(val());
    else if (a === '-h' || a === '--help') {
      process.stdout.write(
        'usage: node scripts/ns3-compare/compare.mjs --ns3 HPCC_TREE [--work DIR] [--seeds N] [--timeout SECONDS]\n  runs seeds 1..N of both (default 3; ns-3 through NS_GLOBAL_VALUE=RngRun=N)\n       node scripts/ns3-compare/compare.mjs --roce-only [--work DIR]   (the roce sim column alone)\n  HPCC_TREE: a built clone of alibaba-edu/High-Precision-Congestion-Control (or its simulation/ directory)\n',
      );
      process.exit(0);
    } else fail(`unknown argument ${JSON.stringify(a)} (try --help)`);
  }
  if (out.ns3 === null && !out.roceOnly) fail('give the HPCC ns-3 tree with --ns3 PATH (a clone of alibaba-edu/High-Precision-Congestion-Control, built)');
  if (!(out.timeoutS > 0)) fail('--timeout must be a positive number of seconds');
  if (!(Number.isInteger(out.seeds) && out.seeds >= 1 && out.seeds <= 20)) fail('--seeds must be 1..20');
  return out;
}

/** The simulation/ directory and the built `third` program, or a clear failure. */
function findNs3(path) {
  const root = resolve(path);
  if (!existsSync(root)) fail(`${root} does not exist`);
  const sim = existsSync(join(root, 'simulation', 'scratch', 'third.cc')) ? join(root, 'simulation') : root;
  if (!existsSync(join(sim, 'scratch', 'third.cc'))) fail(`${root} is not HPCC's ns-3 tree: no simulation/scratch/third.cc`);
  if (!existsSync(join(sim, 'src', 'point-to-point', 'model', 'rdma-hw.cc'))) fail(`${sim} has no src/point-to-point/model/rdma-hw.cc: not HPCC's ns-3`);
  const scratch = join(sim, 'build', 'scratch');
  const programs = existsSync(scratch) ? readdirSync(scratch).filter((f) => /^(ns3[.\d]*-)?third(-optimized|-debug)?$/.test(f)) : [];
  if (programs.length === 0) {
    fail(
      `ns-3 is not built: no build/scratch/third program in ${sim} (build it there: ./waf configure -d optimized --disable-examples --disable-tests --disable-python && ./waf build; see scripts/ns3-compare/README.md)`,
    );
  }
  const program = join(scratch, programs.find((p) => p.includes('optimized')) ?? programs[0]);
  const libs = readdirSync(join(sim, 'build')).filter((f) => /^libns3.*\.so$/.test(f));
  if (libs.length === 0) fail(`ns-3 is not built: no libns3*.so in ${join(sim, 'build')}`);
  return { sim, program, libDir: join(sim, 'build') };
}

// ---- ns-3 ----------------------------------------------------------------------------------

function writeNs3Inputs(dir, name, bytes, monitor, haiMbps) {
  // name carries the seed: every run has its own outputs.
  const topo = join(dir, `topology.txt`);
  const links = Array.from({ length: HOSTS }, (_, h) => `${h} ${SWITCH} ${RATE_GBPS}Gbps ${LINK_DELAY_MS}ms 0`);
  writeFileSync(topo, `${HOSTS + 1} 1 ${HOSTS}\n${SWITCH}\n${links.join('\n')}\n`);
  writeFileSync(join(dir, 'trace.txt'), '0\n');
  const flows = Array.from({ length: SENDERS }, (_, h) => `${h} ${RECEIVER} 3 100 ${bytes} ${T0_S}`);
  writeFileSync(join(dir, `flow-${name}.txt`), `${flows.length}\n${flows.join('\n')}\n`);
  const bps = RATE_GBPS * 1e9;
  const out = (f) => join(dir, `${f}-${name}.txt`);
  const config = [
    'ENABLE_QCN 1',
    'USE_DYNAMIC_PFC_THRESHOLD 1',
    `PACKET_PAYLOAD_SIZE ${NS3.payload}`,
    `TOPOLOGY_FILE ${topo}`,
    `FLOW_FILE ${join(dir, `flow-${name}.txt`)}`,
    `TRACE_FILE ${join(dir, 'trace.txt')}`,
    `TRACE_OUTPUT_FILE ${out('mix')}`,
    `FCT_OUTPUT_FILE ${out('fct')}`,
    `PFC_OUTPUT_FILE ${out('pfc')}`,
    `SIMULATOR_STOP_TIME ${monitor.stopS}`,
    'CC_MODE 1',
    `ALPHA_RESUME_INTERVAL ${NS3.alphaResumeUs}`,
    `RATE_DECREASE_INTERVAL ${NS3.rateDecreaseUs}`,
    `CLAMP_TARGET_RATE ${NS3.clampTargetRate}`,
    `RP_TIMER ${NS3.rpTimerUs}`,
    `EWMA_GAIN ${NS3.ewmaGain}`,
    `FAST_RECOVERY_TIMES ${NS3.fastRecoveryTimes}`,
    `RATE_AI ${NS3.rateAiMbps}Mb/s`,
    `RATE_HAI ${haiMbps}Mb/s`,
    `MIN_RATE ${NS3.minRateMbps}Mb/s`,
    'DCTCP_RATE_AI 1000Mb/s',
    'ERROR_RATE_PER_LINK 0.0000',
    'L2_CHUNK_SIZE 4000',
    'L2_ACK_INTERVAL 1',
    'L2_BACK_TO_ZERO 0',
    'HAS_WIN 0',
    'GLOBAL_T 1',
    'VAR_WIN 0',
    'FAST_REACT 0',
    'U_TARGET 0.95',
    'MI_THRESH 0',
    'INT_MULTI 1',
    'MULTI_RATE 0',
    'SAMPLE_FEEDBACK 0',
    'PINT_LOG_BASE 1.01',
    'PINT_PROB 1.0',
    'RATE_BOUND 1',
    `ACK_HIGH_PRIO ${NS3.ackHighPrio}`,
    'LINK_DOWN 0 0 0',
    'ENABLE_TRACE 0',
    `KMAX_MAP 1 ${bps} ${NS3.kmaxKB}`,
    `KMIN_MAP 1 ${bps} ${NS3.kminKB}`,
    `PMAX_MAP 1 ${bps} ${NS3.pmax.toFixed(2)}`,
    `BUFFER_SIZE ${NS3.bufferMB}`,
    `QLEN_MON_FILE ${out('qlen')}`,
    `QLEN_MON_START ${monitor.startNs}`,
    `QLEN_MON_END ${monitor.endNs}`,
  ];
  const path = join(dir, `config-${name}.txt`);
  writeFileSync(path, `${config.join('\n')}\n`);
  return { config: path, fct: out('fct'), pfc: out('pfc'), qlen: out('qlen'), log: out('log') };
}

function runNs3(ns3, files, timeoutS, seed) {
  const t = Date.now();
  const r = spawnSync(ns3.program, [files.config], {
    cwd: ns3.sim,
    env: { ...process.env, NS_GLOBAL_VALUE: `RngRun=${seed}`, LD_LIBRARY_PATH: [ns3.libDir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') },
    encoding: 'utf8',
    maxBuffer: 1 << 30,
    timeout: timeoutS * 1000,
  });
  writeFileSync(files.log, `${r.stdout ?? ''}\n--- stderr\n${r.stderr ?? ''}`);
  if (r.error) fail(`ns-3 ${files.config}: ${r.error.message} (log: ${files.log})`);
  if (r.status !== 0) fail(`ns-3 ${files.config} exited with ${r.status ?? r.signal} (log: ${files.log})`);
  return { seconds: (Date.now() - t) / 1000, drops: (r.stdout.match(/ Drop: /g) ?? []).length };
}

/** The QLEN_MON file's last dump: the bottleneck port's histogram (counts per whole KB, one sample per 100 ns). */
function ns3Queue(path) {
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '';
  const blocks = text.split(/^time: /m).filter((b) => b.trim() !== '');
  const last = blocks[blocks.length - 1];
  if (last === undefined) fail(`${path}: no queue dump (the run must reach QLEN_MON_END, a multiple of 100 ms)`);
  let best = null;
  for (const line of last.split('\n').slice(1)) {
    const nums = line.trim().split(/\s+/).map(Number);
    if (nums.length < 3) continue;
    const [sw, port, ...counts] = nums;
    const h = histogramStats(counts);
    if (best === null || h.meanKB > best.meanKB) best = { ...h, port: `${sw}/${port}` };
  }
  if (best === null) fail(`${path}: the dump lists no port`);
  return best;
}

/** Mean, median and p99 of a histogram of counts per KB (the bucket's middle, in KB). */
function histogramStats(counts) {
  const total = counts.reduce((a, b) => a + b, 0);
  let sum = 0;
  counts.forEach((c, kb) => (sum += c * (kb + 0.5)));
  const quantile = (q) => {
    let acc = 0;
    for (let kb = 0; kb < counts.length; kb++) {
      acc += counts[kb];
      if (acc >= q * total) return kb + 0.5;
    }
    return counts.length - 0.5;
  };
  const max = counts.reduce((m, c, kb) => (c > 0 ? kb : m), 0) + 0.5;
  return { samples: total, meanKB: sum / total, medianKB: quantile(0.5), p99KB: quantile(0.99), maxKB: max };
}

/** PFC_OUTPUT_FILE: "time node nodeType ifIndex type", type 1 = a pause took effect, 0 = a resume. Pauses received by hosts. */
function ns3Pauses(path) {
  const rows = readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => l.trim().split(/\s+/).map(Number));
  return rows.filter((r) => r[2] === 0 && r[4] === 1).map((r) => (r[0] - T0_S * 1e9) / 1e6);
}

/** FCT_OUTPUT_FILE: "sip dip sport dport size start fct standalone_fct" (ns). */
function ns3Fcts(path) {
  const rows = readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => l.trim().split(/\s+/));
  return rows
    .map((r) => ({ host: (parseInt(r[0], 16) >>> 8) & 0xffff, fctMs: Number(r[6]) / 1e6, standaloneMs: Number(r[7]) / 1e6 }))
    .sort((a, b) => a.host - b.host);
}

// ---- roce sim ------------------------------------------------------------------------------

function roceArgs() {
  const pfc = pfcEquivalent();
  return [
    '--hosts',
    String(HOSTS),
    '--link-rate',
    `${RATE_GBPS}G`,
    '--propagation',
    `${LINK_DELAY_MS * 1000}us`,
    '--mtu',
    '1024',
    '--buffer',
    String(pfc.buffer),
    '--ecn',
    `kmin=${NS3.kminKB}K,kmax=${NS3.kmaxKB}K,pmax=${NS3.pmax}`,
    '--pfc',
    `xoff=${pfc.xoff},xon=${pfc.xon}`,
    '--cc',
    'dcqcn',
    '--cc-param',
    Object.entries(CC_PARAMS)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
  ];
}

function runRoce(extra, pcap, timeoutS, seed) {
  const cli = join(REPO, 'dist', 'cli', 'main.js');
  const args = [join(REPO, 'bin', 'roce.js'), 'sim', ...roceArgs(), '--seed', String(seed), ...extra, '--json', ...(pcap ? ['--pcap', pcap] : [])];
  const t = Date.now();
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 30, timeout: timeoutS * 1000 });
  if (r.error) fail(`roce sim: ${r.error.message}`);
  if (r.status !== 0 && r.status !== 1) fail(`roce sim exited with ${r.status ?? r.signal}: ${r.stderr.trim()} (is ${cli} built? npm run build)`);
  return { result: JSON.parse(r.stdout), seconds: (Date.now() - t) / 1000, command: `./bin/roce.js sim ${args.slice(2).map(shellQuote).join(' ')}` };
}

function shellQuote(s) {
  return /^[\w.,=/:+-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

/** The PFC frames the switch sent (802.1Qbb, EtherType 0x8808, opcode 0x0101), from a nanosecond pcap: pause times in ms. */
function pcapPauses(path) {
  const b = readFileSync(path);
  const le = b.readUInt32LE(0) === 0xa1b23c4d || b.readUInt32LE(0) === 0xa1b2c3d4;
  const u32 = (o) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
  const nano = u32(0) === 0xa1b23c4d;
  const epochS = 1_700_000_000;
  const out = [];
  for (let o = 24; o + 16 <= b.length; ) {
    const sec = u32(o);
    const frac = u32(o + 4);
    const len = u32(o + 8);
    const f = o + 16;
    if (len >= 20 && b.readUInt16BE(f + 12) === 0x8808 && b.readUInt16BE(f + 14) === 0x0101) {
      const vector = b.readUInt16BE(f + 16);
      let paused = false;
      for (let p = 0; p < 8; p++) if (vector & (1 << p) && len >= 20 + 2 * p && b.readUInt16BE(f + 18 + 2 * p) !== 0) paused = true;
      if (paused) out.push((sec - epochS) * 1e3 + (nano ? frac / 1e6 : frac / 1e3));
    }
    o = f + len;
  }
  return out;
}

/** The bottleneck queue from 10 ms on: one value per 1 µs bin (the bin's largest), bucketed per KB as ns-3's monitor does. */
function roceQueue(r) {
  const counts = [];
  for (const [tUs, bytes] of r.queue.overTime) {
    if (tUs <= STEADY_FROM_MS * 1000) continue;
    const kb = Math.floor(bytes / 1000);
    while (counts.length <= kb) counts.push(0);
    counts[kb]++;
  }
  return { ...histogramStats(counts), port: r.queue.port };
}

/** A flow's completion time: its payload over its mean rate, which runs from its start to its last completion. */
function roceFcts(r) {
  return r.flows.map((f) => ({ name: f.name, completed: f.completed, fctMs: f.completed ? (f.bytes * 8) / (f.meanGbps * 1e6) : null }));
}

// ---- the table -----------------------------------------------------------------------------

const kb = (x) => `${x.toFixed(1)} KB`;
const ms = (x) => (x === null || x === undefined ? '–' : `${x.toFixed(3)} ms`);
const times = (xs) => (xs.length === 0 ? 'none' : `${xs.length}: first ${ms(xs[0])}, last ${ms(xs[xs.length - 1])}`);

const NOT_MEASURED = 'not measured';

/**
 * ns-3's two runs under one seed: the queue, the pauses, the drops and the completion times.
 * `haiMbps` is RATE_HAI: run.py's, or RATE_AI's to take hyper increase out as `roce sim` runs
 * without a byte counter (its hyper stage needs both counters past F).
 */
function measureNs3(ns3, work, timeoutS, seed, haiMbps) {
  const tag = haiMbps === NS3.rateHaiMbps ? '' : `-hai${haiMbps}`;
  // (a) long flows: the queue monitored from 10 ms after the start to 30 ms (T0 + 30 ms = 0.1 s, a dump).
  const startNs = Math.round((T0_S + STEADY_FROM_MS / 1000) * 1e9);
  const endNs = Math.round((T0_S + RUN_MS / 1000) * 1e9);
  if (endNs % 100_000_000 !== 0) fail('internal: the monitor must end on a multiple of 100 ms');
  const filesA = writeNs3Inputs(work, `long-s${seed}${tag}`, LONG_BYTES, { startNs, endNs, stopS: (endNs + 1000) / 1e9 }, haiMbps);
  process.stderr.write(`ns3-compare: ns-3${tag} seed ${seed} (a) 8 long flows...\n`);
  const a = runNs3(ns3, filesA, timeoutS, seed);
  // (b) 8 flows of 5 MB; the monitor is set after the stop (off).
  const filesB = writeNs3Inputs(work, `finite-s${seed}${tag}`, FINITE_BYTES, { startNs: 900_000_000, endNs: 1_000_000_000, stopS: T0_S + 0.2 }, haiMbps);
  process.stderr.write(`ns3-compare: ns-3${tag} seed ${seed} (b) 8 flows of 5 MB...\n`);
  const b = runNs3(ns3, filesB, timeoutS, seed);
  const fct = ns3Fcts(filesB.fct);
  if (fct.length !== SENDERS) fail(`${filesB.fct}: ${fct.length} flows completed, not ${SENDERS} (log: ${filesB.log})`);
  return {
    queue: ns3Queue(filesA.qlen),
    pauses: ns3Pauses(filesA.pfc),
    drops: a.drops,
    fct: fct.map((f) => f.fctMs),
    fctByHost: fct,
    seconds: a.seconds + b.seconds,
    command: `cd ${ns3.sim} && NS_GLOBAL_VALUE=RngRun=${seed} LD_LIBRARY_PATH=build ${ns3.program} ${filesA.config} (and ${filesB.config})`,
  };
}

/** roce sim's two runs under one seed, the same figures. */
function measureRoce(work, timeoutS, seed) {
  process.stderr.write(`ns3-compare: roce sim seed ${seed} (a)...\n`);
  const pcap = join(work, `roce-long-s${seed}.pcap`);
  const a = runRoce(['--duration', `${RUN_MS}ms`, '--steady-from', `${STEADY_FROM_MS}ms`, '--bin', '1us'], pcap, timeoutS, seed);
  const pauses = pcapPauses(pcap);
  if (pauses.length !== a.result.pfcPauses) fail(`roce sim (a): the capture holds ${pauses.length} PFC pauses, the report ${a.result.pfcPauses}`);
  process.stderr.write(`ns3-compare: roce sim seed ${seed} (b)...\n`);
  const names = Array.from({ length: SENDERS }, (_, h) => `${String.fromCharCode(97 + h)}>${String.fromCharCode(97 + RECEIVER)}:size=${FINITE_BYTES}`);
  const b = runRoce(['--flows', names.join(','), '--duration', '60ms'], null, timeoutS, seed);
  const fctByFlow = roceFcts(b.result);
  return {
    queue: roceQueue(a.result),
    pauses,
    drops: a.result.drops,
    steady: a.result.steady,
    fctByFlow,
    fct: fctByFlow.filter((f) => f.completed).map((f) => f.fctMs),
    seconds: a.seconds + b.seconds,
    commands: [a.command, b.command],
  };
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(join(REPO, 'dist', 'cli', 'main.js')))
    fail(`roce-ts is not built: no ${join(REPO, 'dist', 'cli', 'main.js')} (run npm run build in ${REPO})`);
  const ns3 = args.roceOnly ? null : findNs3(args.ns3);
  const work = args.work !== null ? resolve(args.work) : mkdtempSync(join(tmpdir(), 'ns3-compare-'));
  mkdirSync(work, { recursive: true });
  if (/\s/.test(work)) fail(`the work directory must have no blank in its path (ns-3's config reader splits on blanks): ${work}`);
  process.stderr.write(`ns3-compare: ns-3 ${ns3?.program ?? NOT_MEASURED}\nns3-compare: work directory ${work}\n`);
  const seeds = Array.from({ length: args.seeds }, (_, i) => i + 1);
  const ns = ns3 === null ? null : seeds.map((seed) => measureNs3(ns3, work, args.timeoutS, seed, NS3.rateHaiMbps));
  const nh = ns3 === null ? null : seeds.map((seed) => measureNs3(ns3, work, args.timeoutS, seed, NS3.rateAiMbps));
  const ro = seeds.map((seed) => measureRoce(work, args.timeoutS, seed));

  const pfc = pfcEquivalent();
  const rows = [];
  const row = (what, a, b, c = NOT_MEASURED) => rows.push(`| ${what} | ${a} | ${c} | ${b} |`);
  /** One figure per seed, "s1 / s2 / s3". */
  const each = (runs, f) => (runs === null ? NOT_MEASURED : runs.map(f).join(' / '));
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const n1 = ns?.[0] ?? null;
  const h1 = nh?.[0] ?? null;
  const r1 = ro[0];
  const seedList = seeds.join(', ');
  row(
    '(a) bottleneck port',
    n1 === null ? NOT_MEASURED : `switch ${n1.queue.port}`,
    `port ${r1.queue.port}`,
    h1 === null ? NOT_MEASURED : `switch ${h1.queue.port}`,
  );
  row(
    '(a) queue samples per seed, 10–30 ms',
    n1 === null ? NOT_MEASURED : `${n1.queue.samples} (every 100 ns)`,
    `${r1.queue.samples} (largest in each 1 µs)`,
    h1 === null ? NOT_MEASURED : `${h1.queue.samples} (every 100 ns)`,
  );
  row(
    `(a) queue mean, seeds ${seedList}`,
    each(ns, (x) => kb(x.queue.meanKB)),
    each(ro, (x) => kb(x.queue.meanKB)),
    each(nh, (x) => kb(x.queue.meanKB)),
  );
  row(
    `(a) queue median, seeds ${seedList}`,
    each(ns, (x) => kb(x.queue.medianKB)),
    each(ro, (x) => kb(x.queue.medianKB)),
    each(nh, (x) => kb(x.queue.medianKB)),
  );
  row(
    `(a) queue p99, seeds ${seedList}`,
    each(ns, (x) => kb(x.queue.p99KB)),
    each(ro, (x) => kb(x.queue.p99KB)),
    each(nh, (x) => kb(x.queue.p99KB)),
  );
  row(
    `(a) queue max 10–30 ms, seeds ${seedList}`,
    each(ns, (x) => kb(x.queue.maxKB)),
    each(ro, (x) => kb(x.queue.maxKB)),
    each(nh, (x) => kb(x.queue.maxKB)),
  );
  row(
    `(a) PFC pauses 0–30 ms, seeds ${seedList}`,
    each(ns, (x) => times(x.pauses)),
    each(ro, (x) => times(x.pauses)),
    each(nh, (x) => times(x.pauses)),
  );
  row(
    `(a) PFC pauses after 10 ms, seeds ${seedList}`,
    each(ns, (x) => String(x.pauses.filter((t) => t > STEADY_FROM_MS).length)),
    each(ro, (x) => String(x.pauses.filter((t) => t > STEADY_FROM_MS).length)),
    each(nh, (x) => String(x.pauses.filter((t) => t > STEADY_FROM_MS).length)),
  );
  row(
    `(a) drops, seeds ${seedList}`,
    each(ns, (x) => String(x.drops)),
    each(ro, (x) => String(x.drops)),
    each(nh, (x) => String(x.drops)),
  );
  row(
    `(a) steady Gb/s per flow (frames) 10–30 ms, seeds ${seedList}`,
    'not reported by third.cc',
    each(ro, (x) => `${Math.min(...x.steady.flowsGbps).toFixed(2)}–${Math.max(...x.steady.flowsGbps).toFixed(2)} (Jain ${x.steady.jainIndex?.toFixed(3)})`),
    'not reported by third.cc',
  );
  row(
    `(a) marked, seeds ${seedList}`,
    'not reported by third.cc',
    each(ro, (x) => `${(x.steady.markProbability * 100).toFixed(2)} %`),
    'not reported by third.cc',
  );
  row(
    `(a) CNPs per flow per ms, seeds ${seedList}`,
    'not reported by third.cc',
    each(ro, (x) => x.steady.cnpsPerFlowPerMs.toFixed(2)),
    'not reported by third.cc',
  );
  for (let i = 0; i < SENDERS; i++) {
    const r = r1.fctByFlow[i];
    const host = (x) => (x === null ? NOT_MEASURED : ms(x.fctByHost.find((f) => f.host === i)?.fctMs ?? null));
    row(`(b) FCT ${r?.name ?? i} (ns-3 host ${i}), seed 1`, host(n1), r?.completed ? ms(r.fctMs) : 'not completed', host(h1));
  }
  const complete = (x) => `${x.fct.length}/${SENDERS}`;
  row(`(b) flows completed, seeds ${seedList}`, each(ns, complete), each(ro, complete), each(nh, complete));
  row(
    `(b) FCT min, seeds ${seedList}`,
    each(ns, (x) => ms(Math.min(...x.fct))),
    each(ro, (x) => ms(Math.min(...x.fct))),
    each(nh, (x) => ms(Math.min(...x.fct))),
  );
  row(
    `(b) FCT mean, seeds ${seedList}`,
    each(ns, (x) => ms(mean(x.fct))),
    each(ro, (x) => ms(mean(x.fct))),
    each(nh, (x) => ms(mean(x.fct))),
  );
  row(
    `(b) FCT max, seeds ${seedList}`,
    each(ns, (x) => ms(Math.max(...x.fct))),
    each(ro, (x) => ms(Math.max(...x.fct))),
    each(nh, (x) => ms(Math.max(...x.fct))),
  );
  row(
    '(b) one flow alone (third.cc standalone_fct)',
    n1 === null ? NOT_MEASURED : ms(n1.fctByHost[0]?.standaloneMs ?? null),
    '',
    h1 === null ? NOT_MEASURED : ms(h1.fctByHost[0]?.standaloneMs ?? null),
  );
  const ideal = ms((SENDERS * FINITE_BYTES * 8) / (RATE_GBPS * 1e6));
  row('(b) 8 × 5 MB of payload at 10 Gb/s', ideal, ideal, ideal);
  const spreadOf = (x) => ms(Math.max(...x.fct) - Math.min(...x.fct));
  row(`(b) FCT spread (max − min), seeds ${seedList}`, each(ns, spreadOf), each(ro, spreadOf), each(nh, spreadOf));
  const wall = (runs) => (runs === null ? NOT_MEASURED : `${runs.reduce((a, x) => a + x.seconds, 0).toFixed(0)} s`);
  row('run time, all seeds (wall clock)', wall(ns), wall(ro), wall(nh));

  const out = [];
  out.push(
    `8 → 1 at ${RATE_GBPS} Gb/s, 1 µs links, DCQCN with HPCC run.py's dcqcn parameters at bw=${RATE_GBPS}; PFC in roce sim: xoff=${pfc.xoff},xon=${pfc.xon} (ns-3's dynamic threshold with 8 equal shares; ${pfc.oneHost} B with one host queued)`,
  );
  out.push('');
  out.push(`| figure | HPCC ns-3 (\`rdma-hw\`) | ns-3, RATE_HAI ${NS3.rateAiMbps}Mb/s (no hyper increase) | \`roce sim\` |`);
  out.push('|---|---|---|---|');
  out.push(...rows);
  out.push('');
  out.push(`ns-3, seed 1: ${n1?.command ?? NOT_MEASURED}`);
  out.push(`roce sim (a), seed 1: ${r1.commands[0]}`);
  out.push(`roce sim (b), seed 1: ${r1.commands[1]}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

main();
