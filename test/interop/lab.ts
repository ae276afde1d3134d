/**
 * The rxe lab from jest: runs scripts/rxe-lab/run.sh (one qemu guest running Linux rdma_rxe
 * on a tap in a fresh network namespace, several steps per boot) and reads back what each
 * step's guest tool and host command printed, plus a check of the whole capture: every RoCE
 * frame decoded with its ICRC, who retransmitted and who NAKed, and the out-of-band TCP
 * streams (to compare the exchanges byte for byte).
 *
 * Captures land in captures/interop/<name>.pcap (ignored by git), with <name>.json beside
 * them: the per-step results that docs/interop.md's matrix is made from.
 */
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readCapture } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';
import { ipv6ToString } from '../../packets/bytes';
import { nativeAvailable, nativeLoadError } from '../../nic-driver/native-binding';
import { isRocePortProbe } from '../../apps/doctor/doctor-checks';

export const REPO = path.resolve(__dirname, '..', '..');
const LAB = path.join(REPO, 'scripts', 'rxe-lab');
export const CAPTURE_DIR = path.join(REPO, 'captures', 'interop');
export const GUEST_IP = '198.18.0.1';
export const HOST_IP = '198.18.0.2';
/** The global IPv6 addresses of a boot with `ipv6` (run.sh --ipv6). */
export const GUEST_IP6 = 'fd00:198:18::1';
export const HOST_IP6 = 'fd00:198:18::2';

export interface Step {
  id: number;
  /** What the guest's tool is: the server (the stack connects to it) or the client. */
  guestRole: 'server' | 'client';
  /** The command in the guest (@GID@ = its RoCE v2 GID index, @PEER@ = the host's address). */
  guest: string;
  /** bash -c in the namespace; $ROCE, $RXE_TAP, $RXE_GUEST_IP, $RXE_HOST_IP are set. */
  host: string;
  timeoutS?: number;
  port?: number;
}

export interface StepResult {
  id: number;
  guestRc: number | null;
  hostRc: number | null;
  guestOut: string;
  hostOut: string;
  hostErr: string;
  /** The host command's --json summary (its last line that parses), or null. */
  hostJson: Record<string, unknown> | null;
}

export interface SourceStats {
  /** Request packets (anything but ACK / READ response / atomic ACK). */
  requests: number;
  /** Request packets whose (destination QP, PSN) this source had sent before. */
  retransmits: number;
  /** ACKs with a NAK syndrome (PSN sequence error, RNR, ...). */
  naks: number;
  rnrNaks: number;
}

export interface CaptureCheck {
  frames: number;
  roce: number;
  badIcrc: number;
  /** The doctor's roce-port datagrams (apps/doctor/doctor-checks.ts ROCE_PORT_PROBE), not counted in `roce`. */
  rocePortProbes: number;
  malformed: number;
  firstProblems: string[];
  /** Per source IP. */
  bySource: Record<string, SourceStats>;
  /** RoCE frames per destination, keyed "ip/qpn" (qpn in decimal). */
  toQp: Record<string, number>;
  /** Payload of every TCP connection that carried one, per direction, in sequence order; in the order they opened. */
  tcp: TcpConversation[];
}

export interface TcpConversation {
  port: number;
  /** The client's (connecting side's) address and port. */
  client: string;
  server: string;
  /** The capture's index of the connection's first frame (its SYN when the capture has it). */
  firstFrame: number;
  toServer: Buffer;
  toClient: Buffer;
}

export interface LabRun {
  name: string;
  status: number | null;
  durationMs: number;
  steps: Map<number, StepResult>;
  console: string;
  stderr: string;
  capturePath: string;
  capture: CaptureCheck;
  /** False when the run recorded no frames (LabOptions.capture). */
  captured: boolean;
  guestNft: string;
  /** Frames the host sent that the tap dropped before qemu read them (so before the capture point); null when not recorded. */
  tapDropped: number | null;
}

