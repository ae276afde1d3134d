/**
 * The optional native addon (native/, built by scripts/build-native.sh): AF_XDP
 * and AF_PACKET frame I/O and a batched RoCE v2 ICRC. Loaded once, lazily, in
 * try/catch: without it (not built, or turned off by `disableNative`) `nativeAvailable()`
 * is false and `nativeLoadError()` says why; the pure-TypeScript stack does
 * not need it.
 *
 * Hot-path calls exchange integers only: descriptors go through Uint32Arrays
 * the native object holds on to, frames stay in ArrayBuffers JS allocated
 * (NODE_API_NO_EXTERNAL_BUFFERS_ALLOWED: native never hands out its own memory).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RoceError } from '../base/roce-error';
import { icrcV2 } from '../packets/icrc';

/**
 * The codes the addon throws: `roce::code` in native/src/common.h, value for value
 * (test/nic-driver/native-error-codes.test.ts holds the two lists together).
 */
export const AddonErrorCode = {
  /** No interface of that name (in that network namespace). */
  NoSuchInterface: 'ROCE_ERR_NO_SUCH_INTERFACE',
  /** The kernel refused for lack of privileges (EPERM / EACCES: needs root or CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF). */
  NoPrivileges: 'ROCE_ERR_NO_PRIVILEGES',
  /** Another XDP program, or another AF_XDP socket, holds the interface or queue. */
  XdpBusy: 'ROCE_ERR_XDP_BUSY',
  /** The interface's driver lacks an XDP feature asked for: native XDP, or multi-buffer AF_XDP for large frames. */
  NoXdp: 'ROCE_ERR_NO_XDP',
  /** Zero-copy AF_XDP was asked for and the driver does not offer it. */
  NoZeroCopy: 'ROCE_ERR_NO_ZEROCOPY',
  /** The buffer handed over for the UMEM or the rings is too small. */
  UmemTooSmall: 'ROCE_ERR_UMEM_TOO_SMALL',
  /** An argument or option is out of range or of the wrong type. */
  BadArgument: 'ROCE_ERR_BAD_ARGUMENT',
  /** A call on a closed socket (defined in common.h; no addon call throws it today). */
  Closed: 'ROCE_ERR_CLOSED',
  /** Any other failed system call (errno and syscall are set). */
  System: 'ROCE_ERR_SYSTEM',
} as const;
export type AddonErrorCode = (typeof AddonErrorCode)[keyof typeof AddonErrorCode];

/** Error codes of the native layer and the drivers built on it: the addon's, and those the TypeScript side adds. */
export const NativeErrorCode = {
  ...AddonErrorCode,
  /** The addon is not built, or does not load (`nativeLoadError()` says why). */
  NativeUnavailable: 'ROCE_ERR_NATIVE_UNAVAILABLE',
  /** nic-driver/interface-info.ts: `ip` failed or the neighbour could not be resolved in time. */
  InterfaceQuery: 'ROCE_ERR_INTERFACE_QUERY',
  NeighborUnresolved: 'ROCE_ERR_NEIGHBOR_UNRESOLVED',
} as const;
export type NativeErrorCode = (typeof NativeErrorCode)[keyof typeof NativeErrorCode];

/** A driver or native-layer failure with a stable `code` (and the OS errno when there is one). */
export class NicDriverError extends RoceError<NativeErrorCode> {
  readonly errno: number | undefined;
  constructor(code: NativeErrorCode, message: string, errno?: number) {
    super(code, message);
    this.errno = errno;
  }
}

const CODES = new Set<string>(Object.values(AddonErrorCode));

/** Turns an error thrown by the addon into a NicDriverError (others are returned unchanged). */
export function fromNativeError(e: unknown): unknown {
  if (e instanceof NicDriverError) return e;
  // Duck-typed: errors made by the addon may come from another realm (jest's sandbox), where
  // `instanceof Error` is false.
  if (typeof e === 'object' && e !== null) {
    const { code, errno, message } = e as { code?: unknown; errno?: unknown; message?: unknown };
    if (typeof code === 'string' && CODES.has(code) && typeof message === 'string') {
      return new NicDriverError(code as NativeErrorCode, message, typeof errno === 'number' ? errno : undefined);
    }
  }
  return e;
}

/** Calls `fn`, rethrowing addon errors as NicDriverError. */
export function nativeCall<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw fromNativeError(e);
  }
}

/** What both socket classes of the addon have (nic-driver/native-socket-driver.ts drives them through it). */
export interface NativeSocket {
  /** Writes up to `max` received frames as (offset, length) pairs into the rxDesc given at construction; returns how many. */
  rx(max: number): number;
  /** True when rx would return frames now. */
  pending(): boolean;
  tx(count: number): number;
  setRxHandler(fn: (() => void) | null): void;
  stats(): { rxDropped: number };
  close(): void;
}

