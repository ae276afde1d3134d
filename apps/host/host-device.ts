/**
 * A `Device` on a host interface, for the commands that talk to other
 * machines (`roce perftest`, `roce pingpong`): the interface's MAC and IPv4
 * addresses become the GID table, frames go through an AF_XDP or AF_PACKET
 * driver, time is real, and the peer's MAC comes from the kernel's neighbour
 * table (the out-of-band TCP connection to the peer has usually filled it).
 *
 * The native drivers are loaded lazily with a guarded require, so this file
 * compiles and the rest of the CLI works on a machine without them.
 *
 * `memory` is a test mode, not a driver: the two ends `sim-a` and `sim-b` of
 * one in-memory link in this process, on a virtual clock driven by the event
 * loop (see stack/perftest/clock-pump.ts), so the CLI can be run end to end
 * twice in one process with the out-of-band exchange over real TCP.
 */
import { randomInt } from 'node:crypto';
import { Device } from '../../stack/device';
import { RealClock } from '../../base/clock';
import { isIpv4MappedGid } from '../../stack/address';
import { createSimPair, type SimPair } from '../sim/sim-pair';
import { pumpVirtualClock, setIdleWait, type ClockPump } from './clock-pump';
import { type NicDriver, type TxSpace, hasRunReceive, hasZeroCopyTx } from '../../nic-driver/driver';
import { PassThroughDriver } from '../../nic-driver/pass-through-driver';
import { faultsFromEnv, withFaults } from '../../nic-driver/fault-driver';
import { ipv6ToString } from '../../packets/bytes';
import { AfXdpDriver } from '../../nic-driver/af-xdp-driver';
import { AfPacketDriver } from '../../nic-driver/af-packet-driver';
import { interfaceInfo, resolveNeighbor } from '../../nic-driver/interface-info';
import { nativeAvailable, nativeLoadError } from '../../nic-driver/native-binding';
import { fastestIcrcBatch } from '../../nic-driver/native-icrc';

const EMPTY = new Uint8Array(0);

export const HostDriverKind = { XDP: 'xdp', PACKET: 'packet', MEMORY: 'memory' } as const;
export type HostDriverKind = (typeof HostDriverKind)[keyof typeof HostDriverKind];

/** The drivers a user chooses from (memory is a test mode and not listed). */
export const HOST_DRIVERS: readonly HostDriverKind[] = [HostDriverKind.XDP, HostDriverKind.PACKET];

export const HostDeviceErrorCode = {
  /** The native driver module is not built or does not load. */
  DRIVER_UNAVAILABLE: 'DRIVER_UNAVAILABLE',
  /** No such interface, or it has no IPv4 address. */
  NO_INTERFACE: 'NO_INTERFACE',
  /** The peer's MAC address is not known. */
  NO_NEIGHBOR: 'NO_NEIGHBOR',
  /** A test-mode end is already open. */
  BUSY: 'BUSY',
  /** The driver loaded but could not open the interface (permissions, XDP attach, ...). */
  DRIVER_FAILED: 'DRIVER_FAILED',
} as const;
export type HostDeviceErrorCode = (typeof HostDeviceErrorCode)[keyof typeof HostDeviceErrorCode];

export class HostDeviceError extends Error {
  constructor(
    readonly code: HostDeviceErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'HostDeviceError';
  }
}

export interface HostDeviceOptions {
  /**
   * Busy-poll mode (latency runs): the driver checks for frames on every turn of the event loop
   * (AF_XDP also drives the kernel's NAPI from this thread with SO_PREFER_BUSY_POLL), and the
   * perftest / pingpong loops spin on their completion queues. Off (the default): the process
   * sleeps in epoll until frames arrive, which costs no CPU while idle. Default: ROCE_BUSY_POLL=1
   * in the environment turns it on.
   */
  busyPoll?: boolean;
  /**
   * Without busy-poll: how long (µs) the event loop keeps checking for frames after the last
   * receive burst before it goes back to sleeping in epoll (default 200; 0 = sleep at once). While
   * frames keep coming the process never falls asleep, so the peer's kernel does not pay a
   * wake-up per burst (on a veth the sender's core runs that wake-up, 10 % of it at full rate),
   * and an answer that comes quickly finds the process awake; once traffic stops it sleeps again,
   * so an idle process still costs nothing. NAPI's busy-poll window and DPDK's power-aware
   * polling work the same way. Default: ROCE_RX_LINGER_US in the environment.
   */
  rxLingerUs?: number;
}

/** The default receive linger (µs, see HostDeviceOptions.rxLingerUs). */
export const DEFAULT_RX_LINGER_US = 200;