export interface LabOptions {
  /** Netdev MTU of the tap and of the guest's eth0 (default 1500). */
  mtu?: number;
  /** Drop this many per 10000 of the RoCE frames the guest receives (nftables numgen in the guest). */
  guestLoss?: number;
  /** In each step, drop the first CM REQ and the first CM REP the guest receives (console lines `RXE-CMDROP <step> <attribute> packets <n>`). */
  guestCmDrop?: boolean;
  /** Whole-run bound in seconds (default: sum of the steps' timeouts + 60). */
  timeoutS?: number;
  /** Record the frames (default true); off for runs that move hundreds of MB (perftest -a, -D), whose figures come from both ends' reports. */
  capture?: boolean;
  /** Give the tap and the guest IPv6 addresses too (fd00:198:18::2 and ::1): @GID6LL@ and @GID6@ in guest commands. */
  ipv6?: boolean;
  /** The guest kernel (RXE_LAB_KERNEL): 6.1 (default) or 6.12, whose rxe has FLUSH and ATOMIC WRITE. */
  kernel?: LabKernel;
  /** Go-back-N rules the host's tool breaks on purpose (an attack), written to the record as `breaksRules` (apps/sweep/capture-files.ts). */
  breaksRules?: string[];
}

export type LabKernel = '6.1' | '6.12';

let cachedReason: string | undefined;

/** Why the interop suite cannot run here, or null: from what is installed and unpacked (scripts/rxe-lab/ready.sh); it downloads nothing. */
export function interopSkipReason(): string | null {
  if (cachedReason !== undefined) return cachedReason === '' ? null : cachedReason;
  cachedReason = computeSkipReason() ?? '';
  return cachedReason === '' ? null : cachedReason;
}

function computeSkipReason(): string | null {
  if (process.platform !== 'linux') return 'the rxe lab needs Linux';
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'not root (the rxe lab needs network namespaces and a tap device)';
  if (process.env['ROCE_SKIP_INTEROP'] === '1') return 'ROCE_SKIP_INTEROP=1';
  try {
    execFileSync('sh', ['-c', 'command -v qemu-system-x86_64'], { stdio: 'ignore' });
  } catch {
    return 'qemu-system-x86_64 not installed (apt-get install qemu-system-x86)';
  }
  for (const c of ['busybox', 'cpio', 'modprobe', 'nft', 'tcpdump']) {
    try {
      execFileSync('sh', ['-c', `command -v ${c} || test -x /bin/${c} || test -x /sbin/${c}`], { stdio: 'ignore' });
    } catch {
      return `${c} not installed (scripts/setup-system.sh installs it)`;
    }
  }
  if (!fs.existsSync('/dev/net/tun')) return '/dev/net/tun is missing';
  if (!nativeAvailable()) return `native addon not available (${nativeLoadError()})`;
  if (!fs.existsSync(path.join(REPO, 'dist', 'cli', 'main.js'))) return 'dist/ is not built (npm run build)';
  // What is present decides, never a download: ready.sh only looks (npm run setup:lab fetches).
  try {
    execFileSync('bash', [path.join(LAB, 'ready.sh')], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    const line = (err.stderr?.toString() ?? '')
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('rxe-lab: '))
      .pop();
    return line !== undefined ? `rxe lab not ready: ${line.slice('rxe-lab: '.length)}` : `rxe lab not ready: ${err.message.split('\n')[0]}`;
  }
  return null;
}

