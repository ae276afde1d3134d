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
 * `scratch/third` and `roce sim` for both, and prints one markdown table.
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
  const out = { ns3: null, work: null, timeoutS: 1800, roceOnly: false };
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
    else if (a === '-h' || a === '--help') {
      process.stdout.write('usage: node scripts/ns3-compare/compare.mjs --ns3 HPCC_TREE [--work DIR] [--timeout SECONDS]\n       node scripts/ns3-compare/compare.mjs --roce-only [--work DIR]   (the roce sim column alone)\n  HPCC_TREE: a built clone of alibaba-edu/High-Precision-Congestion-Control (or its simulation/ directory)\n');
      process.exit(0);
    } else fail(`unknown argument ${JSON.stringify(a)} (try --help)`);
  }
  if (out.ns3 === null && !out.roceOnly) fail('give the HPCC ns-3 tree with --ns3 PATH (a clone of alibaba-edu/High-Precision-Congestion-Control, built)');
  if (!(out.timeoutS > 0)) fail('--timeout must be a positive number of seconds');
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
    fail(`ns-3 is not built: no build/scratch/third program in ${sim} (build it there: ./waf configure -d optimized --disable-examples --disable-tests --disable-python && ./waf build; see scripts/ns3-compare/README.md)`);
  }
  const program = join(scratch, programs.find((p) => p.includes('optimized')) ?? programs[0]);
  const libs = readdirSync(join(sim, 'build')).filter((f) => /^libns3.*\.so$/.test(f));
  if (libs.length === 0) fail(`ns-3 is not built: no libns3*.so in ${join(sim, 'build')}`);
  return { sim, program, libDir: join(sim, 'build') };
}

// ---- ns-3 ----------------------------------------------------------------------------------

