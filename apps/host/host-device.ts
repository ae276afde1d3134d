/**
 * A `Device` on a host interface, for the commands that talk to other
 * machines (`roce perftest`, `roce pingpong`): the interface's MAC and IPv4
 * addresses become the GID table, frames go through an AF_XDP or AF_PACKET
 * driver, time is real, and the peer's MAC comes from the kernel's neighbour
 * table (the out-of-band TCP connection to the peer has usually filled it).
 *
 * The native drivers load lazily (nic-driver/native-binding.ts), so this file
 * compiles and the rest of the CLI works on a machine without them. Every
 * setting comes in as an option; the CLI takes their defaults from the
 * environment (environment.ts). The `memory` test mode is memory-testbed.ts.
 */
import { fastestIcrcBatch } from '../../nic-driver/native-icrc';
import { randomInt } from 'node:crypto';
import { Device, linkLocalGid } from '../../stack/device';
import { CryptoRandom } from '../../base/crypto-random';
import type { AllocationOrder } from '../../stack/allocation-order';
import { RealClock } from '../../base/clock';
import { isIpv4MappedGid } from '../../stack/address';
import { nextTurn } from './clock-pump';
import { ActivityDriver } from './activity-driver';
import type { NicDriver } from '../../nic-driver/driver';
import { type HostFaults, withFaults } from '../../nic-driver/fault-driver';
import { ipv6FromString, ipv6ToString } from '../../packets/bytes';
import type { XdpAttachMode } from '../../nic-driver/af-xdp-driver';
import { XdpQueueError, activeRxQueues, openXdpQueues } from './xdp-queues';
import { MultiQueueDriver, type QueueStats } from '../../nic-driver/multi-queue-driver';
import { AfPacketDriver } from '../../nic-driver/af-packet-driver';
import { interfaceInfo, nextHop, resolveNeighbor } from '../../nic-driver/interface-info';
import { nativeAvailable, nativeLoadError } from '../../nic-driver/native-binding';
import { RoceError } from '../../base/roce-error';
import { KernelNeighborTable } from './kernel-neighbors';
import { CaptureDriver } from '../../nic-driver/capture-driver';
import { LiveCapture, type LiveCaptureOptions, wallClockNs } from '../../nic-driver/live-capture';

export const HostDriverKind = { XDP: 'xdp', PACKET: 'packet', MEMORY: 'memory' } as const;
export type HostDriverKind = (typeof HostDriverKind)[keyof typeof HostDriverKind];

/** The drivers a user chooses from (memory is a test mode and not listed). */
export const HOST_DRIVERS: readonly HostDriverKind[] = [HostDriverKind.XDP, HostDriverKind.PACKET];

export const HostDeviceErrorCode = {
  /** The native driver module is not built or does not load. */
  DRIVER_UNAVAILABLE: 'ROCE_ERR_HOST_DRIVER_UNAVAILABLE',
  /** No such interface, or it has no IPv4 address. */
  NO_INTERFACE: 'ROCE_ERR_HOST_NO_INTERFACE',
  /** The peer's MAC address is not known. */
  NO_NEIGHBOR: 'ROCE_ERR_HOST_NO_NEIGHBOR',
  /** A test-mode end is already open. */
  BUSY: 'ROCE_ERR_HOST_BUSY',
  /** The driver loaded but could not open the interface (permissions, XDP attach, ...). */
  DRIVER_FAILED: 'ROCE_ERR_HOST_DRIVER_FAILED',
} as const;
export type HostDeviceErrorCode = (typeof HostDeviceErrorCode)[keyof typeof HostDeviceErrorCode];

export class HostDeviceError extends RoceError<HostDeviceErrorCode> {}