/** Why the lab cannot boot `kernel` here, or null: interopSkipReason's checks, then ready.sh for that kernel's cache. */
export function labKernelSkipReason(kernel: LabKernel): string | null {
  const common = interopSkipReason();
  if (common !== null || kernel === '6.1') return common;
  try {
    execFileSync('bash', [path.join(LAB, 'ready.sh')], { env: { ...process.env, RXE_LAB_KERNEL: kernel }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
  } catch (e) {
    const err = e as { stderr?: Buffer; message: string };
    const line = (err.stderr?.toString() ?? '')
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('rxe-lab: '))
      .pop();
    return `rxe lab (kernel ${kernel}) not ready: ${line !== undefined ? line.slice('rxe-lab: '.length) : err.message.split('\n')[0]}`;
  }
  return null;
}

/** Boots one guest, runs `steps` in it, and returns what happened. Never rejects for a failed step. */
export async function runLab(name: string, steps: readonly Step[], opts: LabOptions = {}): Promise<LabRun> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `rxe-lab-${name}-`));
  const scenario = path.join(dir, 'scenario.txt');
  const lines = steps.map((s) => {
    if (s.guest.includes(' | ') || s.host.includes(' | ')) throw new Error(`step ${s.id}: " | " separates fields`);
    return `${s.id} ${s.guestRole} ${s.port ?? 18515} ${s.timeoutS ?? 60} | ${s.guest} | ${s.host}`;
  });
  fs.writeFileSync(scenario, `${lines.join('\n')}\n`);
  const out = path.join(dir, 'out');
  const total = opts.timeoutS ?? steps.reduce((a, s) => a + (s.timeoutS ?? 60), 60);
  const args = [path.join(LAB, 'run.sh'), '--scenario', scenario, '--out', out, '--timeout', String(total), '--mtu', String(opts.mtu ?? 1500)];
  if (opts.guestLoss !== undefined) args.push('--guest-loss', String(opts.guestLoss));
  if (opts.guestCmDrop === true) args.push('--guest-cm-drop');
  if (opts.capture === false) args.push('--no-capture');
  if (opts.ipv6 === true) args.push('--ipv6');
  const t0 = Date.now();
  const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    execFile(
      'bash',
      args,
      {
        env: { ...process.env, RXE_LAB_KERNEL: opts.kernel ?? '6.1' },
        timeout: (total + 30) * 1000,
        killSignal: 'SIGTERM',
        maxBuffer: 64 << 20,
        encoding: 'utf8',
      },
      (err, _stdout, stderr) => {
        const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null;
        resolve({ code, stderr });
      },
    );
  });
  const durationMs = Date.now() - t0;
  const read = (f: string): string => {
    try {
      return fs.readFileSync(path.join(out, f), 'utf8');
    } catch {
      return '';
    }
  };
  const num = (text: string): number | null => (text.trim() === '' ? null : Number(text.trim()));
  const results = new Map<number, StepResult>();
  for (const s of steps) {
    const hostOut = read(`steps/${s.id}.host.out`);
    let hostJson: Record<string, unknown> | null = null;
    for (const l of hostOut.trim().split('\n').reverse()) {
      try {
        hostJson = JSON.parse(l) as Record<string, unknown>;
        break;
      } catch {
        // not JSON
      }
    }
    results.set(s.id, {
      id: s.id,
      guestRc: num(read(`steps/${s.id}.guest.rc`)),
      hostRc: num(read(`steps/${s.id}.host.rc`)),
      guestOut: read(`steps/${s.id}.guest.out`),
      hostOut,
      hostErr: read(`steps/${s.id}.host.err`),
      hostJson,
    });
  }
  fs.mkdirSync(CAPTURE_DIR, { recursive: true });
  const capturePath = path.join(CAPTURE_DIR, `${name}.pcap`);
  const src = path.join(out, 'capture.pcap');
  if (fs.existsSync(src)) fs.copyFileSync(src, capturePath);
  else fs.rmSync(capturePath, { force: true });
  const capture = checkCapture(fs.existsSync(capturePath) ? fs.readFileSync(capturePath) : new Uint8Array(0));
  const run: LabRun = {
    name,
    status: r.code,
    durationMs,
    steps: results,
    console: read('console.log'),
    stderr: r.stderr,
    capturePath,
    capture,
    captured: opts.capture !== false,
    guestNft: read('guest-nft.txt').trim(),
    tapDropped: num(read('tap-dropped.txt')),
  };
  fs.writeFileSync(
    path.join(CAPTURE_DIR, `${name}.json`),
    `${JSON.stringify(
      {
        name,
        date: new Date().toISOString(),
        status: r.code,
        durationMs,
        mtu: opts.mtu ?? 1500,
        guestLoss: opts.guestLoss ?? 0,
        tapDropped: run.tapDropped,
        ...(opts.breaksRules !== undefined ? { breaksRules: opts.breaksRules } : {}),
        capture: { frames: capture.frames, roce: capture.roce, badIcrc: capture.badIcrc, malformed: capture.malformed, bySource: capture.bySource },
        steps: steps.map((s) => ({ ...s, guestRc: results.get(s.id)?.guestRc ?? null, hostRc: results.get(s.id)?.hostRc ?? null })),
      },
      null,
      1,
    )}\n`,
  );
  fs.rmSync(dir, { recursive: true, force: true });
  return run;
}

const ACK_OPCODES = new Set([0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16]); // RC READ responses, ACK, atomic ACK

