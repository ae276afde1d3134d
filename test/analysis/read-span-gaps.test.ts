/**
 * No false capture gaps around READs whose span (one PSN per response packet, IBTA §9.7.4.1.3) the
 * capture does not show at once, and a request really missing from the capture still is one.
 * Two ways the analyzer once inferred requests the capture missed, on captures at a host's NIC that
 * hold every frame the host sent and received:
 *  - a hole in the responder's view opened past a READ's first PSN (an earlier READ of unknown path
 *    MTU seemed to take more PSNs than it did): the READ's resend, which carries its whole span, was
 *    taken to fill only its first PSN, and its other PSNs were called missing from the capture;
 *  - a duplicate WRITE re-ACKed with the PSN before the responder's ePSN (C9-105), which was the
 *    last PSN of the READ sent last, before the path MTU was known: the ACK seemed to acknowledge a
 *    PSN never sent.
 *
 * @group unit
 */
import { analyzeCapture, type CapturePoint } from '../../analysis/analyzer';
import { runCase } from '../../apps/sweep/case-run';
import { parseCase } from '../../apps/sweep/sweep-case';
import { analyzerCapturePoint } from '../../apps/sweep/case-verdict';
import { SIM_IP_A, SIM_IP_B } from '../../apps/sim/sim-pair';
import { capture, Op, QP_A, req, type Step, Syn, ack } from './frames';

const AT_A: CapturePoint = `host:${SIM_IP_A}`;
const AT_B: CapturePoint = `host:${SIM_IP_B}`;
const MTU = 1024;
const RKEY = 0x1234;

function read(us: number, psn: number, dmaLength: number): Step {
  return req(us, Op.READ_REQUEST, psn, { reth: { va: 0x10000n, rkey: RKEY, dmaLength } });
}

/** The READ responses to a READ of `length` bytes at `psn`, MTU-sized packets from `us` on. */
function readResponses(us: number, psn: number, length: number): Step[] {
  const n = Math.ceil(length / MTU);
  return Array.from({ length: n }, (_, i) => {
    const opcode = n === 1 ? Op.READ_RESPONSE_ONLY : i === 0 ? Op.READ_RESPONSE_FIRST : i === n - 1 ? Op.READ_RESPONSE_LAST : Op.READ_RESPONSE_MIDDLE;
    const withAeth = opcode !== Op.READ_RESPONSE_MIDDLE;
    return {
      us: us + i * 0.1,
      from: 'b' as const,
      t: {
        bth: { opcode, destQp: QP_A, psn: psn + i },
        ...(withAeth ? { aeth: { syndrome: Syn.ACK, msn: 0 } } : {}),
        payload: new Uint8Array(i === n - 1 ? length - (n - 1) * MTU : MTU),
      },
    };
  });
}

function gapsOf(steps: readonly Step[], at: CapturePoint): { firstPsn: number; lastPsn: number; how: string }[] {
  const r = analyzeCapture(capture(steps), { capturePoint: at });
  expect([...r.violationsByRule].filter(([, n]) => n > 0)).toEqual([]);
  return r.captureGaps.map((g) => ({ firstPsn: g.firstPsn, lastPsn: g.lastPsn, how: g.how }));
}

