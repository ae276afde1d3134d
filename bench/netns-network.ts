/**
 * The real-network benchmark, every figure measured side by side in one run: two
 * network namespaces joined by a veth pair (MTU 9000, 198.18.0.1 and 198.18.0.2), one process per
 * namespace, and
 *
 *  - the references: a minimal C AF_XDP sender/receiver pair (bench/c/xdp_pair.c, the packets/s
 *    ceiling of AF_XDP on this machine) and Node's kernel UDP (dgram), both at the frame sizes the
 *    RoCE runs put on the wire (4154 bytes: a 4096-byte WRITE segment; 82 bytes: an 8-byte WRITE);
 *  - `roce perftest write` with 64 KiB messages at path MTU 4096 (Gbit/s of payload) and with 8-byte
 *    messages (messages/s), over the AF_XDP driver and the AF_PACKET driver, in perftest's duration
 *    mode (-D, -f): the same `--seconds` of steady state the references measure (default 2);
 *  - ping-pong latency (`roce perftest write --lat`, one way as perftest reports it, and
 *    `roce pingpong`, round trip) with the busy-poll mode on and off.
 *
 *   npm run build && npm run build:native
 *   node dist/bench/netns-network.js                  # table (about 2 minutes)
 *   node dist/bench/netns-network.js --json           # the same figures as JSON
 *   node dist/bench/netns-network.js --only ref,bw    # groups: ref, bw, rate, lat, pcap, queues, latref
 *   node dist/bench/netns-network.js --only latref --repeat 3
 *                                  # latency: the C kernel-UDP and AF_XDP ping-pongs (bench/c) and
 *                                  # roce pingpong busy-polling, with and without --warm-up, in turn
 *   node dist/bench/netns-network.js --only short --repeat 3
 *                                  # short runs: perftest write 64 KiB -n 2000 with and without
 *                                  # --perform_warm_up, and the steady rate (-D 6 -f 2), in turn
 *   node dist/bench/netns-network.js --only qps --repeat 2
 *                                  # many QPs: perftest write -q 1, 1 000 and 10 000 (64 B × 5 each),
 *                                  # with the device's in-flight bound and without, in turn
 *   node dist/bench/netns-network.js --only ref,bw --repeat 3 --drivers xdp
 *                                  # each measurement 3 times in turn (the summary takes medians);
 *                                  # roce runs over AF_XDP only
 *
 * Needs root, `ip netns`, the native addon and (for the C reference) cc with libxdp/libbpf headers.
 * Everything it creates (namespaces, veth, XDP programs, processes) is removed at the end, also on
 * failure or Ctrl-C; every child process runs with a timeout.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as dgram from 'node:dgram';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const ROCE = path.join(ROOT, 'bin', 'roce.js');
const BPF_OBJ = path.join(ROOT, 'native', 'build', 'roce_filter.bpf.o');
const IP_A = '198.18.0.1';
const IP_B = '198.18.0.2';
/** Ethernet + IPv4 + UDP + BTH + ICRC around a 4096-byte WRITE segment (MIDDLE: no RETH). */
const FRAME_BIG = 14 + 20 + 8 + 12 + 4096 + 4;
/** An 8-byte RDMA WRITE ONLY: Ethernet, IPv4, UDP, BTH, RETH, 8 bytes, ICRC. */
const FRAME_SMALL = 14 + 20 + 8 + 12 + 16 + 8 + 4;

// ------------------------------------------------------------------ child roles (inside a namespace)

async function dgramRx(port: number, seconds: number): Promise<void> {
  const s = dgram.createSocket({ type: 'udp4', recvBufferSize: 8 << 20 });
  let frames = 0;
  let bytes = 0;
  let t0 = 0;
  let last = 0;
  await new Promise<void>((resolve) => s.bind(port, IP_B, () => resolve()));
  process.stdout.write('{"ready":true}\n');
  await new Promise<void>((resolve) => {
    const give = setTimeout(resolve, (seconds + 20) * 1000);
    s.on('message', (m) => {
      const now = performance.now();
      if (t0 === 0) {
        t0 = now;
        clearTimeout(give);
        setTimeout(resolve, seconds * 1000);
      }
      frames++;
      bytes += m.length;
      last = now;
    });
  });
  s.close();
  process.stdout.write(`${JSON.stringify({ frames, bytes, seconds: t0 > 0 ? (last - t0) / 1000 : 0 })}\n`);
}

