/**
 * Two devices joined by the in-memory link on a virtual clock: the setting
 * of `roce demo`, the simulation tests and the engine benchmark. Addresses
 * come from 198.18.0.0/15 (RFC 2544), as in every test of this project.
 */
import type { RandomSource } from '../../base/random-source';
import type { AllocationOrder } from '../../stack/allocation-order';
import { VirtualClock } from '../../base/clock';
import { Device } from '../../stack/device';
import { createMemoryLink, type MemoryLink } from '../../nic-driver/memory-link';
import type { FaultConfig } from '../../nic-driver/faults';
import type { FrameTap } from '../../nic-driver/pcap-tap';
import { fastestIcrcBatch } from '../../nic-driver/native-icrc';
import type { CongestionConfig } from '../../stack/congestion/parameters';

/** Device a's IPv4 address. */
export const SIM_IP_A = '198.18.0.1';
/** Device b's IPv4 address. */
export const SIM_IP_B = '198.18.0.2';
/** Device a's MAC address as a 48-bit number (02:00:00:00:00:01, locally administered). */
export const SIM_MAC_A = 0x02_00_00_00_00_01;
/** Device b's MAC address as a 48-bit number (02:00:00:00:00:02). */
export const SIM_MAC_B = 0x02_00_00_00_00_02;

/** The pair's seed, link (MTU, latency, bandwidth, faults each way, a pcap tap) and the devices' settings. */
export interface SimPairOptions {
  seed?: number;
  /** IP MTU of the link (default 4200, enough for a 4096-byte path MTU). */
  linkMtu?: number;
  faults?: { aToB?: FaultConfig; bToA?: FaultConfig };
  tap?: FrameTap;
  /** One-way latency in ns (default 2 us). */
  latencyNs?: number;
  bandwidthBps?: number;
  maxUnackedPsns?: number;
  /** Congestion control of both devices (ECN → CNP → DCQCN; default off). */
  congestion?: CongestionConfig;
  /** Receive ring of each end, in frames (the memory link's default otherwise). */
  rxRing?: number;
  /** Both devices' bound on packets in flight across their QPs (stack/inflight-bound.ts; default none). */
  maxInflightPackets?: number;
  /** Both devices coalesce their ACKs per receive burst (stack/ack-coalescer.ts; default off, as rxe). */
  coalesceAcks?: boolean;
  /** Keys, addresses and QP numbers at random from the seed (default) or in rxe's sequential order (stack/allocation-order.ts). */
  allocation?: AllocationOrder;
  /** Where both devices draw keys, QP numbers and PSNs from (default: generators seeded by `seed`, so a run is reproducible). */
  random?: RandomSource;
}

/** The virtual clock, the link and its two devices `a` and `b`; run it with `clock.runWhile` or `clock.runUntil`. */
export interface SimPair {
  clock: VirtualClock;
  link: MemoryLink;
  a: Device;
  b: Device;
}

/** Builds two devices joined by the in-memory link on a new virtual clock. */
export function createSimPair(o: SimPairOptions = {}): SimPair {
  const clock = new VirtualClock();
  const seed = o.seed ?? 1;
  const lat = o.latencyNs ?? 2000;
  const withDelay = (f: FaultConfig | undefined): FaultConfig => ({ ...f, delayNs: (f?.delayNs ?? 0) + lat });
  const link = createMemoryLink({
    clock,
    seed,
    mtu: o.linkMtu ?? 4200,
    macA: SIM_MAC_A,
    macB: SIM_MAC_B,
    bandwidthBps: o.bandwidthBps ?? 100e9,
    faults: { aToB: withDelay(o.faults?.aToB), bToA: withDelay(o.faults?.bToA) },
    ...(o.tap !== undefined ? { tap: o.tap } : {}),
    ...(o.rxRing !== undefined ? { rxRing: o.rxRing } : {}),
  });
  const common = {
    icrc: fastestIcrcBatch(),
    ...(o.maxUnackedPsns !== undefined ? { maxUnackedPsns: o.maxUnackedPsns } : {}),
    ...(o.congestion !== undefined ? { congestion: o.congestion } : {}),
    ...(o.maxInflightPackets !== undefined ? { maxInflightPackets: o.maxInflightPackets } : {}),
    ...(o.coalesceAcks !== undefined ? { coalesceAcks: o.coalesceAcks } : {}),
    ...(o.allocation !== undefined ? { allocation: o.allocation } : {}),
    ...(o.random !== undefined ? { random: o.random } : {}),
  };
  const a = new Device({ driver: link.a, clock, ipv4: [SIM_IP_A], neighbors: { [SIM_IP_B]: SIM_MAC_B }, name: 'sim-a', seed: seed * 2 + 1, ...common });
  const b = new Device({ driver: link.b, clock, ipv4: [SIM_IP_B], neighbors: { [SIM_IP_A]: SIM_MAC_A }, name: 'sim-b', seed: seed * 2 + 2, ...common });
  return { clock, link, a, b };
}
