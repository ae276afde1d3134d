/**
 * Hosts around the star switch (nic-driver/star-switch.ts), each a roce-ts device, with RC flows
 * of RDMA WRITEs kept posted, on the virtual clock: what `roce sim` builds
 * (apps/sim/star-scenario.ts), with the switch, the devices and the QPs in the test's hands so it
 * can watch them between steps.
 */
import { VirtualClock } from '../../base/clock';
import { Device } from '../../stack/device';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import type { Mtu } from '../../stack/mtu';
import type { QueuePair } from '../../stack/queue-pair';
import type { CongestionConfig } from '../../stack/congestion/parameters';
import { type EcnMarking, type PfcConfig, type StarSwitch, createStarSwitch } from '../../nic-driver/star-switch';

export interface StarHostsOptions {
  hosts: number;
  /** [src, dst] host indexes. */
  flows: readonly [number, number][];
  linkRateBps: number;
  ecn: EcnMarking | null;
  pfc: PfcConfig | null;
  /** Congestion control on every device, or undefined for none. */
  congestion?: CongestionConfig;
  hostTxRingFrames?: number;
  seed?: number;
  /** WRITE size (default 64 KiB) and WRITEs kept posted per flow (default 16). */
  messageBytes?: number;
  outstanding?: number;
  /** Runs with the switch before the devices are built on its hosts (a test may wrap a host's driver). */
  beforeDevices?: (sw: StarSwitch, clock: VirtualClock) => void;
  /** Every frame the switch sends (data as it leaves an output port, PFC frames), with the time. */
  capture?: (frame: Uint8Array, timeNs: number) => void;
}

export interface StarHosts {
  clock: VirtualClock;
  sw: StarSwitch;
  devices: Device[];
  /** The sending QP of each flow, in flow order. */
  qps: QueuePair[];
  /** Runs the clock to `t` (ns), topping each flow's WRITEs up first; throws on a failed completion. */
  runUntil(t: number): void;
}

export function starHosts(o: StarHostsOptions): StarHosts {
  const clock = new VirtualClock();
  const macOf = (i: number): number => 0x02_00_00_00_01_00 + i;
  const ipOf = (i: number): string => `10.0.0.${i + 1}`;
  const sw = createStarSwitch({
    clock,
    macs: Array.from({ length: o.hosts }, (_, i) => macOf(i)),
    linkRateBps: o.linkRateBps,
    bufferBytes: 1 << 20,
    propagationNs: 1000,
    ecn: o.ecn,
    pfc: o.pfc,
    seed: o.seed ?? 1,
    ...(o.hostTxRingFrames !== undefined ? { hostTxRingFrames: o.hostTxRingFrames } : {}),
    ...(o.capture !== undefined ? { capture: o.capture } : {}),
  });
  o.beforeDevices?.(sw, clock);
  const neighbors: Record<string, number> = {};
  for (let i = 0; i < o.hosts; i++) neighbors[ipOf(i)] = macOf(i);
  const devices = sw.hosts.map(
    (driver, i) =>
      new Device({
        driver,
        clock,
        ipv4: [ipOf(i)],
        neighbors,
        seed: (o.seed ?? 1) * 64 + i,
        ...(o.congestion !== undefined ? { congestion: o.congestion } : {}),
      }),
  );
  const msg = o.messageBytes ?? 65536;
  const outstanding = o.outstanding ?? 16;
  const flows = o.flows.map(([src, dst], k) => {
    const a = devices[src]!;
    const b = devices[dst]!;
    const pdA = a.allocPd();
    const pdB = b.allocPd();
    const mr = a.regMr(pdA, new Uint8Array(msg), Access.LOCAL_WRITE);
    const remote = b.regMr(pdB, new Uint8Array(msg), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
    const cq = a.createCq(outstanding * 2 + 16);
    const cqB = b.createCq(16);
    const qp = a.createQp(pdA, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: outstanding + 1, maxRecvWr: 1, maxSendSge: 1, maxRecvSge: 1 } });
    const peer = b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB });
    const ea = endpointOf(a, qp, 1000 + k);
    const eb = endpointOf(b, peer, 5000 + k);
    const opts = { pathMtu: 5 as Mtu, accessFlags: Access.REMOTE_WRITE };
    connectQp(qp, ea, eb, opts);
    connectQp(peer, eb, ea, opts);
    return { qp, cq, mr, remote, posted: 0, outstanding: 0 };
  });
  const top = (): void => {
    for (const f of flows) {
      for (const wc of f.cq.poll(64)) {
        if (wc.status !== 0) throw new Error(`WRITE #${wc.wrId} completed with status ${wc.status}`);
        f.outstanding--;
      }
      while (f.outstanding < outstanding) {
        f.qp.postSend({
          wrId: f.posted++,
          opcode: WrOpcode.RDMA_WRITE,
          sgList: [f.mr.sge(0, msg)],
          sendFlags: SendFlags.SIGNALED,
          rdma: { remoteAddr: f.remote.addr(0), rkey: f.remote.rkey },
        });
        f.outstanding++;
      }
    }
  };
  return {
    clock,
    sw,
    devices,
    qps: flows.map((f) => f.qp),
    runUntil(t: number): void {
      top();
      clock.runUntil(t);
    },
  };
}