export interface HostDeviceOptions {
  /**
   * Busy-poll mode (latency runs): the driver checks for frames on every turn of the event loop
   * (AF_XDP also drives the kernel's NAPI from this thread with SO_PREFER_BUSY_POLL), and the
   * perftest / pingpong loops spin on their completion queues. Off (the default): the process
   * sleeps in epoll until frames arrive, which costs no CPU while idle.
   */
  busyPoll?: boolean;
  /**
   * With busy-poll over AF_XDP: an empty look at the receive ring also drives the driver's NAPI
   * (`recvfrom`, as SO_PREFER_BUSY_POLL expects). Default: yes, except on a veth, where the
   * sender's transmit runs the receiver's NAPI and the call only adds to the round trip.
   */
  napiBusyPoll?: boolean;
  /**
   * Without busy-poll: how long (µs) the event loop keeps checking for frames after the last
   * receive burst before it goes back to sleeping in epoll (default 200; 0 = sleep at once). While
   * frames keep coming the process never falls asleep, so the peer's kernel does not pay a
   * wake-up per burst (on a veth the sender's core runs that wake-up, 10 % of it at full rate),
   * and an answer that comes quickly finds the process awake; once traffic stops it sleeps again,
   * so an idle process still costs nothing. NAPI's busy-poll window and DPDK's power-aware
   * polling work the same way.
   */
  rxLingerUs?: number;
  /** Where AF_XDP's program runs (a tuning knob for benchmarks; default: the driver's choice, auto). */
  xdpMode?: XdpAttachMode;
  /** The fault injector on this side of a real link (nic-driver/fault-driver.ts; default none). */
  faults?: HostFaults | null;
  /**
   * A driver wrapper put between the real driver (under the capture and the fault injector) and the
   * device: it sees every frame the device sends and receives (`roce probe`'s probe driver).
   */
  wrapDriver?: (inner: NicDriver) => NicDriver;
  /** Transport tuning for experiments: the send window (outstanding PSNs per QP, default 128 as rxe). */
  maxUnackedPsns?: number;
  /** Transport tuning for experiments: AckReq spacing inside a message (default 64 as rxe). */
  maxPktsPerAck?: number;
  /**
   * Packets the device's RC QPs may have in flight together (stack/inflight-bound.ts). Default
   * DEFAULT_MAX_INFLIGHT_PACKETS, or the send window when that is larger, so that one QP's window
   * is never cut.
   */
  maxInflightPackets?: number;
  /** Coalesce the responder's ACKs per receive burst (stack/ack-coalescer.ts; default off, as rxe). */
  coalesceAcks?: boolean;
  /**
   * Memory keys, addresses and QP numbers drawn at random (the default) or handed out in rxe's
   * sequential order (stack/allocation-order.ts). Either way they and the starting PSNs come from
   * the operating system's cryptographic generator (docs/security.md).
   */
  allocation?: AllocationOrder;
  /** AF_XDP: the receive queues to serve (`--queues`), or null/absent for every active queue. */
  queues?: readonly number[] | null;
  /** Record every frame sent and received to a pcap file (`--pcap`; default none, and then nothing is in the path). */
  capture?: LiveCaptureOptions | null;
}

/** The default receive linger (µs, see HostDeviceOptions.rxLingerUs). */
export const DEFAULT_RX_LINGER_US = 200;

/**
 * The default bound on a host device's packets in flight: half the smallest receive ring of the
 * host drivers (AF_PACKET's at least 1 024 frame slots; one AF_XDP queue's 2 048), so that a peer
 * of the same kind, whose own requests share that ring with our responses, is not overrun either.
 * Four QPs with rxe's full window of 128 PSNs fit.
 */
export const DEFAULT_MAX_INFLIGHT_PACKETS = 512;

export interface HostDevice {
  readonly device: Device;
  readonly ifname: string;
  readonly driver: HostDriverKind;
  /** True when the driver busy-polls (see HostDeviceOptions). */
  readonly busyPoll: boolean;
  /** True when time is simulated (the memory test mode). */
  readonly virtualTime: boolean;
  /**
   * How the perftest and pingpong loops wait when a completion queue is empty: in busy-poll mode
   * (and on a simulated link) the next turn of the event loop, as the C tools spin on
   * ibv_poll_cq; otherwise a sleep until the driver reports received frames (or a short fallback
   * timer fires), so an idle run costs no CPU and leaves the cores to the kernel's packet processing.
   */
  readonly idleWait: () => Promise<void>;
  /** Each receive queue's counters when AF_XDP serves several (mlx5's rx<N>_packets), else null. */
  queueStats(): QueueStats[] | null;
  /** The live capture (`--pcap`), or null. */
  readonly capture: LiveCapture | null;
  /** Makes sure the device knows the MAC of the host whose GID is `gid` (reads the kernel's neighbour table). */
  ensureNeighbor(gid: Uint8Array): Promise<void>;
  close(): void;
}

/** The drivers of a host interface. */
export type HostNicKind = typeof HostDriverKind.XDP | typeof HostDriverKind.PACKET;

const DRIVER_LABELS: Record<HostNicKind, string> = { xdp: 'AF_XDP', packet: 'AF_PACKET' };

type DriverFactory = (ifname: string, opts: { busyPoll: boolean; napiBusyPoll?: boolean; mtu?: number }) => NicDriver;

