// Two RoCE stacks in one process over the in-memory link, with targeted faults in the style of
// Lumina: the third packet of an RDMA WRITE is dropped, and so is its first retransmission.
// Go-back-N recovers (a NAK, then a timeout) and every byte arrives.
//   node lossy-link.mjs
import assert from 'node:assert/strict';
import { createSimPair } from 'roce-ts/sim';
import { Access, connectQp, endpointOf, Mtu, QpType, SendFlags, WcStatus, WrOpcode } from 'roce-ts/stack';

const PSN_A = 1000;
const sim = createSimPair({
  seed: 7,
  faults: {
    aToB: {
      rules: [
        { action: 'drop', match: { psn: PSN_A + 2, round: 0 } }, // the first transmission
        { action: 'drop', match: { psn: PSN_A + 2, round: 1 } }, // the first retransmission
      ],
    },
  },
});

// Each side: a protection domain, a buffer registered as a memory region, a CQ and an RC QP.
const side = (dev, fill) => {
  const pd = dev.allocPd();
  const buf = new Uint8Array(16 * 1024).map((_, i) => (fill ? (i * 7) & 0xff : 0));
  const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
  const cq = dev.createCq(64);
  const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
  return { buf, mr, cq, qp };
};
const a = side(sim.a, true);
const b = side(sim.b, false);

// Exchange endpoints as rc_pingpong does, then bring both QPs to RTS.
const ea = endpointOf(sim.a, a.qp, PSN_A);
const eb = endpointOf(sim.b, b.qp, 2000);
connectQp(a.qp, ea, eb, { pathMtu: Mtu.MTU_1024 });
connectQp(b.qp, eb, ea, { pathMtu: Mtu.MTU_1024 });

a.qp.postSend({
  wrId: 1,
  opcode: WrOpcode.RDMA_WRITE,
  sgList: [a.mr.sge(0, a.buf.length)],
  sendFlags: SendFlags.SIGNALED,
  rdma: { remoteAddr: b.mr.addr(0), rkey: b.mr.rkey },
});
let wcs = [];
sim.clock.runWhile(() => (wcs = a.cq.poll()).length === 0);

assert.equal(wcs[0].status, WcStatus.SUCCESS);
assert.deepEqual(b.buf, a.buf);
assert.equal(sim.link.faults.aToB.counters.dropped, 2);
assert.ok(a.qp.counters.retransmitted_pkts > 0);
console.log(
  `16 KiB written in ${(sim.clock.now() / 1000).toFixed(1)} µs of virtual time: 2 packets dropped by rule, ` +
    `${a.qp.counters.rcvd_seq_err} sequence NAK(s), ${a.qp.counters.completer_retry_err} timeout(s), ${a.qp.counters.retransmitted_pkts} packets resent`,
);
