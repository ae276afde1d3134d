/**
 * The pacer in the requester, by dialogue: unlimited, a multi-packet WRITE leaves in one burst;
 * after a CNP the same WRITE leaves one packet per W·8/R_C (W: the frame's bytes on the wire,
 * preamble, FCS and gap included), each released by the pacer's timer.
 */
import { scriptedPeer, op, psnPlus, SYN } from '../../support/scripted-peer';
import { Opcode } from '../../../packets/opcodes';
import { SendFlags, WrOpcode } from '../../../stack/work-request-codes';
import { Ecn } from '../../../packets/ecn';
import { wireBytes } from '../../../packets/wire-size';

describe('pacer: the requester sends at the reaction point’s rate', () => {
  test('a 4-packet WRITE: one burst while unlimited; one packet per frame-time at R_C after a CNP', () => {
    const rate = 100; // Mb/s, set by the first CNP
    const h = scriptedPeer({ congestion: { rp: true, lineRateMbps: 10_000, params: { rpRateToSetOnFirstCnp: rate } } });
    const write = (wrId: number): void =>
      h.qp.postSend({
        wrId,
        opcode: WrOpcode.RDMA_WRITE,
        sgList: [h.mr.sge(0, 4 * h.mtu)],
        sendFlags: SendFlags.SIGNALED,
        rdma: { remoteAddr: 0x1000n, rkey: 0x42 },
      });

    write(1);
    const burst = h.sent();
    expect(burst.map((s) => s.op)).toEqual(['RC_RDMA_WRITE_FIRST', 'RC_RDMA_WRITE_MIDDLE', 'RC_RDMA_WRITE_MIDDLE', 'RC_RDMA_WRITE_LAST']);
    expect(burst.every((s) => s.pkt.ipv4?.ecn === Ecn.ECT0)).toBe(true);
    h.inject({ bth: { opcode: op('RC_ACKNOWLEDGE'), psn: psnPlus(h.sqPsn, 3) }, aeth: { syndrome: SYN.ACK, msn: 1 } });
    h.inject({ bth: { opcode: Opcode.CNP, psn: 0, becn: true } });
    expect(h.qp.cc?.rp?.currentRate).toBe(rate);

    write(2);
    const first = h.sent();
    expect(first.map((s) => s.op)).toEqual(['RC_RDMA_WRITE_FIRST']);
    for (const name of ['RC_RDMA_WRITE_MIDDLE', 'RC_RDMA_WRITE_MIDDLE', 'RC_RDMA_WRITE_LAST']) {
      const prev = h.driver.tx[h.driver.tx.length - 1] as Uint8Array;
      const gapNs = Math.ceil((wireBytes(prev.length) * 8000) / rate); // the previous frame's wire bytes at R_C
      h.advance(gapNs - 1);
      expect(h.sent()).toEqual([]);
      h.advance(1);
      expect(h.sent().map((s) => s.op)).toEqual([name]);
    }
  });
});