function loadDriverFactory(kind: HostNicKind, xdpMode: XdpAttachMode | undefined, queues: readonly number[] | null): DriverFactory {
  if (!nativeAvailable()) throw new HostDeviceError(HostDeviceErrorCode.DRIVER_UNAVAILABLE, `driver not available: ${nativeLoadError()}`);
  const mtuOf = (o: { mtu?: number }): { mtu?: number } => (o.mtu !== undefined ? { mtu: o.mtu } : {});
  // AF_XDP binds a socket per receive queue: every active queue by default (xdp-queues.ts). AF_PACKET sees them all.
  return kind === 'xdp'
    ? (ifname, o) =>
        openXdpQueues(ifname, {
          queues,
          available: activeRxQueues(ifname),
          busyPoll: o.busyPoll,
          ...(o.napiBusyPoll !== undefined ? { napiBusyPoll: o.napiBusyPoll } : {}),
          ...mtuOf(o),
          ...(xdpMode !== undefined ? { xdpMode } : {}),
        })
    : (ifname, o) => AfPacketDriver.open({ ifname, busyPoll: o.busyPoll, ...mtuOf(o) });
}

interface InterfaceFacts {
  ipv4: string[];
  ipv6: string[];
  mtu?: number;
  vlan?: { parent: string; id: number } | null;
}

/** IPv4 addresses, MTU and VLAN of `ifname`. */
async function interfaceFacts(ifname: string): Promise<InterfaceFacts> {
  try {
    const f = await interfaceInfo(ifname);
    return { ipv4: f.ipv4.slice(), ipv6: f.ipv6.slice(), mtu: f.mtu, vlan: f.vlan ?? null };
  } catch (e) {
    throw new HostDeviceError(HostDeviceErrorCode.NO_INTERFACE, `interface ${ifname}: ${(e as Error).message}`);
  }
}

/** IPv4 addresses of `ifname`. */
export async function interfaceIpv4(ifname: string): Promise<string[]> {
  return (await interfaceFacts(ifname)).ipv4;
}

/** The IPv4 address of an IPv4-mapped GID. */
export function gidToIpv4(gid: Uint8Array): string {
  return `${gid[12]}.${gid[13]}.${gid[14]}.${gid[15]}`;
}

/**
 * The MAC frames to `ip` go to: the next hop's from the kernel's neighbour table (nic-driver/
 * interface-info resolves it when needed), the next hop being the gateway of the route to `ip` when
 * there is one (routed RoCE v2, as rxe takes its destination MAC from the kernel's route and
 * neighbour tables), else `ip` itself.
 */
async function lookupNeighbor(ifname: string, ip: string): Promise<number> {
  let hop = ip;
  try {
    hop = await nextHop(ifname, ip);
    return await resolveNeighbor(ifname, hop, 3000);
  } catch (e) {
    throw new HostDeviceError(
      HostDeviceErrorCode.NO_NEIGHBOR,
      `no neighbour entry for ${hop === ip ? ip : `${hop}, the gateway to ${ip},`} on ${ifname}: ${(e as Error).message}`,
    );
  }
}

/**
 * The IPv6 addresses that become GIDs after the link-local one the device makes from the MAC (GID
 * 0, as rxe and `roce devices`): all of the interface's, but that one when the kernel has it too.
 */
export function ipv6Gids(mac: number, ipv6: readonly string[]): string[] {
  const ll = ipv6ToString(linkLocalGid(mac));
  return ipv6.filter((a) => ipv6ToString(ipv6FromString(a)) !== ll);
}

/** How long an idle wait sleeps at most when no frame arrives (error completions come from timers). */
const IDLE_FALLBACK_MS = 2;

/** Busy-poll: how long one idle wait spins on the receive rings before it yields a turn of the event loop. */
const SPIN_MS = 0.05;
/** Busy-poll: the longest the spinning keeps the event loop (timers, the out-of-band socket) waiting. */
const YIELD_EVERY_MS = 10;
const DONE: Promise<void> = Promise.resolve();

/**
 * The busy-poll idle wait. Spinning a turn of the event loop per look at the rings cost a turn's
 * time and a promise and an immediate each, 17-27 KB of allocation per ping-pong round trip
 * (docs/performance.md, "Latency"). This wait looks
 * at the rings itself, synchronously (`pollRx`), for up to SPIN_MS, after running the work the
 * caller's posts deferred (`RealClock.runSoon`: the requester's transmit): when frames land it has
 * run the stack on them and returns at once, so the caller polls its completion queue again. Only
 * when nothing lands, or once every YIELD_EVERY_MS whatever lands, does it yield a turn, so
 * timers (retransmission, the no-progress bound) and the out-of-band socket still run.
 */
function spinWait(driver: NicDriver, clock: RealClock, device: Device): () => Promise<void> {
  if (driver.pollRx === undefined) return nextTurn;
  const poll = (): boolean => driver.pollRx?.() === true;
  let yieldedAt = performance.now();
  return () => {
    const start = performance.now();
    if (start - yieldedAt < YIELD_EVERY_MS) {
      // What the caller's posts kicked (the requester's transmit) goes out now, not a turn later.
      clock.runSoon();
      let now = start;
      do {
        if (device.pollCoalescing(poll)) return DONE;
        now = performance.now();
      } while (now - start < SPIN_MS);
    }
    yieldedAt = performance.now();
    return nextTurn();
  };
}