/** Decodes every frame: ICRC, who retransmitted and NAKed, and the TCP streams of the exchanges. */
export function checkCapture(file: Uint8Array): CaptureCheck {
  const c: CaptureCheck = { frames: 0, roce: 0, rocePortProbes: 0, badIcrc: 0, malformed: 0, firstProblems: [], bySource: {}, toQp: {}, tcp: [] };
  if (file.length === 0) {
    c.firstProblems.push('no capture');
    return c;
  }
  const cap = readCapture(file);
  if (cap.error !== null) c.firstProblems.push(`capture: ${cap.error.message}`);
  const seen = new Map<string, Set<number>>();
  const segs: TcpSegment[] = [];
  for (const rec of cap.records) {
    c.frames++;
    const d = decodeFrame(rec.data, rec.linkType);
    if (!d.roce) {
      const sg = tcpSegment(rec.data, rec.index);
      if (sg !== null) segs.push(sg);
      continue;
    }
    // The doctor's roce-port datagram (a live probe run sends it before any traffic) has a bad ICRC on purpose.
    if (isRocePortProbe(d)) {
      c.rocePortProbes++;
      continue;
    }
    c.roce++;
    if (d.error !== null) {
      c.malformed++;
      if (c.firstProblems.length < 5) c.firstProblems.push(`frame ${rec.index}: ${d.error.message}`);
    }
    if (d.icrcOk !== true) {
      c.badIcrc++;
      if (c.firstProblems.length < 5) c.firstProblems.push(`frame ${rec.index}: ICRC ${d.icrcOk === false ? 'bad' : 'not checked'}`);
    }
    const src = d.ipv4 !== null ? ipText(d.ipv4.src) : d.ipv6 !== null ? ipv6ToString(d.ipv6.src) : '?';
    const s = (c.bySource[src] ??= { requests: 0, retransmits: 0, naks: 0, rnrNaks: 0 });
    const bth = d.bth;
    if (bth === null) continue;
    const dstKey = `${d.ipv4 !== null ? ipText(d.ipv4.dst) : d.ipv6 !== null ? ipv6ToString(d.ipv6.dst) : '?'}/${bth.destQp}`;
    c.toQp[dstKey] = (c.toQp[dstKey] ?? 0) + 1;
    if (bth.opcode === 0x11 && d.aeth !== null) {
      const syndrome = d.aeth.syndrome;
      if ((syndrome & 0x60) === 0x60) s.naks++;
      if ((syndrome & 0x60) === 0x20) {
        s.naks++;
        s.rnrNaks++;
      }
    }
    if (ACK_OPCODES.has(bth.opcode) || bth.opcode >= 0x80) continue;
    s.requests++;
    const key = `${src}/${bth.destQp}`;
    let set = seen.get(key);
    if (set === undefined) seen.set(key, (set = new Set()));
    if (set.has(bth.psn)) s.retransmits++;
    else set.add(bth.psn);
  }
  c.tcp = tcpConversations(segs);
  return c;
}

export function ipText(v: number): string {
  return [v >>> 24, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff].join('.');
}

interface TcpSegment {
  frame: number;
  src: string;
  dst: string;
  seq: number;
  syn: boolean;
  ack: boolean;
  data: Buffer;
}

/** An Ethernet/IPv4/TCP frame's addresses ("a.b.c.d:port"), sequence number, SYN and ACK flags and payload, or null. */
function tcpSegment(frame: Uint8Array, index: number): TcpSegment | null {
  const b = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  if (b.length < 54 || b.readUInt16BE(12) !== 0x0800) return null;
  const ihl = ((b[14] as number) & 0x0f) * 4;
  if (b[23] !== 6) return null;
  const totalLen = b.readUInt16BE(16);
  const tcpOff = 14 + ihl;
  const dataOff = ((b[tcpOff + 12] as number) >> 4) * 4;
  const flags = b[tcpOff + 13] as number;
  return {
    frame: index,
    src: `${b[26]}.${b[27]}.${b[28]}.${b[29]}:${b.readUInt16BE(tcpOff)}`,
    dst: `${b[30]}.${b[31]}.${b[32]}.${b[33]}:${b.readUInt16BE(tcpOff + 2)}`,
    seq: b.readUInt32BE(tcpOff + 4),
    syn: (flags & 0x02) !== 0,
    ack: (flags & 0x10) !== 0,
    data: Buffer.from(b.subarray(tcpOff + dataOff, 14 + totalLen)),
  };
}

interface TcpConnection {
  conv: TcpConversation;
  /** Initial sequence numbers, by sending side, from the SYN and the SYN-ACK. */
  isn: Map<string, number>;
  toServer: { seq: number; data: Buffer }[];
  toClient: { seq: number; data: Buffer }[];
}