export interface PacketSocketOptions {
  ifname: string;
  /** Network namespace: a name under /var/run/netns or a path such as /proc/PID/ns/net. */
  netns?: string;
  port?: number;
  ring: ArrayBuffer;
  blockSize?: number;
  blockCount?: number;
  retireMs?: number;
  /** 2: TPACKET_V2, one status word per frame slot, each frame handed over at once; 3: TPACKET_V3 blocks (default). */
  ringVersion?: number;
  /** TPACKET_V2 frame slot size (a multiple of 16). */
  frameSize?: number;
  txSlab: ArrayBuffer;
  rxDesc: Uint32Array;
  txDesc: Uint32Array;
  /**
   * Receive timestamps (both or neither; addons built before them ignore both, and `describe()`
   * then has no `rxTimestamps: true`): `rx` writes each frame's ring header stamp as (tp_sec,
   * tp_nsec, TP_STATUS_TS_* bits >> 29) at 3i.. (3 words per rxDesc pair), and `rxClock` gets
   * CLOCK_REALTIME - CLOCK_MONOTONIC as (seconds low word, high word, nanoseconds), measured at open
   * and again when a burst finds the realtime clock stepped (nic-driver/rx-time.ts).
   */
  rxTime?: Uint32Array;
  rxClock?: Uint32Array;
  /** Ask for the NIC's raw hardware stamps (PACKET_TIMESTAMP SOF_TIMESTAMPING_RAW_HARDWARE). */
  hwTimestamps?: boolean;
  qdiscBypass?: boolean;
  udpGuard?: boolean;
}

export interface PacketSocketInfo {
  ifindex: number;
  mac: string;
  mtu: number;
  ringOffset: number;
  ringBytes: number;
  /** 'udp6' / 'udp4': the guard socket is bound; 'port-in-use': another listener has the port; 'off'. */
  udpGuard: string;
  ringVersion: number;
  /** TPACKET_V2: slot size and count (0 for V3). */
  frameSize: number;
  frames: number;
  /** True when rx writes receive timestamps (absent from addons built before them). */
  rxTimestamps?: boolean;
  fd: number;
}

export interface NativePacketSocket extends NativeSocket {
  stats(): { rxDropped: number; txErrors: number };
  describe(): PacketSocketInfo;
}

export interface XskSocketOptions {
  ifname: string;
  netns?: string;
  queue?: number;
  umem: ArrayBuffer;
  frameSize?: number;
  frameCount?: number;
  /** 0 auto (zero-copy when the driver has it), 1 copy, 2 zero-copy. */
  bindMode?: number;
  /** 0 auto (native, else SKB), 1 native, 2 SKB. */
  xdpMode?: number;
  port?: number;
  objectPath: string;
  multiBuffer?: boolean;
  busyPoll?: boolean;
  /** With busyPoll: drive the driver's NAPI on an empty look at the ring (default true). */
  napiBusyPoll?: boolean;
  jumboBytes?: number;
  /** Retry a bind that finds the queue still held (EBUSY) for up to this long (ms, default 2000; 0: no retry). */
  busyWaitMs?: number;
  rxDesc: Uint32Array;
  txDesc: Uint32Array;
  txState: Uint32Array;
}

export interface XskSocketInfo {
  ifindex: number;
  mac: string;
  mtu: number;
  queue: number;
  zeroCopy: boolean;
  xdpMode: 'native' | 'skb';
  umemOffset: number;
  frameSize: number;
  rxFrames: number;
  txFrames: number;
  txSlotBase: number;
  jumboOffset: number;
  multiBuffer: boolean;
  busyPollNote: string;
  napiBusyPoll: boolean;
  fd: number;
}

export interface NativeXskSocket extends NativeSocket {
  /** True when rx would return frames now (in busy-poll mode it also drives the driver's NAPI). */
  pending(): boolean;
  txReclaim(): number;
  stats(): { rxDropped: number; rxInvalid?: number; txInvalid?: number; rxFillEmpty?: number; kicks: number; rxKicks: number };
  describe(): XskSocketInfo;
}

export interface XdpStatus {
  mode: 'none' | 'native' | 'skb' | 'hw' | 'unknown';
  programs: string[];
  legacy?: boolean;
}