/** The device for `ifname` through driver `kind`; rejects with a HostDeviceError when it cannot be had. */
export async function openHostDevice(ifname: string, kind: HostNicKind, opts: HostDeviceOptions = {}): Promise<HostDevice> {
  const facts = await interfaceFacts(ifname);
  const ipv4 = facts.ipv4;
  // A VLAN interface: frames go through its parent, tagged by the device itself, so each QP's
  // priority (PCP, what PFC pauses by) follows its traffic class (stack/device.ts). The kernel's
  // VLAN interface keeps the addresses, ARP and the neighbour table.
  const vlan = facts.vlan ?? null;
  const link = vlan !== null && vlan.parent !== '' ? vlan.parent : ifname;
  if (ipv4.length === 0 && facts.ipv6.length === 0)
    throw new HostDeviceError(HostDeviceErrorCode.NO_INTERFACE, `interface ${ifname} has no IP address; RoCE v2 needs one for its GID`);
  const busyPoll = opts.busyPoll ?? false;
  const lingerUs = busyPoll ? 0 : (opts.rxLingerUs ?? DEFAULT_RX_LINGER_US);
  if (!Number.isInteger(lingerUs) || lingerUs < 0 || lingerUs > 1_000_000)
    throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `rxLingerUs must be an integer 0..1000000, not ${lingerUs}`);
  const faults = opts.faults ?? null;
  // The capture file first: a path that cannot be written fails before any socket is opened.
  const capture = opts.capture != null ? new LiveCapture(opts.capture, wallClockNs()) : null;
  let nic: NicDriver;
  try {
    const factory = loadDriverFactory(kind, opts.xdpMode, opts.queues ?? null);
    try {
      nic = factory(link, {
        busyPoll,
        ...(opts.napiBusyPoll !== undefined ? { napiBusyPoll: opts.napiBusyPoll } : {}),
        ...(vlan !== null && facts.mtu !== undefined ? { mtu: facts.mtu } : {}),
      });
    } catch (e) {
      if (e instanceof XdpQueueError) throw e;
      throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `${DRIVER_LABELS[kind]} driver on ${ifname}: ${(e as Error).message}`);
    }
  } catch (e) {
    capture?.close();
    throw e;
  }
  // The capture sits on the real driver (under the fault injector): it shows the wire as tcpdump would.
  const wire = withFaults(capture === null ? nic : new CaptureDriver(nic, capture), faults);
  const driver = new ActivityDriver(opts.wrapDriver === undefined ? wire : opts.wrapDriver(wire), lingerUs);
  // perftest and rc_pingpong draw their start PSN from lrand48 seeded by pid and time: a fresh seed per run.
  const neighbors = new KernelNeighborTable(ifname);
  const clock = new RealClock();
  const device = new Device({
    driver,
    neighborTable: neighbors,
    clock,
    ipv4,
    ipv6: ipv6Gids(nic.mac, facts.ipv6),
    name: ifname,
    seed: randomInt(1, 0x7fffffff),
    random: new CryptoRandom(),
    ...(opts.allocation !== undefined ? { allocation: opts.allocation } : {}),
    vlan: vlan !== null ? { vid: vlan.id } : null,
    icrc: fastestIcrcBatch(),
    ...(opts.maxUnackedPsns !== undefined ? { maxUnackedPsns: opts.maxUnackedPsns } : {}),
    ...(opts.maxPktsPerAck !== undefined ? { maxPktsPerAck: opts.maxPktsPerAck } : {}),
    maxInflightPackets: opts.maxInflightPackets ?? Math.max(DEFAULT_MAX_INFLIGHT_PACKETS, opts.maxUnackedPsns ?? 0),
    coalesceAcks: opts.coalesceAcks === true,
  });
  return {
    device,
    ifname,
    driver: kind,
    busyPoll,
    virtualTime: false,
    capture,
    queueStats: () => (nic instanceof MultiQueueDriver ? nic.queueStats() : null),
    idleWait: busyPoll ? spinWait(driver, clock, device) : () => driver.waitForActivity(IDLE_FALLBACK_MS),
    async ensureNeighbor(gid: Uint8Array): Promise<void> {
      // An IPv4-mapped GID is an IPv4 peer; any other GID is the peer's IPv6 address (RoCE v2, IBTA annex A17).
      const ip = isIpv4MappedGid(gid) ? gidToIpv4(gid) : ipv6ToString(gid);
      if (!device.neighbors.has(ip)) device.neighbors.set(ip, await lookupNeighbor(ifname, ip));
    },
    close(): void {
      neighbors.close();
      driver.close();
      capture?.close();
    },
  };
}
