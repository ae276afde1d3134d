/**
 * Two network namespaces joined by a veth pair, for tests of the real frame
 * drivers (AF_PACKET, AF_XDP). Names carry a random suffix; addresses come from
 * 198.18.0.0/15 (RFC 2544 benchmarking range). Everything is removed even when
 * the test fails: `withNetnsPair` uses try/finally, and a process 'exit' hook
 * removes whatever is left (a deleted namespace takes its veth end with it).
 *
 * Drivers reach into a namespace through their `netns` option: the native shim
 * enters it only for the duration of one synchronous call (socket creation,
 * XDP attach and detach) on the calling thread and comes back, so one test
 * process drives both ends. Commands run inside a namespace with `ip netns exec`.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { nativeAvailable, nativeLoadError } from '../../nic-driver/native-binding';

export interface NetnsPair {
  /** Namespace names (under /var/run/netns). */
  nsA: string;
  nsB: string;
  /** The veth ends: ifA lives in nsA, ifB in nsB. */
  ifA: string;
  ifB: string;
  ipA: string;
  ipB: string;
  ip6A: string;
  ip6B: string;
  mtu: number;
  /** MAC addresses as 48-bit integers. */
  macA: number;
  macB: number;
}

export interface NetnsPairOptions {
  mtu?: number;
  /** Receive/transmit queues of each veth end (default 1). */
  queues?: number;
}

const CMD_TIMEOUT_MS = 10_000;
const live = new Set<string>();
let exitHooked = false;

function ip(args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', timeout: CMD_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'pipe'] });
}

function removeNs(ns: string): void {
  try {
    execFileSync('ip', ['netns', 'del', ns], { timeout: CMD_TIMEOUT_MS, stdio: 'ignore' });
  } catch {
    // already gone
  }
  live.delete(ns);
}

function hookExit(): void {
  if (exitHooked) return;
  exitHooked = true;
  process.on('exit', () => {
    for (const ns of [...live]) removeNs(ns);
  });
}

let cachedReason: string | undefined;

/** Why netns tests cannot run here (not root, no `ip netns`), or null. */
export function netnsSkipReason(): string | null {
  if (cachedReason !== undefined) return cachedReason === '' ? null : cachedReason;
  let r = '';
  if (process.platform !== 'linux') r = 'network namespaces need Linux';
  else if (typeof process.getuid !== 'function' || process.getuid() !== 0) r = 'not root (network namespaces and raw sockets need it)';
  else {
    try {
      ip(['netns', 'list']);
    } catch (e) {
      r = `ip netns unavailable: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`;
    }
  }
  cachedReason = r;
  return r === '' ? null : r;
}

/** Why native-driver tests cannot run here (netns reasons, or the addon is not built), or null. */
export function nativeNetnsSkipReason(): string | null {
  const r = netnsSkipReason();
  if (r !== null) return r;
  return nativeAvailable() ? null : `native addon not available (${nativeLoadError()})`;
}

function macOf(ns: string, dev: string): number {
  const j = JSON.parse(ip(['-n', ns, '-j', 'link', 'show', 'dev', dev])) as Array<{ address?: string }>;
  const a = j[0]?.address ?? '';
  return parseInt(a.replace(/:/g, ''), 16);
}

/** Creates the pair now (synchronously); call `destroyNetnsPair` when done. */
export function createNetnsPair(opts: NetnsPairOptions = {}): NetnsPair {
  hookExit();
  const mtu = opts.mtu ?? 1500;
  const queues = opts.queues ?? 1;
  const id = randomBytes(3).toString('hex');
  const p: NetnsPair = {
    nsA: `roce-${id}-a`,
    nsB: `roce-${id}-b`,
    ifA: `rv${id}a`,
    ifB: `rv${id}b`,
    ipA: '198.18.0.1',
    ipB: '198.18.0.2',
    ip6A: '2001:2::1',
    ip6B: '2001:2::2',
    mtu,
    macA: 0,
    macB: 0,
  };
  try {
    for (const ns of [p.nsA, p.nsB]) {
      ip(['netns', 'add', ns]);
      live.add(ns);
      ip(['-n', ns, 'link', 'set', 'lo', 'up']);
    }
    const q = queues > 1 ? ['numtxqueues', String(queues), 'numrxqueues', String(queues)] : [];
    ip(['-n', p.nsA, 'link', 'add', p.ifA, ...q, 'type', 'veth', 'peer', 'name', p.ifB, ...q, 'netns', p.nsB]);
    for (const [ns, dev, v4, v6] of [
      [p.nsA, p.ifA, p.ipA, p.ip6A],
      [p.nsB, p.ifB, p.ipB, p.ip6B],
    ] as const) {
      ip(['-n', ns, 'link', 'set', 'dev', dev, 'mtu', String(mtu)]);
      ip(['-n', ns, 'addr', 'add', `${v4}/24`, 'dev', dev]);
      ip(['-n', ns, 'addr', 'add', `${v6}/64`, 'dev', dev, 'nodad']);
      ip(['-n', ns, 'link', 'set', 'dev', dev, 'up']);
    }
    p.macA = macOf(p.nsA, p.ifA);
    p.macB = macOf(p.nsB, p.ifB);
    return p;
  } catch (e) {
    destroyNetnsPair(p);
    throw e;
  }
}

