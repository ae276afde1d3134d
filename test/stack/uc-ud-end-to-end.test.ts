/** UC and UD between two stacks over the in-memory link, frames taken one by one and as runs (driver.ts RunReceive). */
import { createSimPair } from '../../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcFlags, WcOpcode, WcStatus } from '../../stack/work-completion';
import { SIM_IP_B } from '../../apps/sim/sim-pair';

/** The link's line rate: 100 Gbit/s makes frames travel one by one; 0 (with no faults) lets them travel as runs. */
let bandwidthBps = 100e9;

function pairOf(type: QpType, drop = 0, seed = 3) {
  const sim = createSimPair({ seed, bandwidthBps, faults: { aToB: { drop }, bToA: { drop } } });
  const side = (dev: typeof sim.a) => {
    const pd = dev.allocPd();
    const cq = dev.createCq(4096);
    const buf = new Uint8Array(1 << 18);
    const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
    const qp = dev.createQp(pd, { qpType: type, sendCq: cq, recvCq: cq });
    return { pd, cq, buf, mr, qp };
  };
  const A = side(sim.a);
  const B = side(sim.b);
  const ea = endpointOf(sim.a, A.qp, 10);
  const eb = endpointOf(sim.b, B.qp, 20);
  connectQp(A.qp, ea, eb, { qkey: 0x1234 });
  connectQp(B.qp, eb, ea, { qkey: 0x1234 });
  for (let i = 0; i < A.buf.length; i++) A.buf[i] = (i * 7 + 3) & 0xff;
  return { sim, A, B };
}