/** The receive linger from ROCE_RX_LINGER_US (µs, 0..1 000 000), or the default. */
export function rxLingerFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const v = env['ROCE_RX_LINGER_US'];
  if (v === undefined || v === '') return DEFAULT_RX_LINGER_US;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 1_000_000) throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `ROCE_RX_LINGER_US must be an integer 0..1000000 (µs), not ${JSON.stringify(v)}`);
  return n;
}

/** The busy-poll default: the ROCE_BUSY_POLL environment variable ('1' or 'on'). */
export function busyPollFromEnv(): boolean {
  const v = process.env['ROCE_BUSY_POLL'];
  return v === '1' || v === 'on' || v === 'true';
}

export interface HostDevice {
  readonly device: Device;
  readonly ifname: string;
  readonly driver: HostDriverKind;
  /** True when the driver busy-polls (see HostDeviceOptions). */
  readonly busyPoll: boolean;
  /** True when time is simulated (the memory test mode). */
  readonly virtualTime: boolean;
  /** Makes sure the device knows the MAC of the host whose GID is `gid` (reads the kernel's neighbour table). */
  ensureNeighbor(gid: Uint8Array): Promise<void>;
  close(): void;
}

const DRIVER_LABELS: Record<'xdp' | 'packet', string> = { xdp: 'AF_XDP', packet: 'AF_PACKET' };

type DriverFactory = (ifname: string, opts: { busyPoll: boolean; mtu?: number }) => NicDriver;

function loadDriverFactory(kind: 'xdp' | 'packet'): DriverFactory {
  if (!nativeAvailable()) throw new HostDeviceError(HostDeviceErrorCode.DRIVER_UNAVAILABLE, `driver not available: ${nativeLoadError()}`);
  // ROCE_XDP_MODE (native, skb or auto) chooses where AF_XDP's program runs (a tuning knob for benchmarks).
  const env = process.env['ROCE_XDP_MODE'];
  const xdpMode = env === 'native' || env === 'skb' || env === 'auto' ? env : undefined;
  if (env !== undefined && env !== '' && xdpMode === undefined) throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `ROCE_XDP_MODE must be native, skb or auto, not ${JSON.stringify(env)}`);
  const mtuOf = (o: { mtu?: number }): { mtu?: number } => (o.mtu !== undefined ? { mtu: o.mtu } : {});
  return kind === 'xdp'
    ? (ifname, o) => AfXdpDriver.open({ ifname, busyPoll: o.busyPoll, ...mtuOf(o), ...(xdpMode !== undefined ? { xdpMode } : {}) })
    : (ifname, o) => AfPacketDriver.open({ ifname, busyPoll: o.busyPoll, ...mtuOf(o) });
}

interface InterfaceFacts {
  ipv4: string[];
  mtu?: number;
  vlan?: { parent: string; id: number } | null;
}

/** IPv4 addresses, MTU and VLAN of `ifname`. */
async function interfaceFacts(ifname: string): Promise<InterfaceFacts> {
  try {
    const f = await interfaceInfo(ifname);
    return { ipv4: f.ipv4.slice(), mtu: f.mtu, vlan: f.vlan ?? null };
  } catch (e) {
    throw new HostDeviceError(HostDeviceErrorCode.NO_INTERFACE, `interface ${ifname}: ${(e as Error).message}`);
  }
}

/** IPv4 addresses of `ifname`. */
export async function interfaceIpv4(ifname: string): Promise<string[]> {
  return (await interfaceFacts(ifname)).ipv4;
}

function gidToIpv4(gid: Uint8Array): string {
  return `${gid[12]}.${gid[13]}.${gid[14]}.${gid[15]}`;
}

/** The peer's MAC, from the kernel's neighbour table (nic-driver/interface-info resolves it when needed). */
async function lookupNeighbor(ifname: string, ip: string): Promise<number> {
  try {
    return await resolveNeighbor(ifname, ip, 3000);
  } catch (e) {
    throw new HostDeviceError(HostDeviceErrorCode.NO_NEIGHBOR, `no neighbour entry for ${ip} on ${ifname}: ${(e as Error).message}`);
  }
}

/**
 * A driver that tells waiters when its receive handler has run (the device has then processed a
 * burst: completions may be in the CQs, RDMA WRITEs in memory), and keeps the event loop polling for
 * the receive linger after each burst (HostDeviceOptions.rxLingerUs). Everything else is passed through.
 */