async function dgramTx(port: number, len: number, seconds: number): Promise<void> {
  const s = dgram.createSocket({ type: 'udp4', sendBufferSize: 8 << 20 });
  await new Promise<void>((resolve) => s.bind(0, IP_A, () => resolve()));
  s.connect(port, IP_B);
  await new Promise<void>((resolve) => s.once('connect', () => resolve()));
  const buf = Buffer.alloc(len, 0x5a);
  const end = performance.now() + seconds * 1000;
  let sent = 0;
  let inFlight = 0;
  await new Promise<void>((resolve) => {
    const pump = (): void => {
      while (inFlight < 64 && performance.now() < end) {
        inFlight++;
        s.send(buf, () => {
          inFlight--;
          sent++;
          if (inFlight < 32) setImmediate(pump);
        });
      }
      if (performance.now() >= end && inFlight === 0) resolve();
    };
    pump();
    const check = setInterval(() => {
      if (performance.now() >= end && inFlight === 0) {
        clearInterval(check);
        resolve();
      }
    }, 10);
  });
  s.close();
  process.stdout.write(`${JSON.stringify({ sent })}\n`);
}

// ------------------------------------------------------------------ harness

interface Net {
  nsA: string;
  nsB: string;
  ifA: string;
  ifB: string;
  macA: string;
  macB: string;
}

const liveNs = new Set<string>();
const liveChildren = new Set<ChildProcess>();