export interface NativeBinding {
  abiVersion: number;
  crcImplementation: string;
  PacketSocket: new (opts: PacketSocketOptions) => NativePacketSocket;
  XskSocket: new (opts: XskSocketOptions) => NativeXskSocket;
  icrcBurst(buf: Uint8Array, desc: Uint32Array, count: number, out: Uint32Array): void;
  /** Computes and writes the ICRCs in place (absent in addons built before it existed). */
  icrcSealBurst?(buf: Uint8Array, desc: Uint32Array, count: number): void;
  xdpStatus(ifname: string, netns?: string): XdpStatus;
  /** `driver` is ethtool's name of the interface's driver ("veth", "mlx5_core"), empty when it reports none. */
  interfaceInfo(ifname: string, netns?: string): { ifindex: number; mac: string; mtu: number; driver: string };
}

/** The repository's native/ directory (from nic-driver/ or dist/nic-driver/), even when it is absent. */
export function nativeDir(): string {
  const candidates = ['..', path.join('..', '..')].map((up) => path.resolve(__dirname, up, 'native'));
  for (const d of candidates) {
    if (fs.existsSync(path.join(d, 'binding.gyp'))) return d;
  }
  // No native/ (a copy without it): name the one beside package.json, where the build puts it.
  for (const d of candidates) {
    if (fs.existsSync(path.join(d, '..', 'package.json'))) return d;
  }
  return candidates[0]!;
}

/** How to get the addon built: the one remedy every "not built" message names. */
export const NATIVE_BUILD_HINT =
  'install the system packages with `sudo scripts/setup-system.sh` (or `npm run setup:system` as root), then run `npm run build:native` (scripts/build-native.sh)';

/** The compiled XDP program. */
export function bpfObjectPath(): string {
  return path.join(nativeDir(), 'build', 'roce_filter.bpf.o');
}

let loaded: NativeBinding | null = null;
let loadError = '';
let tried = false;

function load(): NativeBinding | null {
  if (tried) return loaded;
  tried = true;
  const file = path.join(nativeDir(), 'build', 'Release', 'roce_native.node');
  if (!fs.existsSync(file)) {
    const rel = path.relative(process.cwd(), file);
    loadError = `the native addon is not built (${rel.startsWith('..') || rel === '' ? file : rel} is missing): ${NATIVE_BUILD_HINT}`;
    return null;
  }
  try {
    const b = require(file) as NativeBinding;
    if (b.abiVersion !== 1) {
      loadError = `the native addon has ABI ${String(b.abiVersion)}, this code needs 1: rebuild it with \`npm run build:native\` (scripts/build-native.sh)`;
      return null;
    }
    loaded = b;
  } catch (e) {
    // dlopen's message (say, a missing libxdp.so.1) on one line.
    const why = (e instanceof Error ? e.message : String(e)).replace(/\s*\n\s*/g, ' ');
    loadError = `the native addon does not load (${why}): ${NATIVE_BUILD_HINT}`;
  }
  return loaded;
}

/**
 * Leaves the addon alone from now on: `nativeAvailable()` is false and `nativeLoadError()` is
 * `reason`. The composition root decides (ROCE_NO_NATIVE=1, apps/host/environment.ts); call it
 * before the first use, as an addon already handed out stays in the hands that have it.
 */
export function disableNative(reason: string): void {
  tried = true;
  loaded = null;
  loadError = reason;
}

/** True when the addon is built and loads. */
export function nativeAvailable(): boolean {
  return load() !== null;
}

/** Why the addon is not available ('' when it is). */
export function nativeLoadError(): string {
  load();
  return loadError;
}

/** The addon; throws NicDriverError(NativeUnavailable) when it is not available. */
export function native(): NativeBinding {
  const b = load();
  if (b === null) throw new NicDriverError(NativeErrorCode.NativeUnavailable, `native addon unavailable: ${loadError}`);
  return b;
}

/**
 * RoCE v2 ICRC of a burst of frames in one native call. Frame i's IP header starts at
 * `ipOffsets[i]` and its ICRC field at `icrcOffsets[i]`, both byte offsets into `buf`.
 * Returns (or fills `out` with) the values `packets/icrc.ts` `icrcV2` gives.
 */
export function icrcBurst(buf: Uint8Array, ipOffsets: ArrayLike<number>, icrcOffsets: ArrayLike<number>, out?: Uint32Array): Uint32Array {
  const n = ipOffsets.length;
  if (icrcOffsets.length !== n) {
    throw new NicDriverError(NativeErrorCode.BadArgument, `icrcBurst: ${n} IP offsets but ${icrcOffsets.length} ICRC offsets`);
  }
  const res = out ?? new Uint32Array(n);
  if (res.length < n) throw new NicDriverError(NativeErrorCode.BadArgument, `icrcBurst: out has room for ${res.length} of ${n} values`);
  const desc = descScratch(2 * n);
  for (let i = 0; i < n; i++) {
    desc[2 * i] = ipOffsets[i]!;
    desc[2 * i + 1] = icrcOffsets[i]!;
  }
  icrcDescBurst(buf, desc, n, res);
  return res;
}