export function destroyNetnsPair(p: NetnsPair): void {
  removeNs(p.nsA);
  removeNs(p.nsB);
}

/** Runs `fn` with a fresh pair and removes it afterwards, whatever happens. */
export async function withNetnsPair<T>(opts: NetnsPairOptions, fn: (p: NetnsPair) => Promise<T>): Promise<T> {
  const p = createNetnsPair(opts);
  try {
    return await fn(p);
  } finally {
    destroyNetnsPair(p);
  }
}

/**
 * One pair for a whole test file (call at the top of a describe: it registers beforeAll and
 * afterAll), made only when `skipReason` is null. The getter gives it inside the tests.
 */
export function pairPerFile(skipReason: string | null, opts: NetnsPairOptions): () => NetnsPair {
  let net: NetnsPair | null = null;
  beforeAll(() => {
    if (skipReason === null) net = createNetnsPair(opts);
  });
  afterAll(() => {
    if (net !== null) destroyNetnsPair(net);
    net = null;
  });
  return () => {
    if (net === null) throw new Error("no namespace pair: the tests run only when the file's skip reason is null");
    return net;
  };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command inside `ns` (ip netns exec) with a timeout; never rejects for a non-zero exit. */
export function runInNetns(ns: string, cmd: string, args: readonly string[], timeoutMs = CMD_TIMEOUT_MS): Promise<RunResult> {
  return run('ip', ['netns', 'exec', ns, cmd, ...args], timeoutMs);
}

/** Runs a command with a timeout; never rejects for a non-zero exit. */
export function run(cmd: string, args: readonly string[], timeoutMs = CMD_TIMEOUT_MS): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(cmd, [...args], { timeout: timeoutMs, encoding: 'utf8', maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a Node script (a file) inside `ns` with a timeout. */
export function runNodeInNetns(ns: string, script: string, args: readonly string[] = [], timeoutMs = CMD_TIMEOUT_MS): Promise<RunResult> {
  return runInNetns(ns, process.execPath, [script, ...args], timeoutMs);
}

/** A kernel SNMP counter of `ns` (nstat -az), e.g. 'IcmpOutDestUnreachs', 'UdpNoPorts'. */
export function nstatCounter(ns: string, name: string): number {
  const out = execFileSync('ip', ['netns', 'exec', ns, 'nstat', '-asz', '--json'], { encoding: 'utf8', timeout: CMD_TIMEOUT_MS });
  const j = JSON.parse(out) as { kernel?: Record<string, number> };
  return j.kernel?.[name] ?? 0;
}

/** Anything a test opens and must close. */
export interface Closable {
  close(): void;
}

/**
 * The namespace set-up of a driver test file (call `netnsDrivers` at its top level: it registers
 * jest hooks). Drivers opened or tracked here are closed after each test, then the test's own
 * pairs are removed; the file's shared pair is removed after all its tests.
 */
export interface NetnsDrivers<D extends Closable, O> {
  /** The file's shared pair, made on first use. */
  pair(): NetnsPair;
  /** A pair of the test's own. */
  newPair(opts?: NetnsPairOptions): NetnsPair;
  /** Opens a driver on end a or b of `p` (default: the shared pair), inside that end's namespace. */
  open(side: 'a' | 'b', extra?: O, p?: NetnsPair): D;
  /** Closes `d` after the test too; returns it. */
  track<T extends Closable>(d: T): T;
  /** Closes `d` now, and not again after the test. */
  close(d: Closable): void;
}

/** `openOn(ifname, netns, extra)` opens the file's kind of driver on one end of a pair. */
export function netnsDrivers<D extends Closable, O>(openOn: (ifname: string, netns: string, extra: O | undefined) => D): NetnsDrivers<D, O> {
  let shared: NetnsPair | null = null;
  const own: NetnsPair[] = [];
  const opened = new Set<Closable>();
  const pair = (): NetnsPair => (shared ??= createNetnsPair());
  const track = <T extends Closable>(d: T): T => {
    opened.add(d);
    return d;
  };
  afterEach(() => {
    for (const d of opened) d.close();
    opened.clear();
    for (const p of own.splice(0)) destroyNetnsPair(p);
  });
  afterAll(() => {
    if (shared !== null) destroyNetnsPair(shared);
    shared = null;
  });
  return {
    pair,
    newPair: (opts = {}) => {
      const p = createNetnsPair(opts);
      own.push(p);
      return p;
    },
    open: (side, extra, p = pair()) => track(openOn(side === 'a' ? p.ifA : p.ifB, side === 'a' ? p.nsA : p.nsB, extra)),
    track,
    close: (d) => {
      d.close();
      opened.delete(d);
    },
  };
}

/** Two namespaces over a veth with IPv6 addresses only (fd00:6::1 and fd00:6::2/64, no IPv4 at all). */
export interface NetnsPairV6 {
  nsA: string;
  nsB: string;
  ifA: string;
  ifB: string;
  ip6A: string;
  ip6B: string;
}

export function createNetnsPairV6Only(): NetnsPairV6 {
  hookExit();
  const id = randomBytes(3).toString('hex');
  const p: NetnsPairV6 = { nsA: `roce-${id}-a`, nsB: `roce-${id}-b`, ifA: `r6${id}a`, ifB: `r6${id}b`, ip6A: 'fd00:6::1', ip6B: 'fd00:6::2' };
  try {
    for (const ns of [p.nsA, p.nsB]) {
      ip(['netns', 'add', ns]);
      live.add(ns);
      ip(['-n', ns, 'link', 'set', 'lo', 'up']);
    }
    ip(['-n', p.nsA, 'link', 'add', p.ifA, 'type', 'veth', 'peer', 'name', p.ifB, 'netns', p.nsB]);
    for (const [ns, dev, v6] of [
      [p.nsA, p.ifA, p.ip6A],
      [p.nsB, p.ifB, p.ip6B],
    ] as const) {
      ip(['-n', ns, 'addr', 'add', `${v6}/64`, 'dev', dev, 'nodad']);
      ip(['-n', ns, 'link', 'set', 'dev', dev, 'up']);
    }
    return p;
  } catch (e) {
    for (const ns of [p.nsA, p.nsB]) removeNs(ns);
    throw e;
  }
}

/**
 * A routed path: A — R — B, three namespaces and two veth pairs, R forwarding IPv4 and IPv6 (the
 * kernel's forwarding, TTL and hop limit decremented), A and B on different subnets with R as their
 * default gateway: 198.18.1.1/24 and fd00:a::1/64 on A, 198.18.2.1/24 and fd00:b::1/64 on B.
 */
export interface RoutedPath {
  nsA: string;
  nsR: string;
  nsB: string;
  ifA: string;
  ifB: string;
  ipA: string;
  ipB: string;
  ip6A: string;
  ip6B: string;
  /** The router's interfaces toward A and toward B (in nsR). */
  routerA?: string;
  routerB?: string;
}

export function createRoutedPath(mtu = 1500): RoutedPath {
  hookExit();
  const id = randomBytes(3).toString('hex');
  const p: RoutedPath = {
    nsA: `roce-${id}-a`,
    nsR: `roce-${id}-r`,
    nsB: `roce-${id}-b`,
    ifA: `rr${id}a`,
    ifB: `rr${id}b`,
    ipA: '198.18.1.1',
    ipB: '198.18.2.1',
    ip6A: 'fd00:a::1',
    ip6B: 'fd00:b::1',
  };
  const rA = `rr${id}x`;
  const rB = `rr${id}y`;
  try {
    for (const ns of [p.nsA, p.nsR, p.nsB]) {
      ip(['netns', 'add', ns]);
      live.add(ns);
      ip(['-n', ns, 'link', 'set', 'lo', 'up']);
    }
    ip(['-n', p.nsA, 'link', 'add', p.ifA, 'type', 'veth', 'peer', 'name', rA, 'netns', p.nsR]);
    ip(['-n', p.nsB, 'link', 'add', p.ifB, 'type', 'veth', 'peer', 'name', rB, 'netns', p.nsR]);
    for (const [ns, dev, v4, v6] of [
      [p.nsA, p.ifA, '198.18.1.1/24', 'fd00:a::1/64'],
      [p.nsR, rA, '198.18.1.254/24', 'fd00:a::fe/64'],
      [p.nsR, rB, '198.18.2.254/24', 'fd00:b::fe/64'],
      [p.nsB, p.ifB, '198.18.2.1/24', 'fd00:b::1/64'],
    ] as const) {
      ip(['-n', ns, 'link', 'set', 'dev', dev, 'mtu', String(mtu)]);
      ip(['-n', ns, 'addr', 'add', v4, 'dev', dev]);
      ip(['-n', ns, 'addr', 'add', v6, 'dev', dev, 'nodad']);
      ip(['-n', ns, 'link', 'set', 'dev', dev, 'up']);
    }
    ip(['-n', p.nsA, 'route', 'add', 'default', 'via', '198.18.1.254']);
    ip(['-n', p.nsA, '-6', 'route', 'add', 'default', 'via', 'fd00:a::fe']);
    ip(['-n', p.nsB, 'route', 'add', 'default', 'via', '198.18.2.254']);
    ip(['-n', p.nsB, '-6', 'route', 'add', 'default', 'via', 'fd00:b::fe']);
    execFileSync('ip', ['netns', 'exec', p.nsR, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1'], { timeout: CMD_TIMEOUT_MS });
    return { ...p, routerA: rA, routerB: rB };
  } catch (e) {
    for (const ns of [p.nsA, p.nsR, p.nsB]) removeNs(ns);
    throw e;
  }
}

export function destroyRoutedPath(p: { nsA: string; nsB: string; nsR?: string }): void {
  for (const ns of [p.nsA, p.nsR, p.nsB]) if (ns !== undefined) removeNs(ns);
}