function writeNs3Inputs(dir, name, bytes, monitor) {
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
    `RATE_HAI ${NS3.rateHaiMbps}Mb/s`,
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

function runNs3(ns3, files, timeoutS) {
  const t = Date.now();
  const r = spawnSync(ns3.program, [files.config], {
    cwd: ns3.sim,
    env: { ...process.env, LD_LIBRARY_PATH: [ns3.libDir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') },
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
  const rows = readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map((l) => l.trim().split(/\s+/).map(Number));
  return rows.filter((r) => r[2] === 0 && r[4] === 1).map((r) => (r[0] - T0_S * 1e9) / 1e6);
}

/** FCT_OUTPUT_FILE: "sip dip sport dport size start fct standalone_fct" (ns). */
function ns3Fcts(path) {
  const rows = readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map((l) => l.trim().split(/\s+/));
  return rows.map((r) => ({ host: (parseInt(r[0], 16) >>> 8) & 0xffff, fctMs: Number(r[6]) / 1e6, standaloneMs: Number(r[7]) / 1e6 })).sort((a, b) => a.host - b.host);
}

// ---- roce sim ------------------------------------------------------------------------------

function roceArgs() {
  const pfc = pfcEquivalent();
  return [
    '--hosts', String(HOSTS),
    '--link-rate', `${RATE_GBPS}G`,
    '--propagation', `${LINK_DELAY_MS * 1000}us`,
    '--mtu', '1024',
    '--buffer', String(pfc.buffer),
    '--ecn', `kmin=${NS3.kminKB}K,kmax=${NS3.kmaxKB}K,pmax=${NS3.pmax}`,
    '--pfc', `xoff=${pfc.xoff},xon=${pfc.xon}`,
    '--cc', 'dcqcn',
    '--cc-param', Object.entries(CC_PARAMS).map(([k, v]) => `${k}=${v}`).join(','),
    '--seed', '1',
  ];
}

function runRoce(extra, pcap, timeoutS) {
  const cli = join(REPO, 'dist', 'cli', 'main.js');
  const args = [join(REPO, 'bin', 'roce.js'), 'sim', ...roceArgs(), ...extra, '--json', ...(pcap ? ['--pcap', pcap] : [])];
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

/** ns-3's two runs: the queue, the pauses, the drops and the completion times. */
function measureNs3(ns3, work, timeoutS) {
  // (a) long flows: the queue monitored from 10 ms after the start to 30 ms (T0 + 30 ms = 0.1 s, a dump).
  const startNs = Math.round((T0_S + STEADY_FROM_MS / 1000) * 1e9);
  const endNs = Math.round((T0_S + RUN_MS / 1000) * 1e9);
  if (endNs % 100_000_000 !== 0) fail('internal: the monitor must end on a multiple of 100 ms');
  const filesA = writeNs3Inputs(work, 'long', LONG_BYTES, { startNs, endNs, stopS: (endNs + 1000) / 1e9 });
  process.stderr.write('ns3-compare: ns-3 (a) 8 long flows...\n');
  const a = runNs3(ns3, filesA, timeoutS);
  // (b) 8 flows of 5 MB; the monitor is set after the stop (off).
  const filesB = writeNs3Inputs(work, 'finite', FINITE_BYTES, { startNs: 900_000_000, endNs: 1_000_000_000, stopS: T0_S + 0.2 });
  process.stderr.write('ns3-compare: ns-3 (b) 8 flows of 5 MB...\n');
  const b = runNs3(ns3, filesB, timeoutS);
  const fct = ns3Fcts(filesB.fct);
  if (fct.length !== SENDERS) fail(`${filesB.fct}: ${fct.length} flows completed, not ${SENDERS} (log: ${filesB.log})`);
  return { queue: ns3Queue(filesA.qlen), pauses: ns3Pauses(filesA.pfc), drops: a.drops, fct, seconds: a.seconds + b.seconds, command: `cd ${ns3.sim} && LD_LIBRARY_PATH=build ${ns3.program} ${filesA.config} (and ${filesB.config})` };
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!existsSync(join(REPO, 'dist', 'cli', 'main.js'))) fail(`roce-ts is not built: no ${join(REPO, 'dist', 'cli', 'main.js')} (run npm run build in ${REPO})`);
  const ns3 = args.roceOnly ? null : findNs3(args.ns3);
  const work = args.work !== null ? resolve(args.work) : mkdtempSync(join(tmpdir(), 'ns3-compare-'));
  mkdirSync(work, { recursive: true });
  if (/\s/.test(work)) fail(`the work directory must have no blank in its path (ns-3's config reader splits on blanks): ${work}`);
  process.stderr.write(`ns3-compare: ns-3 ${ns3?.program ?? NOT_MEASURED}\nns3-compare: work directory ${work}\n`);
  const ns = ns3 === null ? null : measureNs3(ns3, work, args.timeoutS);

  process.stderr.write('ns3-compare: roce sim (a)...\n');
  const pcap = join(work, 'roce-long.pcap');
  const roA = runRoce(['--duration', `${RUN_MS}ms`, '--steady-from', `${STEADY_FROM_MS}ms`, '--bin', '1us'], pcap, args.timeoutS);
  const roQueue = roceQueue(roA.result);
  const roPauses = pcapPauses(pcap);
  if (roPauses.length !== roA.result.pfcPauses) fail(`roce sim (a): the capture holds ${roPauses.length} PFC pauses, the report ${roA.result.pfcPauses}`);
  process.stderr.write('ns3-compare: roce sim (b)...\n');
  const names = Array.from({ length: SENDERS }, (_, h) => `${String.fromCharCode(97 + h)}>${String.fromCharCode(97 + RECEIVER)}:size=${FINITE_BYTES}`);
  const roB = runRoce(['--flows', names.join(','), '--duration', '60ms'], null, args.timeoutS);
  const roFct = roceFcts(roB.result);

  const pfc = pfcEquivalent();
  const rows = [];
  const row = (what, a, b) => rows.push(`| ${what} | ${a} | ${b} |`);
  const n = (f) => (ns === null ? NOT_MEASURED : f(ns));
  row('(a) bottleneck port', n((x) => `switch ${x.queue.port}`), `port ${roQueue.port}`);
  row('(a) queue samples, 10–30 ms', n((x) => `${x.queue.samples} (every 100 ns)`), `${roQueue.samples} (largest in each 1 µs)`);
  row('(a) queue mean', n((x) => kb(x.queue.meanKB)), kb(roQueue.meanKB));
  row('(a) queue median', n((x) => kb(x.queue.medianKB)), kb(roQueue.medianKB));
  row('(a) queue p99', n((x) => kb(x.queue.p99KB)), kb(roQueue.p99KB));
  row('(a) queue max, 10–30 ms', n((x) => kb(x.queue.maxKB)), kb(roQueue.maxKB));
  row('(a) PFC pauses, 0–30 ms', n((x) => times(x.pauses)), times(roPauses));
  row('(a) PFC pauses after 10 ms', n((x) => String(x.pauses.filter((t) => t > STEADY_FROM_MS).length)), String(roPauses.filter((t) => t > STEADY_FROM_MS).length));
  row('(a) drops', n((x) => String(x.drops)), String(roA.result.drops));
  const st = roA.result.steady;
  row('(a) steady Gb/s per flow (frames), 10–30 ms', 'not reported by third.cc', `${Math.min(...st.flowsGbps).toFixed(2)}–${Math.max(...st.flowsGbps).toFixed(2)} (Jain ${st.jainIndex?.toFixed(3)})`);
  row('(a) marked, CNPs per flow per ms', 'not reported by third.cc', `${(st.markProbability * 100).toFixed(2)} %, ${st.cnpsPerFlowPerMs.toFixed(2)}`);
  for (let i = 0; i < SENDERS; i++) {
    const r = roFct[i];
    row(`(b) FCT ${r?.name ?? i} (ns-3 host ${i})`, n((x) => ms(x.fct.find((f) => f.host === i)?.fctMs ?? null)), r?.completed ? ms(r.fctMs) : 'not completed');
  }
  const spread = (xs) => (xs.length === 0 ? '–' : `${ms(Math.min(...xs))} / ${ms(xs.reduce((a, b) => a + b, 0) / xs.length)} / ${ms(Math.max(...xs))}`);
  row('(b) FCT min / mean / max', n((x) => spread(x.fct.map((f) => f.fctMs))), spread(roFct.filter((f) => f.completed).map((f) => f.fctMs)));
  row('(b) one flow alone (third.cc standalone_fct)', n((x) => ms(x.fct[0]?.standaloneMs ?? null)), '');
  const ideal = ms((SENDERS * FINITE_BYTES * 8) / (RATE_GBPS * 1e6));
  row('(b) 8 × 5 MB of payload at 10 Gb/s', ideal, ideal);
  row('run time (wall clock)', n((x) => `${x.seconds.toFixed(0)} s`), `${(roA.seconds + roB.seconds).toFixed(0)} s`);

  const out = [];
  out.push(`8 → 1 at ${RATE_GBPS} Gb/s, 1 µs links, DCQCN with HPCC run.py's dcqcn parameters at bw=${RATE_GBPS}; PFC in roce sim: xoff=${pfc.xoff},xon=${pfc.xon} (ns-3's dynamic threshold with 8 equal shares; ${pfc.oneHost} B with one host queued)`);
  out.push('');
  out.push('| figure | HPCC ns-3 (`rdma-hw`) | `roce sim` |');
  out.push('|---|---|---|');
  out.push(...rows);
  out.push('');
  out.push(`ns-3: ${ns?.command ?? NOT_MEASURED}`);
  out.push(`roce sim (a): ${roA.command}`);
  out.push(`roce sim (b): ${roB.command}`);
  process.stdout.write(`${out.join('\n')}\n`);
}

main();