/** Bytes from the IP header to the ICRC field from which one native call beats `icrcV2` (measured: 128-256). */
const NATIVE_ICRC_MIN_SPAN = 200;

/**
 * A RoCE v2 ICRC routine for `DecodeOptions.icrcV2`: one native call per frame of at least
 * `NATIVE_ICRC_MIN_SPAN` covered bytes (isa-l's CRC runs several times faster than `zlib.crc32`
 * at 1 KiB), `icrcV2` for shorter frames and for any frame the addon refuses, so the values and
 * the typed errors are `icrcV2`'s. Null when the addon is not loaded.
 */
export function nativeIcrcV2(): ((frame: Uint8Array, ipOff: number, end: number) => number) | null {
  const b = load();
  if (b === null) return null;
  const desc = new Uint32Array(2);
  const out = new Uint32Array(1);
  return (frame, ipOff, end) => {
    if (end - ipOff < NATIVE_ICRC_MIN_SPAN || !(ipOff >= 0 && end <= frame.length)) return icrcV2(frame, ipOff, end);
    desc[0] = ipOff;
    desc[1] = end;
    try {
      b.icrcBurst(frame, desc, 1, out);
    } catch {
      return icrcV2(frame, ipOff, end); // the addon's reason, as packets/icrc.ts words it
    }
    return out[0] as number;
  };
}

/**
 * `icrcBurst` with the offsets already paired in `desc` (IP header, ICRC field) for `count`
 * frames: the receive path fills one reused descriptor array per burst. `out` gets the values.
 */
export function icrcDescBurst(buf: Uint8Array, desc: Uint32Array, count: number, out: Uint32Array): void {
  if (out.length < count || desc.length < 2 * count) {
    throw new NicDriverError(NativeErrorCode.BadArgument, `icrcDescBurst: ${count} frames but room for ${Math.min(out.length, desc.length >>> 1)}`);
  }
  // Called per received run: no closure per call (nativeCall's would be allocated every time).
  try {
    native().icrcBurst(buf, desc, count, out);
  } catch (e) {
    throw fromNativeError(e);
  }
}

/**
 * Seals a burst of frames in place with one native call: `desc` holds `count` pairs (IP header
 * offset, ICRC field offset) into `buf`; each frame's ICRC is written at its ICRC offset,
 * least-significant byte first, as it goes on the wire. The transmit path's form of `icrcBurst`.
 */
export function icrcSealBurst(buf: Uint8Array, desc: Uint32Array, count: number): void {
  const b = native();
  // Called per transmit flush: no closure per call, as in icrcDescBurst.
  try {
    if (b.icrcSealBurst !== undefined) {
      b.icrcSealBurst(buf, desc, count);
      return;
    }
  } catch (e) {
    throw fromNativeError(e);
  }
  const out = new Uint32Array(count);
  nativeCall(() => b.icrcBurst(buf, desc, count, out));
  for (let i = 0; i < count; i++) {
    const at = desc[2 * i + 1]!;
    const v = out[i]!;
    buf[at] = v & 0xff;
    buf[at + 1] = (v >>> 8) & 0xff;
    buf[at + 2] = (v >>> 16) & 0xff;
    buf[at + 3] = v >>> 24;
  }
}

let scratch = new Uint32Array(256);
function descScratch(n: number): Uint32Array {
  if (scratch.length < n) scratch = new Uint32Array(Math.max(n, scratch.length * 2));
  return scratch;
}

/** Parses the addon's 12-hex-digit MAC into the 48-bit integer NicDriver uses. */
export function macFromHex(hex: string): number {
  if (!/^[0-9a-f]{12}$/i.test(hex)) return 0;
  return parseInt(hex, 16);
}

/** Resolves a namespace name to what the addon accepts (names and paths pass through). */
export function netnsPath(ns: string | undefined): string | undefined {
  if (ns === undefined || ns === '') return undefined;
  return ns.includes('/') ? ns : path.join('/var/run/netns', ns);
}

/** Checks an integer option; throws NicDriverError(BadArgument) naming it otherwise. */
export function intOption(name: string, v: number | undefined, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new NicDriverError(NativeErrorCode.BadArgument, `${name} must be an integer in [${min}, ${max}], not ${String(v)}`);
  }
  return v;
}