export class ActivityDriver extends PassThroughDriver {
  /** One shared wait: resolved by the next receive burst or its fallback timer, whichever comes first. */
  private pending: { promise: Promise<void>; resolve: () => void; timer: NodeJS.Timeout } | null = null;
  /** Zero-copy transmit, passed through when the inner driver has it (nic-driver/driver.ts). */
  readonly txSpace?: TxSpace;
  readonly txReserve?: (len: number) => number;
  readonly txCommit?: () => number;
  /** Descriptor receive, passed through when the inner driver has it (driver.ts RunReceive); the wake-up comes from the handler. */
  readonly rxRun?: (max: number, desc: Uint32Array) => number;
  /** Receive linger (see HostDeviceOptions.rxLingerUs), in ms for performance.now(); 0 = none. */
  private readonly lingerMs: number;
  private lastRxAt = 0;
  private lingering = false;
  private closed = false;
  /**
   * One turn of the linger: while a burst arrived within the window, queue another turn. A queued
   * immediate makes libuv poll without sleeping, so the driver's fd is checked on every turn and
   * its handler runs as frames come, with no wake-up from the kernel.
   */
  private readonly lingerTurn = (): void => {
    if (!this.closed && performance.now() - this.lastRxAt < this.lingerMs) setImmediate(this.lingerTurn);
    else this.lingering = false;
  };
  constructor(inner: NicDriver, lingerUs = 0) {
    super(inner);
    this.lingerMs = lingerUs / 1000;
    if (hasZeroCopyTx(inner)) {
      this.txSpace = inner.txSpace;
      this.txReserve = (len) => inner.txReserve(len);
      this.txCommit = () => inner.txCommit();
    }
    if (hasRunReceive(inner)) this.rxRun = (max, desc) => inner.rxRun(max, desc);
  }
  /** The buffer of the inner driver's last run (driver.ts RunReceive; empty without the extension). */
  get rxRunBuffer(): Uint8Array {
    const inner = this.inner;
    return hasRunReceive(inner) ? inner.rxRunBuffer : EMPTY;
  }
  override setRxHandler(fn: (() => void) | null): void {
    this.inner.setRxHandler(
      fn === null
        ? null
        : () => {
            fn();
            this.wake();
            this.linger();
          },
    );
  }
  override close(): void {
    this.closed = true;
    this.wake();
    super.close();
  }
  /** True while the receive linger keeps the event loop polling (a burst came within the window). */
  get lingeringNow(): boolean {
    return this.lingering;
  }
  private linger(): void {
    if (this.lingerMs <= 0) return;
    this.lastRxAt = performance.now();
    if (this.lingering) return;
    this.lingering = true;
    setImmediate(this.lingerTurn);
  }
  private wake(): void {
    const p = this.pending;
    if (p === null) return;
    this.pending = null;
    clearTimeout(p.timer);
    p.resolve();
  }
  /** Resolves after the next receive burst, or after `fallbackMs` (timers, such as a retransmission, complete work too). */
  waitForActivity(fallbackMs: number): Promise<void> {
    if (this.pending === null) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.pending = { promise, resolve, timer: setTimeout(() => this.wake(), fallbackMs) };
    }
    return this.pending.promise;
  }
}

/** How long an idle wait sleeps at most when no frame arrives (error completions come from timers). */
const IDLE_FALLBACK_MS = 2;

async function openDriverDevice(ifname: string, kind: 'xdp' | 'packet', opts: HostDeviceOptions): Promise<HostDevice> {
  const facts = await interfaceFacts(ifname);
  const ipv4 = facts.ipv4;
  // A VLAN interface: frames go through its parent, tagged by the device itself, so each QP's
  // priority (PCP, what PFC pauses by) follows its traffic class (stack/device.ts). The kernel's
  // VLAN interface keeps the addresses, ARP and the neighbour table.
  const vlan = facts.vlan ?? null;
  const link = vlan !== null && vlan.parent !== '' ? vlan.parent : ifname;
  if (ipv4.length === 0) throw new HostDeviceError(HostDeviceErrorCode.NO_INTERFACE, `interface ${ifname} has no IPv4 address; RoCE v2 needs one for its GID`);
  const factory = loadDriverFactory(kind);
  const busyPoll = opts.busyPoll ?? busyPollFromEnv();
  const lingerUs = busyPoll ? 0 : (opts.rxLingerUs ?? rxLingerFromEnv());
  if (!Number.isInteger(lingerUs) || lingerUs < 0 || lingerUs > 1_000_000) throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `rxLingerUs must be an integer 0..1000000, not ${lingerUs}`);
  // ROCE_FAULTS in the environment: the fault injector on this side of a real link (nic-driver/fault-driver.ts).
  const faults = faultsFromEnv();
  let driver: ActivityDriver;
  try {
    driver = new ActivityDriver(withFaults(factory(link, { busyPoll, ...(vlan !== null && facts.mtu !== undefined ? { mtu: facts.mtu } : {}) }), faults), lingerUs);
  } catch (e) {
    throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `${DRIVER_LABELS[kind]} driver on ${ifname}: ${(e as Error).message}`);
  }
  // perftest and rc_pingpong draw their start PSN from lrand48 seeded by pid and time: a fresh seed per run.
  const device = new Device({
    driver,
    clock: new RealClock(),
    ipv4,
    name: ifname,
    seed: randomInt(1, 0x7fffffff),
    vlan: vlan !== null ? { vid: vlan.id } : null,
    icrc: fastestIcrcBatch(),
    ...tuningFromEnv(),
  });
  if (!busyPoll) setIdleWait(device, () => driver.waitForActivity(IDLE_FALLBACK_MS));
  return {
    device,
    ifname,
    driver: kind,
    busyPoll,
    virtualTime: false,
    async ensureNeighbor(gid: Uint8Array): Promise<void> {
      if (!isIpv4MappedGid(gid)) {
        throw new HostDeviceError(HostDeviceErrorCode.NO_NEIGHBOR, `peer GID ${ipv6ToString(gid)} is not IPv4-mapped; only IPv4 neighbours are looked up`);
      }
      const ip = gidToIpv4(gid);
      if (!device.neighbors.has(ip)) device.neighbors.set(ip, await lookupNeighbor(ifname, ip));
    },
    close(): void {
      setIdleWait(device, null);
      driver.close();
    },
  };
}

