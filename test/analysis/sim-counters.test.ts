/**
 * `roce analyze` on the project's own simulated runs, where every injected
 * fault is known, against the devices' own counters.
 *
 * Capture points (see docs/analysis.md): a capture at the requester's host
 * (A) holds every request as sent and every response as received, so the
 * requester's behaviour (retransmissions, what triggered them, timeouts) can
 * be read exactly; a capture at the responder's host (B) holds what B
 * received and sent, so its NAKs and its view of the sequence can be. The
 * wire as delivered shows corruption, ECN marks and network duplicates.
 */
import { runWorkload, OpKind } from '../../apps/sim/workload';
import { analyzeCapture, type AnalysisResult } from '../../analysis/analyzer';
import { RuleId } from '../../analysis/types';
import { readCapture } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';
import { simWithHostCaptures } from './host-capture';

function episodes(r: AnalysisResult): Record<string, number> {
  const out: Record<string, number> = { nak: 0, rnr: 0, timeout: 0, impliedNak: 0 };
  for (const e of r.episodes) out[e.trigger] = (out[e.trigger] ?? 0) + 1;
  return out;
}

describe.each([1, 2, 3, 4])('seeded run %i: 2% loss each way, 3 QPs, SEND/WRITE/READ/atomics with RNR', (seed) => {
  const h = simWithHostCaptures({ seed, faults: { aToB: { drop: 0.02 }, bToA: { drop: 0.02 } } });
  const w = runWorkload(h.sim, { seed, bytes: 512 * 1024, qps: 3 });
  const A = w.countersA;
  const B = w.countersB;
  const ra = analyzeCapture(h.hostA());
  const rb = analyzeCapture(h.hostB());

  test('the workload itself succeeded and lost frames', () => {
    expect(w.ok).toBe(true);
    expect(h.sim.link.faults.aToB.counters.dropped + h.sim.link.faults.bToA.counters.dropped).toBeGreaterThan(0);
  });

  test('retransmissions equal the requester’s retransmitted_pkts', () => {
    // A READ re-request that resumes inside the READ's own response range counts as a retransmission
    // on both sides (the stack's sentHigh covers a READ's whole response range).
    expect(ra.flagCounts.retransmission).toBe(A.retransmitted_pkts);
    expect(A.retransmitted_pkts).toBeGreaterThan(0);
  });

  test('NAKs and RNR NAKs equal what the responder sent', () => {
    expect(rb.flagCounts.nakSeqErr).toBe(B.send_seq_err_nak);
    expect(rb.flagCounts.rnrNak).toBe(B.send_rnr_err);
    expect(rb.flagCounts.nakInvReq + rb.flagCounts.nakRemAccess + rb.flagCounts.nakRemOp).toBe(B.send_nak_inv_req + B.send_nak_rem_access + B.send_nak_rem_op);
  });

  test('episodes triggered by a timeout or an implied NAK equal the requester’s counters', () => {
    const e = episodes(ra);
    expect(e['timeout']).toBe(A.local_ack_timeout_err);
    expect(e['impliedNak']).toBe(A.implied_nak);
    // Every NAK-triggered episode answers a NAK the requester received.
    expect(e['nak']).toBeLessThanOrEqual(A.rcvd_seq_err);
    expect(e['rnr']).toBeLessThanOrEqual(A.rcvd_rnr_err);
  });

  test('episode fields hang together', () => {
    for (const ep of ra.episodes) {
      expect(ep.resentPackets).toBeGreaterThan(0);
      if (ep.trigger === 'nak' || ep.trigger === 'rnr') expect(ep.triggerFrame).not.toBeNull();
      if (ep.trigger === 'timeout') expect(ep.triggerFrame).toBeNull();
      if (ep.retransmitDelayNs !== null) expect(ep.retransmitDelayNs).toBeGreaterThanOrEqual(0);
      if (ep.nakGenerationNs !== null) expect(ep.nakGenerationNs).toBeGreaterThanOrEqual(0);
      if (ep.recoveryNs !== null) expect(ep.recoveryNs).toBeGreaterThanOrEqual(0);
    }
  });

  test('no go-back-N rule is broken at the requester’s host', () => {
    // Includes the READ resumed after an RNR wait: it restarts at the first response still missing.
    expect(ra.violations).toEqual([]);
    expect(rb.violations.filter((v) => v.rule === RuleId.ONE_NAK_PER_GAP || v.rule === RuleId.NAK_PSN_NOT_ACKED)).toEqual([]);
  });

  test('every message completes, and the conversations pair up', () => {
    expect(ra.conversations).toHaveLength(3);
    for (const c of ra.conversations) expect(c.a.qpn !== null && c.b.qpn !== null).toBe(true);
    expect(ra.messages.filter((m) => m.status !== 'ok')).toEqual([]);
  });
});