describe("a READ's resend carries its whole span into the hole", () => {
  /**
   * At the responder's NIC: WRITE 9 lost on the way, WRITE 10 out of sequence draws a NAK for 9.
   * WRITE 11 is lost too, so READ 12 (2600 bytes: PSNs 12..14, up to 12..22 while the MTU is not
   * known) opens a new hole. READ 15 (9000 bytes: 15..23) is lost on the way; WRITEs 24 and 25
   * arrive. The requester resends everything from 9; by READ 15's resend the responses to READ 12
   * have shown the MTU.
   */
  function steps(withWrite24: boolean): Step[] {
    const write = (us: number, psn: number): Step =>
      req(us, Op.WRITE_ONLY, psn, { reth: { va: 0x20000n + BigInt(psn * 8), rkey: RKEY, dmaLength: 8 }, len: 8 });
    return [
      write(0, 8),
      ack(0.5, 8),
      write(1, 10),
      ack(1.5, 9, Syn.NAK_SEQ),
      read(2, 12, 2600),
      ...(withWrite24 ? [write(3, 24)] : []),
      write(3.5, 25),
      write(10, 9),
      write(10.2, 10),
      write(10.4, 11),
      ack(10.6, 11),
      read(11, 12, 2600),
      ...readResponses(11.5, 12, 2600),
      read(12, 15, 9000),
      ...readResponses(12.5, 15, 9000),
      ...(withWrite24 ? [write(14, 24)] : []),
      write(14.5, 25),
      ack(15, 25),
    ];
  }

  test('every request captured: no capture gap', () => {
    expect(gapsOf(steps(true), AT_B)).toEqual([]);
  });

  test('WRITE 24 missing from the capture: a capture gap of that PSN alone', () => {
    expect(gapsOf(steps(false), AT_B)).toEqual([{ firstPsn: 24, lastPsn: 24, how: 'notCaptured' }]);
  });
});

describe('an ACK at the last PSN of a READ of unknown span', () => {
  /**
   * At the requester's NIC: after WRITE 9 and its ACK, WRITE 10 and READ 11 (1444 bytes: PSNs
   * 11..12 at MTU 1024) reach the responder, their responses are lost; after the timeout both are
   * resent, the responder re-ACKs the duplicate WRITE with 12, the PSN before its ePSN, and answers
   * the READ again.
   */
  function steps(withRead: boolean): Step[] {
    const write = (us: number): Step => req(us, Op.WRITE_ONLY, 10, { reth: { va: 0x20000n, rkey: RKEY, dmaLength: 600 }, len: 600 });
    return [
      req(0, Op.WRITE_ONLY, 9, { reth: { va: 0x30000n, rkey: RKEY, dmaLength: 8 }, len: 8 }),
      ack(4, 9),
      write(5),
      ...(withRead ? [read(5.1, 11, 1444)] : []),
      write(16_000),
      ...(withRead ? [read(16_000.1, 11, 1444)] : []),
      ack(16_004, 12),
      ...readResponses(16_004.1, 11, 1444),
    ];
  }

  test('every request captured: no capture gap', () => {
    expect(gapsOf(steps(true), AT_A)).toEqual([]);
  });

  test('the READ missing from the capture: the ACK shows a capture gap', () => {
    expect(gapsOf(steps(false), AT_A)).toContainEqual({ firstPsn: 11, lastPsn: 12, how: 'ackedUnseen' });
  });
});

test.each([
  // The hole opened past a READ's first PSN; its resend filled the rest.
  'seed=33262 loss=10% burst=0.2%x2 reorder=1%/3 dup=0% mtu=2048 qps=1 mix=read bytes=16K at=host-b',
  'seed=800480 loss=10% burst=off reorder=5%/2 dup=0% mtu=1024 qps=4 mix=read bytes=128K at=host-b',
  // The same, resent before the path MTU was known (its span as far as 256-byte packets take it).
  'seed=460700 loss=10% burst=off reorder=5%/4 dup=0% mtu=1024 qps=16 mix=read bytes=128K at=host-b',
  // A duplicate WRITE re-ACKed at the last PSN of a READ sent before the path MTU was known.
  'seed=174594 loss=5% burst=1%x8 reorder=off dup=0% mtu=1024 qps=16 mix=mix bytes=32K at=host-a',
  'seed=78370 loss=1% burst=0.2%x8 reorder=off dup=5% mtu=2048 qps=16 mix=read bytes=64K at=host-a',
])('%s: no capture gap, no violation', (line) => {
  const c = parseCase(line);
  const r = analyzeCapture(runCase(c).capture, { capturePoint: analyzerCapturePoint(c.at) });
  expect(r.captureQuality.captureGaps).toBe(0);
  expect([...r.violationsByRule].filter(([, n]) => n > 0)).toEqual([]);
});