// ---------------------------------------------------------------- memory test mode

interface SharedSim {
  sim: SimPair;
  pump: ClockPump;
  open: Set<'a' | 'b'>;
}
let shared: SharedSim | null = null;

/** Names of the two ends of the test-mode link. */
export const MEMORY_ENDS: readonly string[] = ['sim-a', 'sim-b'];

function openMemoryDevice(ifname: string): HostDevice {
  const end = ifname === 'sim-a' ? 'a' : ifname === 'sim-b' ? 'b' : null;
  if (end === null) throw new HostDeviceError(HostDeviceErrorCode.NO_INTERFACE, `the memory test mode has two ends, sim-a (198.18.0.1) and sim-b (198.18.0.2); not ${JSON.stringify(ifname)}`);
  if (shared === null) {
    const sim = createSimPair({ seed: randomInt(1, 1 << 20) });
    shared = { sim, pump: pumpVirtualClock(sim.clock), open: new Set() };
  }
  const s = shared;
  if (s.open.has(end)) throw new HostDeviceError(HostDeviceErrorCode.BUSY, `${ifname} is already open in this process`);
  s.open.add(end);
  const device = end === 'a' ? s.sim.a : s.sim.b;
  let closed = false;
  return {
    device,
    ifname,
    driver: HostDriverKind.MEMORY,
    busyPoll: false,
    virtualTime: true,
    async ensureNeighbor(gid: Uint8Array): Promise<void> {
      const ip = isIpv4MappedGid(gid) ? gidToIpv4(gid) : ipv6ToString(gid);
      if (!device.neighbors.has(ip)) throw new HostDeviceError(HostDeviceErrorCode.NO_NEIGHBOR, `${ip} is not the other end of the in-memory link`);
    },
    close(): void {
      if (closed) return;
      closed = true;
      s.open.delete(end);
      if (s.open.size === 0 && shared === s) {
        s.pump.stop();
        s.sim.link.close();
        shared = null;
      }
    },
  };
}

/** The device for `ifname` through `driver`; rejects with a HostDeviceError when it cannot be had. */
export async function openHostDevice(ifname: string, driver: HostDriverKind, opts: HostDeviceOptions = {}): Promise<HostDevice> {
  switch (driver) {
    case HostDriverKind.XDP:
    case HostDriverKind.PACKET:
      return openDriverDevice(ifname, driver, opts);
    case HostDriverKind.MEMORY:
      return openMemoryDevice(ifname);
  }
}

/**
 * Transport tuning for experiments, from the environment: ROCE_MAX_UNACKED_PSNS (the send window,
 * default 128 as rxe) and ROCE_MAX_PKTS_PER_ACK (AckReq spacing inside a message, default 64 as rxe).
 */
export function tuningFromEnv(env: NodeJS.ProcessEnv = process.env): { maxUnackedPsns?: number; maxPktsPerAck?: number } {
  const num = (name: string, max: number): number | undefined => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `${name} must be an integer 1..${max}, not ${JSON.stringify(v)}`);
    return n;
  };
  const w = num('ROCE_MAX_UNACKED_PSNS', 0x7fffff);
  const a = num('ROCE_MAX_PKTS_PER_ACK', 0x7fffff);
  return { ...(w !== undefined ? { maxUnackedPsns: w } : {}), ...(a !== undefined ? { maxPktsPerAck: a } : {}) };
}
