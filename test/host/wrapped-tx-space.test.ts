/**
 * A driver wrapper passes on the inner driver's transmit memory as it is at each moment, not as it
 * was when the wrapper was made: the memory link lends a new slab once one is full. Before, the
 * activity and capture wrappers kept the first slab, so the stack built frames in memory the link
 * no longer sent from, and after about 1 MiB of traffic every frame left as garbage (a memory-link
 * ping-pong through ActivityDriver failed with RETRY_EXC_ERR after 5 461 round trips).
 */
import { VirtualClock } from '../../base/clock';
import { ActivityDriver } from '../../apps/host/activity-driver';
import { CaptureDriver } from '../../nic-driver/capture-driver';
import { createMemoryLink } from '../../nic-driver/memory-link';
import { hasZeroCopyTx, type NicDriver } from '../../nic-driver/driver';
import { Device } from '../../stack/device';
import { decodeFrame } from '../../packets/decode';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus } from '../../stack/work-completion';
import { Mtu } from '../../stack/mtu';

const WRAPPERS: [string, (d: NicDriver, sink: Uint8Array[]) => NicDriver][] = [
  ['ActivityDriver', (d) => new ActivityDriver(d, 0)],
  ['CaptureDriver', (d, sink) => new CaptureDriver(d, { record: (f) => sink.push(f.slice()) })],
];

describe.each(WRAPPERS)('%s over the memory link', (_name, wrap) => {
  test('2 MiB of SENDs ping-pong through several slabs; every completion is a success', () => {
    const clock = new VirtualClock();
    const link = createMemoryLink({
      clock,
      seed: 1,
      mtu: 4200,
      macA: 0x020000000001,
      macB: 0x020000000002,
      bandwidthBps: 0,
      faults: { aToB: { delayNs: 1000 }, bToA: { delayNs: 1000 } },
    });
    const recorded: Uint8Array[] = [];
    const da = wrap(link.a, recorded);
    expect(hasZeroCopyTx(da)).toBe(true);
    const a = new Device({ driver: da, clock, ipv4: ['198.18.0.1'], neighbors: { '198.18.0.2': 0x020000000002 }, name: 'a', seed: 3 });
    const b = new Device({ driver: wrap(link.b, []), clock, ipv4: ['198.18.0.2'], neighbors: { '198.18.0.1': 0x020000000001 }, name: 'b', seed: 4 });
    const end = (dev: Device) => {
      const pd = dev.allocPd();
      const mr = dev.regMr(pd, new Uint8Array(1024).fill(0x5a), Access.LOCAL_WRITE);
      const cq = dev.createCq(64);
      const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: 3, maxRecvWr: 4 } });
      return { mr, cq, qp };
    };
    const A = end(a);
    const B = end(b);
    const ea = endpointOf(a, A.qp, 1);
    const eb = endpointOf(b, B.qp, 2);
    connectQp(A.qp, ea, eb, { pathMtu: Mtu.MTU_1024, timeout: 14 });
    connectQp(B.qp, eb, ea, { pathMtu: Mtu.MTU_1024, timeout: 14 });
    const post = (e: typeof A): void => e.qp.postSend({ wrId: 1n, opcode: WrOpcode.SEND, sgList: [e.mr.sge(0, 1024)], sendFlags: SendFlags.SIGNALED });
    const recv = (e: typeof A): void => e.qp.postRecv({ wrId: 2n, sgList: [e.mr.sge(0, 1024)] });
    const firstSpace = da.txSpace;
    recv(A);
    recv(B);
    post(A);
    // 2 048 round trips of 1 KiB each way: over 2 MiB sent from each end, several of the link's slabs.
    const trips = 2048;
    let done = 0;
    const failures: number[] = [];
    clock.runWhile(() => {
      for (const e of [A, B]) {
        for (const wc of e.cq.poll(16)) {
          if (wc.status !== WcStatus.SUCCESS) failures.push(wc.status);
          if (wc.wrId !== 2n) continue;
          recv(e);
          if (e === A) done++;
          if (e === B || done < trips) post(e);
        }
      }
      return done < trips && failures.length === 0;
    });
    expect({ done, failures }).toEqual({ done: trips, failures: [] });
    expect(A.qp.counters.sent_pkts).toBe(2 * trips); // no resends: no frame went out damaged
    expect(da.txSpace).toBe(link.a.txSpace);
    expect(da.txSpace).not.toBe(firstSpace);
    if (recorded.length > 0) {
      // The capture holds what was sent and received, each frame whole: it decodes with a good ICRC.
      expect(recorded.length).toBe(4 * trips); // each way a SEND and an ACK per round trip
      const broken = recorded.map((f) => decodeFrame(f)).filter((d) => !d.roce || d.error !== null || d.icrcOk !== true);
      expect(broken).toHaveLength(0);
    }
  });
});
