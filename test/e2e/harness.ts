/**
 * End-to-end harness: two network namespaces joined by a veth pair (test/support/netns.ts,
 * addresses from 198.18.0.0/15, removed afterwards even on failure), and one `roce` process per
 * namespace (`ip netns exec NS node bin/roce.js ...`), each with a timeout after which it is
 * killed. The processes set up their QPs over TCP between the namespaces, as the real tools do.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type NetnsPair, nativeNetnsSkipReason } from '../support/netns';

export const ROOT = path.resolve(__dirname, '..', '..');

/** The host drivers a live test runs on, with their labels. */
export const HOST_DRIVERS = [
  ['xdp', 'AF_XDP'],
  ['packet', 'AF_PACKET'],
] as const;
const ROCE = path.join(ROOT, 'bin', 'roce.js');

/** Why the end-to-end tests cannot run here (one line), or null. */
export function e2eSkipReason(): string | null {
  const r = nativeNetnsSkipReason();
  if (r !== null) return r;
  if (!fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js'))) return 'the CLI is not built (npm run build)';
  return null;
}

export interface ProcResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The last JSON line of stdout, or null. */
  json: Record<string, unknown> | null;
  /** True when the harness had to kill it at its timeout. */
  timedOut: boolean;
}

export interface RoceProc {
  child: ChildProcess;
  done: Promise<ProcResult>;
  kill(sig?: NodeJS.Signals): void;
}

const live = new Set<ChildProcess>();
let hooked = false;

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const c of live) if (c.pid !== undefined && c.exitCode === null) process.kill(c.pid, 'SIGKILL');
  });
}

function lastJson(text: string): Record<string, unknown> | null {
  const lines = text
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'));
  const l = lines[lines.length - 1];
  if (l === undefined) return null;
  try {
    return JSON.parse(l) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** Starts `node bin/roce.js ARGS` inside `ns`; it is killed after `timeoutMs`. */
export function startRoce(ns: string, args: readonly string[], timeoutMs: number, env: Record<string, string> = {}): RoceProc {
  hookExit();
  const child = spawn('ip', ['netns', 'exec', ns, process.execPath, ROCE, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  live.add(child);
  let stdout = '';
  let stderr = '';
  let timedOut = false;
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const timer = setTimeout(() => {
    timedOut = true;
    child.kill('SIGKILL');
  }, timeoutMs);
  const done = new Promise<ProcResult>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      resolve({ code, signal, stdout, stderr, json: lastJson(stdout), timedOut });
    });
  });
  return {
    child,
    done,
    kill: (sig = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    },
  };
}

let nextPort = 20000 + Math.floor(Math.random() * 20000);

export interface PairOptions {
  driver: 'xdp' | 'packet';
  busyPoll?: boolean;
  timeoutMs?: number;
  /** More environment for both processes (e.g. ROCE_FAULTS, apps/host/environment.ts). */
  env?: Readonly<Record<string, string>>;
  /** Arguments for one side only (e.g. each its own --pcap file). */
  sideArgs?: { server?: readonly string[]; client?: readonly string[] };
}

/**
 * Runs `roce CMD ARGS` as the server in nsB and as the client (towards nsB's address) in nsA;
 * resolves with both results. `cmd` is 'perftest' (ARGS start with the test) or 'pingpong'.
 */
export function roceServerClient(
  net: NetnsPair,
  cmd: 'perftest' | 'pingpong',
  args: readonly string[],
  o: PairOptions,
): { server: RoceProc; client: RoceProc } {
  const port = String(nextPort++);
  const t = o.timeoutMs ?? 30_000;
  const env = { ...o.env, ROCE_BUSY_POLL: o.busyPoll === true ? '1' : '0' };
  // A no-progress limit well inside the harness's own: a stalled run then ends by itself and says where it stood
  // (sent and received counts) instead of being killed silently. A test's own --timeout is kept (the last flag wins).
  const noProgressS = String(Math.max(1, Math.min(10, Math.ceil(t / 2000))));
  const common = ['--driver', o.driver, '--port', port, '--json', ...(args.includes('--timeout') ? [] : ['--timeout', noProgressS])];
  const server = startRoce(net.nsB, [cmd, ...args, '--dev', net.ifB, ...common, ...(o.sideArgs?.server ?? [])], t, env);
  const client = startRoce(net.nsA, [cmd, ...args, net.ipB, '--dev', net.ifA, ...common, ...(o.sideArgs?.client ?? [])], t, env);
  return { server, client };
}

export async function runPair(
  net: NetnsPair,
  cmd: 'perftest' | 'pingpong',
  args: readonly string[],
  o: PairOptions,
): Promise<{ server: ProcResult; client: ProcResult }> {
  const { server, client } = roceServerClient(net, cmd, args, o);
  const [s, c] = await Promise.all([server.done, client.done]);
  return { server: s, client: c };
}

/** A one-paragraph description of a failed run, for assertion messages. */
export function explain(r: ProcResult): string {
  return `exit ${String(r.code)}${r.signal !== null ? ` (${r.signal})` : ''}${r.timedOut ? ' TIMED OUT' : ''}; stdout: ${r.stdout.trim().slice(0, 600)}; stderr: ${r.stderr.trim().slice(0, 600)}`;
}