function sh(cmd: string, args: string[]): string {
  return execFileSync(cmd, args, { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

function cleanup(): void {
  for (const c of liveChildren) {
    if (c.pid !== undefined && c.exitCode === null) {
      try {
        process.kill(-c.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  liveChildren.clear();
  for (const ns of liveNs) {
    try {
      sh('ip', ['netns', 'del', ns]);
    } catch {
      // gone
    }
  }
  liveNs.clear();
}

function createNet(mtu: number, queues = 1): Net {
  const id = randomBytes(3).toString('hex');
  const n: Net = { nsA: `roce-bn-${id}-a`, nsB: `roce-bn-${id}-b`, ifA: `rb${id}a`, ifB: `rb${id}b`, macA: '', macB: '' };
  for (const ns of [n.nsA, n.nsB]) {
    sh('ip', ['netns', 'add', ns]);
    liveNs.add(ns);
    sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  }
  const q = queues > 1 ? ['numtxqueues', String(queues), 'numrxqueues', String(queues)] : [];
  sh('ip', ['-n', n.nsA, 'link', 'add', n.ifA, ...q, 'type', 'veth', 'peer', 'name', n.ifB, ...q, 'netns', n.nsB]);
  for (const [ns, dev, addr] of [
    [n.nsA, n.ifA, IP_A],
    [n.nsB, n.ifB, IP_B],
  ] as const) {
    sh('ip', ['-n', ns, 'link', 'set', 'dev', dev, 'mtu', String(mtu)]);
    sh('ip', ['-n', ns, 'addr', 'add', `${addr}/24`, 'dev', dev]);
    sh('ip', ['-n', ns, 'link', 'set', 'dev', dev, 'up']);
  }
  const mac = (ns: string, dev: string): string =>
    (JSON.parse(sh('ip', ['-n', ns, '-j', 'link', 'show', 'dev', dev])) as Array<{ address: string }>)[0]?.address ?? '';
  n.macA = mac(n.nsA, n.ifA);
  n.macB = mac(n.nsB, n.ifB);
  // Neighbours known up front (the RoCE runs would resolve them through ARP anyway).
  sh('ip', ['-n', n.nsA, 'neigh', 'replace', IP_B, 'lladdr', n.macB, 'dev', n.ifA]);
  sh('ip', ['-n', n.nsB, 'neigh', 'replace', IP_A, 'lladdr', n.macA, 'dev', n.ifB]);
  return n;
}

interface Proc {
  child: ChildProcess;
  out: Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** Resolves when a line matching `re` appears on stdout. */
  line(re: RegExp, ms: number): Promise<void>;
}

function start(ns: string, cmd: string, args: string[], timeoutMs: number, env: NodeJS.ProcessEnv = {}): Proc {
  const child = spawn('ip', ['netns', 'exec', ns, cmd, ...args], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  liveChildren.add(child);
  let stdout = '';
  let stderr = '';
  const waiters: Array<{ re: RegExp; resolve: () => void }> = [];
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
    for (const w of [...waiters]) if (w.re.test(stdout)) w.resolve();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const timer = setTimeout(() => {
    if (child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }, timeoutMs);
  const out = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer);
      liveChildren.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
  return {
    child,
    out,
    line: (re, ms) =>
      new Promise<void>((resolve, reject) => {
        if (re.test(stdout)) return resolve();
        const t = setTimeout(() => reject(new Error(`${cmd} ${args.join(' ')}: no ${String(re)} within ${ms} ms; stderr: ${stderr.trim().slice(0, 300)}`)), ms);
        waiters.push({
          re,
          resolve: () => {
            clearTimeout(t);
            resolve();
          },
        });
      }),
  };
}

function lastJson(text: string): Record<string, unknown> {
  const lines = text
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'));
  const l = lines[lines.length - 1];
  if (l === undefined) throw new Error(`no JSON output in ${JSON.stringify(text.slice(0, 300))}`);
  return JSON.parse(l) as Record<string, unknown>;
}

// ------------------------------------------------------------------ measurements

interface Row {
  group: 'ref' | 'bw' | 'rate' | 'lat' | 'pcap' | 'queues' | 'latref' | 'qps' | 'short';
  name: string;
  framesPerSec?: number;
  gbps?: number;
  msgsPerSec?: number;
  p50Us?: number;
  p99Us?: number;
  p999Us?: number;
  maxUs?: number;
  /** Round trips by bucket, [lower bound µs, count], four buckets per octave. */
  histogram?: [number, number][];
  note?: string;
  error?: string;
}

/** Compiles a C reference of bench/c into a temporary directory (again when the source is newer); null when no compiler can. */
function buildC(name: string, libs: string[]): string | null {
  const src = path.join(ROOT, 'bench', 'c', `${name}.c`);
  const dir = path.join(os.tmpdir(), 'roce-ts-bench');
  fs.mkdirSync(dir, { recursive: true });
  const bin = path.join(dir, name);
  const newest = Math.max(...fs.readdirSync(path.dirname(src)).map((f) => fs.statSync(path.join(path.dirname(src), f)).mtimeMs));
  if (fs.existsSync(bin) && fs.statSync(bin).mtimeMs > newest) return bin;
  for (const cc of ['cc', 'gcc', 'clang']) {
    try {
      execFileSync(cc, ['-O2', '-Wall', '-o', bin, src, ...libs], { timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] });
      return bin;
    } catch {
      // next compiler
    }
  }
  return null;
}

function xdpLibs(): string[] {
  try {
    return [
      ...sh('pkg-config', ['--cflags', '--libs', 'libxdp', 'libbpf'])
        .trim()
        .split(/\s+/)
        .filter((x) => x !== ''),
      '-lelf',
      '-lz',
    ];
  } catch {
    return [];
  }
}

function buildXdpPair(): string | null {
  return buildC('xdp_pair', xdpLibs());
}

async function cXdp(net: Net, bin: string, len: number, seconds: number): Promise<Row> {
  const name = `C AF_XDP pair, ${len}-byte frames`;
  const rx = start(net.nsB, bin, ['rx', net.ifB, String(seconds), BPF_OBJ], (seconds + 30) * 1000);
  await rx.line(/ready/, 10_000);
  const tx = start(net.nsA, bin, ['tx', net.ifA, String(seconds + 1), String(len), net.macA, net.macB, IP_A, IP_B], (seconds + 30) * 1000);
  const [r] = await Promise.all([rx.out, tx.out]);
  const j = lastJson(r.stdout);
  const fps = Number(j['frames']) / Math.max(1e-9, Number(j['seconds']));
  return { group: 'ref', name, framesPerSec: fps, gbps: (fps * len * 8) / 1e9, note: 'Gbit/s of whole frames' };
}

async function nodeDgram(net: Net, len: number, seconds: number): Promise<Row> {
  const payload = len - 42;
  const name = `Node dgram (kernel UDP), ${len}-byte frames`;
  const self = path.join(__dirname, 'netns-network.js');
  const rx = start(net.nsB, process.execPath, [self, '--role', 'dgram-rx', '9000', String(seconds)], (seconds + 30) * 1000);
  await rx.line(/ready/, 10_000);
  const tx = start(net.nsA, process.execPath, [self, '--role', 'dgram-tx', '9000', String(payload), String(seconds + 1)], (seconds + 30) * 1000);
  const [r] = await Promise.all([rx.out, tx.out]);
  const j = lastJson(r.stdout);
  const fps = Number(j['frames']) / Math.max(1e-9, Number(j['seconds']));
  return { group: 'ref', name, framesPerSec: fps, gbps: (fps * len * 8) / 1e9, note: 'Gbit/s of whole frames' };
}

let nextPort = 19000;

/** Runs one `roce` command as server in B and client in A; returns the client's JSON summary. */
async function roce(
  net: Net,
  args: string[],
  opts: { busyPoll?: boolean; timeoutS?: number; clientArgs?: string[]; env?: Record<string, string> } = {},
): Promise<Record<string, unknown>> {
  const port = String(nextPort++);
  const env = { ROCE_BUSY_POLL: opts.busyPoll === true ? '1' : '0', ...opts.env };
  const t = (opts.timeoutS ?? 60) * 1000;
  const [cmd, ...rest] = args;
  const srv = start(net.nsB, process.execPath, [ROCE, cmd ?? '', ...rest, '--dev', net.ifB, '--port', port, '--json', '--timeout', '30'], t, env);
  const cli = start(
    net.nsA,
    process.execPath,
    [ROCE, cmd ?? '', ...rest, IP_B, '--dev', net.ifA, '--port', port, '--json', '--timeout', '30', ...(opts.clientArgs ?? [])],
    t,
    env,
  );
  const [s, c] = await Promise.all([srv.out, cli.out]);
  const j = lastJson(c.stdout);
  if (j['ok'] !== true)
    throw new Error(
      `roce ${args.join(' ')}: ${String(j['error'] ?? (j['problems'] as string[] | undefined)?.[0] ?? c.stderr.trim())} (server: ${s.stderr.trim().slice(0, 200)})`,
    );
  return j;
}

const DRIVERS = [
  ['xdp', 'AF_XDP'],
  ['packet', 'AF_PACKET'],
] as const;

/**
 * Many QPs: `roce perftest write -q N -s 64 -n 5` over AF_XDP, with the device's bound
 * on packets in flight (the default) or without it (`ROCE_MAX_INFLIGHT` far above any burst). The
 * row gives the aggregate message rate, and in its note the client's wall time (start-up, N QPs
 * set up and exchanged one after the other as perftest does, the run, the end) and peak RSS, the
 * packets sent for the messages (more means retransmissions) and the local ACK timeouts.
 */
async function roceManyQps(net: Net, qps: number, bounded: boolean): Promise<Row> {
  const port = String(nextPort++);
  const env = { ROCE_BUSY_POLL: '0', ...(bounded ? {} : { ROCE_MAX_INFLIGHT: '100000000' }) };
  const args = ['perftest', 'write', '--driver', 'xdp', '-q', String(qps), '-s', '64', '-n', '5', '-m', '4096', '--json', '--timeout', '30'];
  const rss = path.join(ROOT, 'dist', 'bench', 'report-peak-rss.js');
  const name = `roce perftest write -q ${qps}, 64 B × 5, ${bounded ? 'in-flight bound 512' : 'no in-flight bound'}`;
  const srv = start(net.nsB, process.execPath, [ROCE, ...args, '--dev', net.ifB, '--port', port], 120_000, env);
  const t0 = process.hrtime.bigint();
  const cli = start(net.nsA, process.execPath, ['-r', rss, ROCE, ...args, IP_B, '--dev', net.ifA, '--port', port], 120_000, env);
  const c = await cli.out;
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  await srv.out;
  const j = lastJson(c.stdout);
  const peak = /\{"maxRssMiB":(\d+)\}/.exec(c.stderr);
  const counters = (j['counters'] ?? {}) as Record<string, number>;
  const where = `wall ${wallS.toFixed(2)} s, peak RSS ${peak?.[1] ?? '?'} MiB`;
  if (j['ok'] !== true)
    return { group: 'qps', name, error: `${where}: ${String((j['problems'] as string[] | undefined)?.[0] ?? j['error'] ?? c.stderr.trim().slice(0, 200))}` };
  return {
    group: 'qps',
    name,
    msgsPerSec: Number(j['mpps']) * 1e6,
    note: `${where}, ${counters['sent_pkts'] ?? 0} packets for ${String(j['messages'])} messages, ${counters['local_ack_timeout_err'] ?? 0} local ACK timeouts, ${counters['rc_inflight_waits'] ?? 0} waits for room`,
  };
}

/**
 * perftest's duration mode for the RoCE bandwidth and rate runs: `seconds` of steady state measured
 * between margins of 1.5 s (JIT warm-up and wind-down left out), as the references measure theirs.
 */
function durationArgs(seconds: number): string[] {
  return ['-D', String(seconds + 3), '-f', '1.5'];
}

async function roceBw(net: Net, driver: string, label: string, seconds: number): Promise<Row> {
  const j = await roce(net, ['perftest', 'write', '--driver', driver, '-s', '65536', ...durationArgs(seconds), '-m', '4096']);
  const gbps = Number(j['gbps']);
  return { group: 'bw', name: `roce perftest write 64 KiB, MTU 4096, ${label}`, gbps, framesPerSec: (gbps * 1e9) / 8 / 4096 };
}

/**
 * The cost of `--pcap`: the 64 KiB WRITE run with the client recording every frame it
 * sends and receives, whole or its first 128 bytes (`--pcap-snap 128`: every RoCE header), next to
 * the same run without it; the modes alternate in one pass.
 */
type PcapMode = 'off' | 'whole' | 'snap128';
async function roceBwPcap(net: Net, driver: string, label: string, seconds: number, mode: PcapMode): Promise<Row> {
  const file = path.join(os.tmpdir(), `roce-bench-pcap-${process.pid}.pcap`);
  const flags: Record<PcapMode, string[]> = { off: [], whole: ['--pcap', file], snap128: ['--pcap', file, '--pcap-snap', '128'] };
  const what: Record<PcapMode, string> = { off: 'off', whole: 'on (client, whole frames)', snap128: 'on (client, --pcap-snap 128)' };
  try {
    const j = await roce(net, ['perftest', 'write', '--driver', driver, '-s', '65536', ...durationArgs(seconds), '-m', '4096'], { clientArgs: flags[mode] });
    const gbps = Number(j['gbps']);
    const pc = j['pcap'] as { frames?: number; bytes?: number } | undefined;
    return {
      group: 'pcap',
      name: `roce perftest write 64 KiB, ${label}, --pcap ${what[mode]}`,
      gbps,
      framesPerSec: (gbps * 1e9) / 8 / 4096,
      ...(pc !== undefined ? { note: `${pc.frames} frames, ${((pc.bytes ?? 0) / 2 ** 20).toFixed(0)} MiB written` } : {}),
    };
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/**
 * AF_XDP over one receive queue versus four: the 64 KiB WRITE run on a veth with one
 * queue per end and on one with four, where the device opens a socket on every queue (one QP: its
 * frames use one queue each way; with several queues transmit copies, as the queue is chosen per flow).
 */
async function roceBwQueues(net: Net, seconds: number, queues: number): Promise<Row> {
  const j = await roce(net, ['perftest', 'write', '--driver', 'xdp', '-s', '65536', ...durationArgs(seconds), '-m', '4096']);
  const gbps = Number(j['gbps']);
  return {
    group: 'queues',
    name: `roce perftest write 64 KiB, AF_XDP, ${queues} receive queue${queues > 1 ? 's' : ''} per end`,
    gbps,
    framesPerSec: (gbps * 1e9) / 8 / 4096,
  };
}

/**
 * Short runs: `roce perftest write -s 65536 -n 2000` over AF_XDP, as a user runs it,
 * with perftest's --perform_warm_up (left out of the figures) or without, against the steady rate
 * of a 6-second duration-mode run measured between 2-second margins.
 */
async function roceShort(net: Net, mode: 'cold' | 'warm' | 'steady'): Promise<Row> {
  const run = mode === 'steady' ? ['-D', '6', '-f', '2'] : ['-n', '2000', ...(mode === 'warm' ? ['--perform_warm_up'] : [])];
  const j = await roce(net, ['perftest', 'write', '--driver', 'xdp', '-s', '65536', '-m', '4096', ...run]);
  const warm = j['warmUp'] as { messages: number; seconds: number } | null;
  const name =
    mode === 'steady' ? 'roce perftest write 64 KiB -D 6 -f 2 (steady)' : `roce perftest write 64 KiB -n 2000${mode === 'warm' ? ' --perform_warm_up' : ''}`;
  return {
    group: 'short',
    name,
    gbps: Number(j['gbps']),
    ...(warm !== null ? { note: `warm-up ${warm.messages} messages in ${warm.seconds.toFixed(2)} s` } : {}),
  };
}

async function roceRate(net: Net, driver: string, label: string, seconds: number, coalesceAcks = false): Promise<Row> {
  const j = await roce(
    net,
    ['perftest', 'write', '--driver', driver, '-s', '8', ...durationArgs(seconds)],
    coalesceAcks ? { env: { ROCE_COALESCE_ACKS: '1' } } : {},
  );
  return { group: 'rate', name: `roce perftest write 8 B, ${label}${coalesceAcks ? ', ACKs coalesced' : ''}`, msgsPerSec: Number(j['mpps']) * 1e6 };
}

async function roceLat(net: Net, driver: string, label: string, busyPoll: boolean, iters: number): Promise<Row[]> {
  const mode = busyPoll ? 'busy-poll on' : 'busy-poll off';
  const w = await roce(net, ['perftest', 'write', '--lat', '--driver', driver, '-n', String(iters)], { busyPoll });
  const wl = w['latencyUs'] as { p50: number; p99: number };
  const p = await roce(net, ['pingpong', '--driver', driver, '-s', '64', '-n', String(iters)], { busyPoll });
  const pl = p['latencyUs'] as { p50: number; p99: number };
  return [
    { group: 'lat', name: `roce perftest write --lat (2 B, one way), ${label}, ${mode}`, p50Us: wl.p50, p99Us: wl.p99 },
    { group: 'lat', name: `roce pingpong (64 B SEND, round trip), ${label}, ${mode}`, p50Us: pl.p50, p99Us: pl.p99 },
  ];
}

/** The frame of a 64-byte RC SEND ONLY: Ethernet, IPv4, UDP, BTH, 64 bytes, ICRC (what `roce pingpong -s 64` sends). */
const FRAME_PINGPONG = 14 + 20 + 8 + 12 + 64 + 4;

function latRow(name: string, j: Record<string, unknown>, note?: string): Row {
  if (j['ok'] !== true) throw new Error(`${name}: ${String(j['error'] ?? JSON.stringify(j).slice(0, 200))}`);
  const n = (k: string): number => Number(j[k]);
  return {
    group: 'latref',
    name,
    p50Us: n('p50'),
    p99Us: n('p99'),
    p999Us: n('p999'),
    maxUs: n('max'),
    histogram: j['histogram'] as [number, number][],
    ...(note !== undefined ? { note } : {}),
  };
}

/** The kernel-UDP reference: bench/c/udp_pingpong.c, 64-byte datagrams, both ends busy-polling. */
async function cUdpPingpong(net: Net, bin: string, iters: number): Promise<Row> {
  const srv = start(net.nsB, bin, ['server', IP_B, '9100', String(iters), '64'], 120_000);
  await new Promise((r) => setTimeout(r, 200));
  const cli = start(net.nsA, bin, ['client', IP_B, '9100', String(iters), '64', '2000'], 120_000);
  const [c] = await Promise.all([cli.out, srv.out]);
  return latRow('C kernel-UDP ping-pong, 64 B, busy-poll (bench/c/udp_pingpong.c)', lastJson(c.stdout), '2 000 untimed round trips first');
}

/** The AF_XDP floor: bench/c/xdp_pingpong.c, frames the size of roce pingpong's, both ends busy-polling. */
async function cXdpPingpong(net: Net, bin: string, iters: number): Promise<Row> {
  const srv = start(net.nsB, bin, ['server', net.ifB, BPF_OBJ, String(FRAME_PINGPONG), net.macB, net.macA, IP_B, IP_A, '3'], 120_000);
  await srv.line(/ready/, 10_000);
  const cli = start(net.nsA, bin, ['client', net.ifA, BPF_OBJ, String(FRAME_PINGPONG), net.macA, net.macB, IP_A, IP_B, String(iters), '2000'], 120_000);
  const [c] = await Promise.all([cli.out, srv.out]);
  return latRow(`C AF_XDP ping-pong, ${FRAME_PINGPONG}-byte frames, busy-poll (bench/c/xdp_pingpong.c)`, lastJson(c.stdout), '2 000 untimed round trips first');
}

/** `roce pingpong -s 64` over AF_XDP, busy-polling, with or without the in-process JIT warm-up. */
/**
 * `roce pingpong` busy-polling. `napiPoll`: drive the veth's NAPI with a recvfrom on every empty
 * look at the ring (ROCE_NAPI_BUSY_POLL=1), which the default leaves off on a veth: there the
 * sender's `sendto` has already delivered the frame.
 */
async function rocePingpongLat(net: Net, iters: number, warmUp: number, napiPoll = false): Promise<Row> {
  const j = await roce(net, ['pingpong', '--driver', 'xdp', '-s', '64', '-n', String(iters), ...(warmUp > 0 ? ['--warm-up', String(warmUp)] : [])], {
    busyPoll: true,
    timeoutS: 120,
    ...(napiPoll ? { env: { ROCE_NAPI_BUSY_POLL: '1' } } : {}),
  });
  const l = j['latencyUs'] as Record<string, unknown>;
  const name = `roce pingpong, 64 B SEND, AF_XDP, busy-poll${warmUp > 0 ? `, --warm-up ${warmUp}` : ''}${napiPoll ? ', NAPI polled on empty rings' : ''}`;
  return latRow(name, { ok: true, ...l }, warmUp > 0 ? 'both ends warmed up' : 'no warm-up');
}

function fmt(v: number | undefined, d = 2): string {
  return v === undefined ? '' : v.toFixed(d);
}

function printTable(rows: Row[]): void {
  const out: string[] = [];
  out.push('| measurement | frames/s | Gbit/s | messages/s | p50 µs | p99 µs | p99.9 µs | max µs |');
  out.push('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    if (r.error !== undefined) {
      out.push(`| ${r.name} | failed: ${r.error.replace(/\|/g, '/').slice(0, 120)} | | | | | | |`);
      continue;
    }
    out.push(
      `| ${r.name}${r.note !== undefined ? ` (${r.note})` : ''} | ${r.framesPerSec === undefined ? '' : `${(r.framesPerSec / 1000).toFixed(0)} k`} | ${fmt(r.gbps)} | ${r.msgsPerSec === undefined ? '' : `${(r.msgsPerSec / 1000).toFixed(0)} k`} | ${fmt(r.p50Us, 1)} | ${fmt(r.p99Us, 1)} | ${fmt(r.p999Us, 1)} | ${fmt(r.maxUs, 0)} |`,
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

function summary(rows: Row[]): Record<string, unknown> {
  // With --repeat, each measurement has several rows: take the median of each figure.
  const find = (re: RegExp): Row | undefined => {
    const all = rows.filter((r) => re.test(r.name) && r.error === undefined);
    if (all.length <= 1) return all[0];
    const med = (k: 'framesPerSec' | 'gbps' | 'p50Us'): number | undefined => {
      const v = all
        .map((r) => r[k])
        .filter((x): x is number => x !== undefined)
        .sort((a, b) => a - b);
      return v.length === 0 ? undefined : v.length % 2 === 1 ? v[(v.length - 1) / 2] : ((v[v.length / 2 - 1] as number) + (v[v.length / 2] as number)) / 2;
    };
    const r: Row = { group: all[0]!.group, name: all[0]!.name };
    for (const k of ['framesPerSec', 'gbps', 'p50Us'] as const) {
      const m = med(k);
      if (m !== undefined) r[k] = m;
    }
    return r;
  };
  const c = find(/^C AF_XDP pair, 4154/);
  const d = find(/^Node dgram .*4154/);
  const x = find(/write 64 KiB.*AF_XDP/);
  const l = find(/pingpong .*AF_XDP, busy-poll on/);
  // The references' frames carry 4096 bytes of RoCE payload each: compare payload rates.
  const cPayload = c?.framesPerSec !== undefined ? (c.framesPerSec * 4096 * 8) / 1e9 : undefined;
  const dPayload = d?.framesPerSec !== undefined ? (d.framesPerSec * 4096 * 8) / 1e9 : undefined;
  return {
    writeGbps: x?.gbps ?? null,
    cCeilingPayloadGbps: cPayload ?? null,
    nodeDgramPayloadGbps: dPayload ?? null,
    shareOfC: x?.gbps !== undefined && cPayload !== undefined ? x.gbps / cPayload : null,
    timesDgram: x?.gbps !== undefined && dPayload !== undefined ? x.gbps / dPayload : null,
    pingpongP50BusyUs: l?.p50Us ?? null,
    targets: {
      writeAtLeast8Gbps: x?.gbps !== undefined ? x.gbps >= 8 : null,
      atLeast60PercentOfC: x?.gbps !== undefined && cPayload !== undefined ? x.gbps >= 0.6 * cPayload : null,
      atLeast2xDgram: x?.gbps !== undefined && dPayload !== undefined ? x.gbps >= 2 * dPayload : null,
      pingpongP50Under50UsBusy: l?.p50Us !== undefined ? l.p50Us < 50 : null,
    },
  };
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const roleAt = argv.indexOf('--role');
  if (roleAt >= 0) {
    const role = argv[roleAt + 1];
    const [a, b, c] = argv.slice(roleAt + 2).map(Number);
    if (role === 'dgram-rx') await dgramRx(a ?? 9000, b ?? 2);
    else if (role === 'dgram-tx') await dgramTx(a ?? 9000, b ?? 1024, c ?? 3);
    else throw new Error(`unknown role ${String(role)}`);
    return 0;
  }
  const json = argv.includes('--json');
  const onlyAt = argv.indexOf('--only');
  const only = new Set((onlyAt >= 0 ? (argv[onlyAt + 1] ?? '') : 'ref,bw,rate,lat').split(','));
  const repAt = argv.indexOf('--repeat');
  const repeat = repAt >= 0 && Number(argv[repAt + 1]) >= 1 ? Math.floor(Number(argv[repAt + 1])) : 1;
  const drvAt = argv.indexOf('--drivers');
  const drivers = new Set((drvAt >= 0 ? (argv[drvAt + 1] ?? '') : 'xdp,packet').split(','));
  const secAt = argv.indexOf('--seconds');
  const seconds = secAt >= 0 && Number(argv[secAt + 1]) > 0 ? Number(argv[secAt + 1]) : 2;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    process.stderr.write('netns-network: needs root (network namespaces, AF_XDP)\n');
    return 1;
  }
  if (!fs.existsSync(path.join(ROOT, 'native', 'build', 'Release', 'roce_native.node'))) {
    process.stderr.write('netns-network: the native addon is not built (npm run build:native)\n');
    return 1;
  }
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      cleanup();
      process.exit(130);
    });
  }
  process.on('exit', cleanup);
  const rows: Row[] = [];
  let run = 0; // with --repeat: which pass (1, 2, ...); 0 for a single pass
  const attempt = async (name: string, group: Row['group'], fn: () => Promise<Row | Row[]>): Promise<void> => {
    if (!only.has(group)) return;
    try {
      const r = await fn();
      const got = Array.isArray(r) ? r : [r];
      if (run > 0) for (const x of got) x.name += ` (run ${run})`;
      rows.push(...got);
    } catch (e) {
      rows.push({ group, name: run > 0 ? `${name} (run ${run})` : name, error: (e as Error).message });
    }
    if (!json) process.stderr.write(`  done: ${name}\n`);
  };
  const net = createNet(9000);
  try {
    const bin = only.has('ref') ? buildXdpPair() : null;
    const drv = DRIVERS.filter(([d]) => drivers.has(d));
    for (run = repeat > 1 ? 1 : 0; run <= (repeat > 1 ? repeat : 0); run++) {
      for (const len of [FRAME_BIG, FRAME_SMALL]) {
        if (bin !== null) await attempt(`C AF_XDP pair, ${len}-byte frames`, 'ref', () => cXdp(net, bin, len, seconds));
        else if (only.has('ref'))
          rows.push({
            group: 'ref',
            name: `C AF_XDP pair, ${len}-byte frames`,
            error: 'could not compile bench/c/xdp_pair.c (cc and libxdp/libbpf headers needed)',
          });
        await attempt(`Node dgram, ${len}-byte frames`, 'ref', () => nodeDgram(net, len, seconds));
      }
      for (const [d, label] of drv) await attempt(`write 64 KiB ${label}`, 'bw', () => roceBw(net, d, label, seconds));
      for (const [d, label] of drv) {
        await attempt(`write 8 B ${label}`, 'rate', () => roceRate(net, d, label, seconds));
        await attempt(`write 8 B ${label} ACKs coalesced`, 'rate', () => roceRate(net, d, label, seconds, true));
      }
      if (only.has('queues')) {
        const net4 = createNet(9000, 4);
        for (let i = 0; i < 2; i++) {
          await attempt('write 64 KiB AF_XDP 1 queue', 'queues', () => roceBwQueues(net, seconds, 1));
          await attempt('write 64 KiB AF_XDP 4 queues', 'queues', () => roceBwQueues(net4, seconds, 4));
        }
      }
      for (const [d, label] of drv) {
        for (const mode of ['off', 'whole', 'snap128', 'off', 'whole', 'snap128'] as const)
          await attempt(`write 64 KiB ${label} --pcap ${mode}`, 'pcap', () => roceBwPcap(net, d, label, seconds, mode));
      }
      for (const [d, label] of drv) {
        for (const busy of [false, true]) await attempt(`latency ${label} busy=${busy}`, 'lat', () => roceLat(net, d, label, busy, 10000));
      }
      if (only.has('latref')) {
        // The latency references and roce in turn, so a slow minute of the machine falls on all of them.
        const udp = buildC('udp_pingpong', ['-lm']);
        const xdp = buildC('xdp_pingpong', [...xdpLibs(), '-lm']);
        const iters = 20_000;
        if (udp === null || xdp === null)
          rows.push({
            group: 'latref',
            name: 'C ping-pong references',
            error: 'could not compile bench/c/udp_pingpong.c or xdp_pingpong.c (cc and libxdp/libbpf headers needed)',
          });
        if (udp !== null) await attempt('C kernel-UDP ping-pong', 'latref', () => cUdpPingpong(net, udp, iters));
        if (xdp !== null) await attempt('C AF_XDP ping-pong', 'latref', () => cXdpPingpong(net, xdp, iters));
        await attempt('roce pingpong busy-poll, warm-up', 'latref', () => rocePingpongLat(net, iters, 20_000));
        await attempt('roce pingpong busy-poll, warm-up, NAPI polled', 'latref', () => rocePingpongLat(net, iters, 20_000, true));
        await attempt('roce pingpong busy-poll', 'latref', () => rocePingpongLat(net, iters, 0));
      }
      if (only.has('short')) {
        for (const mode of ['cold', 'warm', 'steady'] as const) await attempt(`short ${mode}`, 'short', () => roceShort(net, mode));
      }
      if (only.has('qps')) {
        for (const n of [1, 1000, 10_000]) {
          for (const bounded of [true, false]) await attempt(`perftest -q ${n} bound=${String(bounded)}`, 'qps', () => roceManyQps(net, n, bounded));
        }
      }
    }
  } finally {
    cleanup();
  }
  const meta = { node: process.version, kernel: os.release(), cpus: os.cpus().length, date: new Date().toISOString() };
  if (json) process.stdout.write(`${JSON.stringify({ ...meta, rows, summary: summary(rows) })}\n`);
  else {
    printTable(rows);
    process.stdout.write(`${JSON.stringify(summary(rows))}\n`);
  }
  return rows.some((r) => r.error !== undefined) ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    cleanup();
    process.stderr.write(`netns-network: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  },
);