describe.each([
  ['frames one by one', 100e9],
  ['frames as runs', 0],
])('%s', (_name, bw) => {
  beforeEach(() => {
    bandwidthBps = bw;
  });

  test('UC: SEND and RDMA WRITE (with immediate) arrive intact, with no ACK on the wire', () => {
    const { sim, A, B } = pairOf(QpType.UC);
    for (let i = 0; i < 4; i++) B.qp.postRecv({ wrId: i, sgList: [B.mr.sge(i * 16384, 16384)] });
    A.qp.postSend({ wrId: 1, opcode: WrOpcode.SEND, sgList: [A.mr.sge(0, 5000)], sendFlags: SendFlags.SIGNALED });
    A.qp.postSend({
      wrId: 2,
      opcode: WrOpcode.RDMA_WRITE,
      sgList: [A.mr.sge(0, 9000)],
      sendFlags: SendFlags.SIGNALED,
      rdma: { remoteAddr: B.mr.addr(100_000), rkey: B.mr.rkey },
    });
    A.qp.postSend({
      wrId: 3,
      opcode: WrOpcode.RDMA_WRITE_WITH_IMM,
      immData: 0xabcd,
      sgList: [A.mr.sge(0, 300)],
      sendFlags: SendFlags.SIGNALED,
      rdma: { remoteAddr: B.mr.addr(200_000), rkey: B.mr.rkey },
    });
    sim.clock.runUntilIdle();
    expect(A.cq.poll(10).map((w) => [w.wrId, w.status])).toEqual([
      [1n, WcStatus.SUCCESS],
      [2n, WcStatus.SUCCESS],
      [3n, WcStatus.SUCCESS],
    ]);
    const rx = B.cq.poll(10);
    expect(rx.map((w) => [w.opcode, w.byteLen])).toEqual([
      [WcOpcode.RECV, 5000],
      [WcOpcode.RECV_RDMA_WITH_IMM, 300],
    ]);
    expect(rx[1]?.immData).toBe(0xabcd);
    expect(Buffer.compare(B.buf.subarray(0, 5000), A.buf.subarray(0, 5000))).toBe(0);
    expect(Buffer.compare(B.buf.subarray(100_000, 109_000), A.buf.subarray(0, 9000))).toBe(0);
    expect(sim.b.totalCounters().sent_pkts).toBe(0); // UC never acknowledges
  });

  test('UC under loss: lost messages vanish, the others arrive whole and in order', () => {
    const { sim, A, B } = pairOf(QpType.UC, 0.05, 9);
    const n = 60;
    for (let i = 0; i < n; i++) B.qp.postRecv({ wrId: i, sgList: [B.mr.sge(i * 4096, 4096)] });
    for (let i = 0; i < n; i++) A.qp.postSend({ wrId: i, opcode: WrOpcode.SEND, sgList: [A.mr.sge(i * 2048, 3000)], sendFlags: SendFlags.SIGNALED });
    sim.clock.runUntilIdle();
    expect(A.cq.poll(100).filter((w) => w.status === WcStatus.SUCCESS)).toHaveLength(n); // UC completes on send
    const rx = B.cq.poll(100);
    expect(rx.length).toBeGreaterThan(n / 2);
    expect(rx.length).toBeLessThan(n); // 3 packets each at 5% loss: some messages are lost
    rx.forEach((w, k) => {
      // Receive WQEs are used in order; message k of the ones that arrived lands in WQE k.
      expect(w.wrId).toBe(BigInt(k));
      expect(w.byteLen).toBe(3000);
    });
    // Each delivered message is some whole message: its bytes equal one source slice.
    for (let k = 0; k < rx.length; k++) {
      const got = Buffer.from(B.buf.subarray(k * 4096, k * 4096 + 3000));
      let found = false;
      for (let i = 0; i < n && !found; i++) found = got.equals(Buffer.from(A.buf.subarray(i * 2048, i * 2048 + 3000)));
      expect(found).toBe(true);
    }
  });

  test('UD: datagrams with immediate data, GRH area, source QP and Q_Key', () => {
    const { sim, A, B } = pairOf(QpType.UD);
    const ah = sim.a.createAh(A.pd, { dgid: `::ffff:${SIM_IP_B}`, dmac: sim.b.driver.mac });
    for (let i = 0; i < 3; i++) B.qp.postRecv({ wrId: i, sgList: [B.mr.sge(i * 2048, 2048)] });
    A.qp.postSend({
      wrId: 7,
      opcode: WrOpcode.SEND_WITH_IMM,
      immData: 42,
      sgList: [A.mr.sge(0, 1000)],
      sendFlags: SendFlags.SIGNALED,
      ud: { ah, remoteQpn: B.qp.qpNum, remoteQkey: 0x1234 },
    });
    A.qp.postSend({
      wrId: 8,
      opcode: WrOpcode.SEND,
      sgList: [A.mr.sge(0, 10)],
      sendFlags: SendFlags.SIGNALED,
      ud: { ah, remoteQpn: B.qp.qpNum, remoteQkey: 0x9999 },
    });
    // High bit set: use the sending QP's own Q_Key (C10-15), which matches.
    A.qp.postSend({
      wrId: 9,
      opcode: WrOpcode.SEND,
      sgList: [A.mr.sge(0, 20)],
      sendFlags: SendFlags.SIGNALED,
      ud: { ah, remoteQpn: B.qp.qpNum, remoteQkey: 0x8000_0000 },
    });
    sim.clock.runUntilIdle();
    expect(A.cq.poll(10).map((w) => w.status)).toEqual([0, 0, 0]);
    const rx = B.cq.poll(10);
    expect(rx).toHaveLength(2);
    expect(rx[0]).toMatchObject({ status: WcStatus.SUCCESS, byteLen: 1040, srcQp: A.qp.qpNum, immData: 42 });
    expect((rx[0]?.wcFlags ?? 0) & (WcFlags.GRH | WcFlags.WITH_IMM)).toBe(WcFlags.GRH | WcFlags.WITH_IMM);
    expect(rx[1]).toMatchObject({ status: WcStatus.SUCCESS, byteLen: 60 });
    // GRH area: 20 zero bytes, then the IPv4 header (version 4, IHL 5), then the data.
    expect(Array.from(B.buf.subarray(0, 20))).toEqual(new Array(20).fill(0));
    expect(B.buf[20]).toBe(0x45);
    expect(Buffer.compare(B.buf.subarray(40, 1040), A.buf.subarray(0, 1000))).toBe(0);
    expect(B.qp.counters.qkey_violation).toBe(1);
  });

  test('UD refuses a message longer than the port MTU at post time (UD has no path MTU: rxe uses the port MTU)', () => {
    const { sim, A, B } = pairOf(QpType.UD);
    const ah = sim.a.createAh(A.pd, { dgid: `::ffff:${SIM_IP_B}`, dmac: sim.b.driver.mac });
    expect(A.qp.mtu).toBe(4096); // the 4200-byte link carries a 4096-byte IB MTU
    expect(() => A.qp.postSend({ opcode: WrOpcode.SEND, sgList: [A.mr.sge(0, 5000)], ud: { ah, remoteQpn: B.qp.qpNum, remoteQkey: 1 } })).toThrow(
      /exceeds the path MTU/,
    );
  });
});
