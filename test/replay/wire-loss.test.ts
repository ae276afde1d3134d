/**
 * Replay of captures taken where frames are sent, before a lossy link (a mirror before the lossy
 * segment, `roce demo`'s capture): the capture holds requests the real responder never got, and no
 * answer to them. A READ response is compared with the stack's answer to the request it answers, not
 * with the stack's k-th answer at its PSN, which answered a request the real responder never saw
 * (a READ resent after its responses were lost gets FIRST at a PSN its first reply had as MIDDLE).
 */
import { packetAddresses } from '../../packets/decode';
import { readCapture } from '../../packets/pcap';
import { OpFlag } from '../../packets/opcodes';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { replayResponder } from '../../apps/replay/responder-replay';
import { DiffClass } from '../../apps/replay/differences';
import { roceFrames } from '../support/degrade';
import { Op, QP_A, type Step, capture, req } from '../analysis/frames';
import { ownCapture } from '../support/own-capture';

test('as responder, captures taken before a link that loses 1-5 % of frames: no violation, READs resent mid-reply included', () => {
  const violations: string[] = [];
  let midReplyReads = 0;
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    for (const loss of [0.01, 0.03, 0.05]) {
      const file = ownCapture(seed, 'sent', { qps: 2, bytes: 256 * 1024, maxMessage: 40_000 }, loss);
      // READ requests resent from where their responses stopped: a VA inside an earlier READ's range, on its QP.
      const reads = roceFrames(file).flatMap((f) =>
        f.p.bth !== null && f.p.reth !== null && ((f.p.info?.flags ?? 0) & OpFlag.READ) !== 0
          ? [{ qp: f.p.bth.destQp, va: f.p.reth.va, end: f.p.reth.va + BigInt(f.p.reth.dmaLength) }]
          : [],
      );
      midReplyReads += reads.filter((r) => reads.some((o) => o.qp === r.qp && r.va > o.va && r.va < o.end)).length;
      const { packets } = capturedPackets(readCapture(file));
      for (const conv of findRcConversations(packets, packetAddresses)) {
        for (const d of replayResponder(conv, { timing: 'fast' }).differences) {
          if (d.class === DiffClass.VIOLATION) violations.push(`seed ${seed}, loss ${loss}: ${d.kind} PSN ${d.psn}: ${d.expected} / ${d.got}`);
        }
      }
    }
  }
  expect(midReplyReads).toBeGreaterThan(0);
  expect(violations).toEqual([]);
});

test('a READ retried from its middle: answered MIDDLE then LAST, as rxe does; a reply that starts with FIRST there is readSegmentation', () => {
  // A READ of three packets at PSN 10, all answered, then resent from PSN 11 (its responses lost
  // after the capture point): the real responder answers the resend from 11 on.
  const data = (n: number, fill: number): Uint8Array => new Uint8Array(n).fill(fill);
  const resp = (us: number, opcode: number, psn: number, payload: Uint8Array): Step => ({
    us,
    from: 'b',
    t: { bth: { opcode, destQp: QP_A, psn }, ...(opcode === Op.READ_RESPONSE_MIDDLE ? {} : { aeth: { syndrome: 0x1f, msn: 1 } }), payload },
  });
  const steps = (firstOfResend: number): Step[] => [
    req(0, Op.READ_REQUEST, 10, { reth: { va: 0x1000n, rkey: 0x2233, dmaLength: 2 * 1024 + 100 } }),
    resp(5, Op.READ_RESPONSE_FIRST, 10, data(1024, 1)),
    resp(6, Op.READ_RESPONSE_MIDDLE, 11, data(1024, 2)),
    resp(7, Op.READ_RESPONSE_LAST, 12, data(100, 3)),
    req(5000, Op.READ_REQUEST, 11, { reth: { va: 0x1000n + 1024n, rkey: 0x2233, dmaLength: 1024 + 100 } }),
    resp(5005, firstOfResend, 11, data(1024, 2)),
    resp(5006, Op.READ_RESPONSE_LAST, 12, data(100, 3)),
  ];
  const violations = (file: Uint8Array): string[] => {
    const { packets } = capturedPackets(readCapture(file));
    return findRcConversations(packets, packetAddresses).flatMap((conv) =>
      replayResponder(conv, { timing: 'fast' })
        .differences.filter((d) => d.class === DiffClass.VIOLATION)
        .map((d) => `${d.kind} ${d.psn}`),
    );
  };
  expect(violations(capture(steps(Op.READ_RESPONSE_MIDDLE)))).toEqual([]);
  expect(violations(capture(steps(Op.READ_RESPONSE_FIRST)))).toEqual(['readSegmentation 11']);
});