test('at the responder’s host, out-of-sequence and duplicate requests equal its counters (seed 1)', () => {
  const h = simWithHostCaptures({ seed: 1, faults: { aToB: { drop: 0.02 }, bToA: { drop: 0.02 } } });
  const w = runWorkload(h.sim, { seed: 1, bytes: 512 * 1024, qps: 3 });
  const rb = analyzeCapture(h.hostB());
  expect(rb.flagCounts.outOfSequence).toBe(w.countersB.out_of_seq_request);
  expect(rb.flagCounts.duplicateRequest).toBe(w.countersB.duplicate_request);
});

test('on the wire as delivered: each corruption, ECN mark and network duplicate is found', () => {
  const h = simWithHostCaptures({ seed: 7, faults: { aToB: { duplicate: 0.03 }, bToA: { corrupt: 0.02, ecnCe: 0.05 } } });
  const w = runWorkload(h.sim, { seed: 7, bytes: 256 * 1024, qps: 2, initialRecvs: 1000 });
  expect(w.ok).toBe(true);
  const r = analyzeCapture(h.wireDelivered());
  const f = h.sim.link.faults;
  expect(f.aToB.counters.duplicated).toBeGreaterThan(0);
  expect(r.flagCounts.duplicateFrame).toBe(f.aToB.counters.duplicated);
  expect(r.flagCounts.icrcBad).toBe(f.bToA.counters.corrupted);
  expect(r.flagCounts.ecnCe).toBe(f.bToA.counters.ecnMarked);
});

describe('targeted faults (Lumina-style events) are found where they were injected', () => {
  const ops = [OpKind.SEND, OpKind.WRITE];
  /** The first request of `opcode` in a capture: its frame number and PSN. */
  function firstRequest(bytes: Uint8Array, opcode: number): { frame: number; psn: number } {
    const cap = readCapture(bytes);
    for (const rec of cap.records) {
      const d = decodeFrame(rec.data);
      if (d.roce && d.bth !== null && d.bth.opcode === opcode) return { frame: rec.index, psn: d.bth.psn };
    }
    throw new Error('no such request');
  }

  test('one dropped SEND ONLY: a NAK episode at its PSN, resending from it', () => {
    const h = simWithHostCaptures({ seed: 3, faults: { aToB: { rules: [{ action: 'drop', match: { opcode: 'SEND_ONLY', round: 0 }, count: 1 }] } } });
    const w = runWorkload(h.sim, { seed: 3, bytes: 64 * 1024, qps: 1, ops, initialRecvs: 1000, minMessage: 1, maxMessage: 4096 });
    expect(w.ok).toBe(true);
    const bytes = h.hostA();
    const lost = firstRequest(bytes, 0x04);
    const r = analyzeCapture(bytes);
    const ep = r.episodes[0]!;
    expect(r.episodes).toHaveLength(1);
    expect(ep.trigger).toBe(w.countersA.local_ack_timeout_err > 0 ? 'timeout' : 'nak');
    expect(ep.gapPsn).toBe(lost.psn);
    expect(ep.lostFrame).toBe(lost.frame);
    expect(ep.resentFirstPsn).toBe(lost.psn);
    expect(r.flagCounts.retransmission).toBe(w.countersA.retransmitted_pkts);
    expect(r.violations).toEqual([]);
  });

  test('the same PSN dropped twice: the NAK, then a timeout (one NAK per gap)', () => {
    const h = simWithHostCaptures({
      seed: 3,
      faults: {
        aToB: {
          rules: [
            { action: 'drop', match: { opcode: 'SEND_ONLY', round: 0 }, count: 1 },
            { action: 'drop', match: { opcode: 'SEND_ONLY', round: 1 }, count: 1 },
          ],
        },
      },
    });
    const w = runWorkload(h.sim, { seed: 3, bytes: 64 * 1024, qps: 1, ops, initialRecvs: 1000, minMessage: 1, maxMessage: 4096, timeout: 8 });
    expect(w.ok).toBe(true);
    const r = analyzeCapture(h.hostA());
    expect(w.countersA.local_ack_timeout_err).toBe(1);
    expect(r.episodes.map((e) => e.trigger)).toEqual(['nak', 'timeout']);
    expect(r.episodes[1]!.gapPsn).toBe(r.episodes[0]!.gapPsn);
    expect(r.flagCounts.nakSeqErr).toBe(w.countersB.send_seq_err_nak);
    expect(r.violations).toEqual([]);
  });
});
