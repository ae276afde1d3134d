/**
 * The `memory` test mode of `roce perftest` and `roce pingpong` (not a
 * driver): the two ends `sim-a` (198.18.0.1) and `sim-b` (198.18.0.2) of one
 * in-memory link in this process, on a virtual clock driven by the event loop
 * (clock-pump.ts), so the CLI can be run end to end twice in one process with
 * the out-of-band exchange over real TCP.
 *
 * The composition root (the CLI's process, or a test) makes one testbed and
 * hands it to the commands that share it. The link is made when the first end
 * opens and taken down once both ends are closed, so the next pair of runs
 * gets a fresh one.
 */
import { randomInt } from 'node:crypto';
import { CryptoRandom } from '../../base/crypto-random';
import type { AllocationOrder } from '../../stack/allocation-order';
import { isIpv4MappedGid } from '../../stack/address';
import { ipv6ToString } from '../../packets/bytes';
import { SIM_IP_A, SIM_IP_B, createSimPair, type SimPair } from '../sim/sim-pair';
import { nextTurn, pumpVirtualClock, type ClockPump } from './clock-pump';
import { type HostDevice, HostDeviceError, HostDeviceErrorCode, HostDriverKind, gidToIpv4 } from './host-device';

/** Names of the two ends of the test-mode link. */
export const MEMORY_ENDS: readonly string[] = ['sim-a', 'sim-b'];

interface OpenLink {
  sim: SimPair;
  pump: ClockPump;
  open: Set<'a' | 'b'>;
}

/** A third party on the test-mode link (`roce attack --driver memory`): frames it sends arrive at the other end as if they came over the link. */
export interface MemoryInjector {
  readonly ifname: string;
  readonly mac: number;
  readonly ipv4: string;
  txBurst(frames: readonly Uint8Array[]): number;
  /** What this end received is the stack's: the injector sees no frames. */
  rxBurst(max: number): Uint8Array[];
  /** The expected PSN of QP `qpn` at the other end (it lives in this process), or null: what follow mode learns from ACKs on a real link. */
  expectedPsn(qpn: number): number | null;
}

export class MemoryTestbed {
  private link: OpenLink | null = null;

  /** `allocation`: the order of the two devices' keys and QP numbers (default random; ROCE_ALLOCATION). */
  constructor(private readonly allocation?: AllocationOrder) {}

  /**
   * An injector on end `ifname` of the live link: a run in this process must have opened it. Frames
   * go straight into the other end's receive queue (copied), past the link's serializer and faults.
   */
  injector(ifname: string): MemoryInjector {
    const s = this.link;
    const end = ifname === 'sim-a' ? 'a' : ifname === 'sim-b' ? 'b' : null;
    if (end === null)
      throw new HostDeviceError(
        HostDeviceErrorCode.NO_INTERFACE,
        `the memory test mode has two ends, sim-a (198.18.0.1) and sim-b (198.18.0.2); not ${JSON.stringify(ifname)}`,
      );
    if (s === null)
      throw new HostDeviceError(HostDeviceErrorCode.NO_INTERFACE, 'no run has the memory link open in this process: start the runs to attack first');
    const from = end === 'a' ? s.sim.link.a : s.sim.link.b;
    const to = end === 'a' ? s.sim.link.b : s.sim.link.a;
    return {
      ifname,
      mac: from.mac,
      ipv4: end === 'a' ? SIM_IP_A : SIM_IP_B,
      txBurst: (frames) => {
        to.receive(frames.map((f) => f.slice()));
        return frames.length;
      },
      rxBurst: () => [],
      expectedPsn: (qpn) => (end === 'a' ? s.sim.b : s.sim.a).qp(qpn)?.resp.psn ?? null,
    };
  }

  /** The device of end `ifname` (sim-a or sim-b); rejects an end already open. */
  open(ifname: string): HostDevice {
    const end = ifname === 'sim-a' ? 'a' : ifname === 'sim-b' ? 'b' : null;
    if (end === null)
      throw new HostDeviceError(
        HostDeviceErrorCode.NO_INTERFACE,
        `the memory test mode has two ends, sim-a (198.18.0.1) and sim-b (198.18.0.2); not ${JSON.stringify(ifname)}`,
      );
    if (this.link === null) {
      // Time is virtual here, but the names the devices hand out are as a host device's: from the system's generator.
      const sim = createSimPair({
        seed: randomInt(1, 1 << 20),
        random: new CryptoRandom(),
        ...(this.allocation !== undefined ? { allocation: this.allocation } : {}),
      });
      this.link = { sim, pump: pumpVirtualClock(sim.clock), open: new Set() };
    }
    const s = this.link;
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
      capture: null,
      queueStats: () => null,
      idleWait: nextTurn,
      async ensureNeighbor(gid: Uint8Array): Promise<void> {
        const ip = isIpv4MappedGid(gid) ? gidToIpv4(gid) : ipv6ToString(gid);
        if (!device.neighbors.has(ip)) throw new HostDeviceError(HostDeviceErrorCode.NO_NEIGHBOR, `${ip} is not the other end of the in-memory link`);
      },
      close: (): void => {
        if (closed) return;
        closed = true;
        s.open.delete(end);
        if (s.open.size === 0 && this.link === s) {
          s.pump.stop();
          s.sim.link.close();
          this.link = null;
        }
      },
    };
  }
}