/**
 * The connections with a payload, in the order they opened. A SYN opens a new connection even on
 * a 4-tuple seen before (a port the kernel picked again), and its sender is the client; a
 * connection whose SYN the capture lacks takes the lower port as the server's.
 */
function tcpConversations(segs: readonly TcpSegment[]): TcpConversation[] {
  const port = (x: string): number => Number(x.split(':')[1]);
  const all: TcpConnection[] = [];
  const open = new Map<string, TcpConnection>();
  const start = (client: string, server: string, frame: number): TcpConnection => {
    const k: TcpConnection = {
      conv: { port: port(server), client, server, firstFrame: frame, toServer: Buffer.alloc(0), toClient: Buffer.alloc(0) },
      isn: new Map(),
      toServer: [],
      toClient: [],
    };
    all.push(k);
    open.set(`${client}>${server}`, k);
    open.set(`${server}>${client}`, k);
    return k;
  };
  for (const sg of segs) {
    let k = open.get(`${sg.src}>${sg.dst}`);
    if (sg.syn && !sg.ack && (k === undefined || k.toServer.length + k.toClient.length > 0 || k.conv.client !== sg.src)) k = start(sg.src, sg.dst, sg.frame);
    else if (k === undefined) k = port(sg.src) > port(sg.dst) ? start(sg.src, sg.dst, sg.frame) : start(sg.dst, sg.src, sg.frame);
    if (sg.syn) k.isn.set(sg.src, sg.seq);
    if (sg.data.length > 0) (sg.src === k.conv.client ? k.toServer : k.toClient).push({ seq: sg.seq, data: sg.data });
  }
  const out: TcpConversation[] = [];
  for (const k of all) {
    if (k.toServer.length + k.toClient.length === 0) continue;
    k.conv.toServer = tcpStream(k.toServer, k.isn.get(k.conv.client));
    k.conv.toClient = tcpStream(k.toClient, k.isn.get(k.conv.server));
    out.push(k.conv);
  }
  return out;
}

/** One direction's bytes in sequence order, counted from the SYN's number (modulo 2^32) so a wrap keeps the order; retransmitted bytes once. */
function tcpStream(list: readonly { seq: number; data: Buffer }[], isn: number | undefined): Buffer {
  const base = isn !== undefined ? (isn + 1) >>> 0 : (list[0]?.seq ?? 0);
  const rel = list.map((sg) => ({ at: (sg.seq - base) >>> 0, data: sg.data })).sort((x, y) => x.at - y.at);
  const parts: Buffer[] = [];
  let next = 0;
  for (const sg of rel) {
    const end = sg.at + sg.data.length;
    if (end <= next) continue; // retransmitted
    parts.push(sg.data.subarray(Math.max(0, next - sg.at)));
    next = end;
  }
  return Buffer.concat(parts);
}

/** A one-line account of a step, for failure messages. */
export function describe(s: StepResult | undefined): string {
  if (s === undefined) return 'step did not run';
  return `guest rc ${s.guestRc} host rc ${s.hostRc}\n--- guest:\n${s.guestOut}\n--- host:\n${s.hostOut}\n--- host stderr:\n${s.hostErr}`;
}

/** The numbers of rc_pingpong's "N bytes in S seconds" and "N iters" lines. */
export function pingpongNumbers(out: string): { bytes: number; iters: number } | null {
  const b = /^(\d+) bytes in [\d.]+ seconds = [\d.]+ Mbit\/sec$/m.exec(out);
  const i = /^(\d+) iters in [\d.]+ seconds = [\d.]+ usec\/iter$/m.exec(out);
  return b !== null && i !== null ? { bytes: Number(b[1]), iters: Number(i[1]) } : null;
}

/** The result rows of a perftest report (#bytes, #iterations): one, or every size's with -a. */
export function perftestRows(out: string): { bytes: number; iters: number }[] {
  const lines = out.split('\n');
  const h = lines.findIndex((l) => /^\s*#bytes\s+#iterations/.test(l));
  if (h < 0) return [];
  const rows: { bytes: number; iters: number }[] = [];
  for (const l of lines.slice(h + 1)) {
    const m = /^\s*(\d+)\s+(\d+)\s/.exec(l);
    if (m === null) break;
    rows.push({ bytes: Number(m[1]), iters: Number(m[2]) });
  }
  return rows;
}

/** The first result row of a perftest report: #bytes and #iterations (first two columns after the header). */
export function perftestRow(out: string): { bytes: number; iters: number } | null {
  return perftestRows(out)[0] ?? null;
}
