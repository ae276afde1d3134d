/**
 * Frames the capture cut short, analysed from the headers they hold: a cut capture, whether its
 * records admit the cut (captured length < original length: a snaplen) or not (the cut length
 * written as the original length too, only the IP/UDP lengths tell), gives the go-back-N verdicts
 * of the whole capture (episodes, violations, messages, every frame's flags but `truncated`)
 * wherever the headers the analysis reads are whole: the BTH, and the AETH of an ACK. A cut frame
 * is flagged truncated, never malformed or icrcBad, and the one-thread and two-thread analyses agree.
 */
import { type AnalysisResult, Analyzer, analyzeCapture } from '../../analysis/analyzer';
import { ViewBatchReader, ViewBatchWriter, newViewBatch } from '../../analysis/view-batch';
import { readCapture } from '../../packets/pcap';
import { Op, Syn, ack, burstPastRecovery, capture, flagsOf, req, type Step } from './frames';
import { cutSnaplen, cutUnadmitted } from '../support/degrade';
import { ownCapture } from '../support/own-capture';
import { RuleId } from '../../analysis/types';
import { analysisDocument } from '../../analysis/document';

/** A SEND ONLY of 1000 bytes: its payload is cut at any snap length below 1058. */
const send = (us: number, psn: number): Step => req(us, Op.SEND_ONLY, psn, { len: 1000 });

/** Go-back-N sequences with episodes, violations and messages (test/analysis/checkers.test.ts's, with 1000-byte payloads). */
const SEQUENCES: Record<string, Step[]> = {
  'a clean NAK recovery': [send(0, 10), send(1, 11), send(2, 12), ack(5, 10, Syn.NAK_SEQ), send(7, 10), send(8, 11), send(9, 12), ack(12, 12)],
  'two NAKs for one gap': [
    send(0, 10),
    send(1, 11),
    send(2, 12),
    ack(5, 10, Syn.NAK_SEQ),
    ack(6, 10, Syn.NAK_SEQ),
    send(7, 10),
    send(8, 11),
    send(9, 12),
    ack(12, 12),
  ],
  'a resend not from the NAKed PSN': [
    send(0, 10),
    send(1, 11),
    send(2, 12),
    ack(5, 10, Syn.NAK_SEQ),
    send(7, 11),
    send(8, 12),
    send(20000, 10),
    send(20001, 11),
    send(20002, 12),
    ack(20012, 12),
  ],
  'a resend before the RNR timer ran out': [send(0, 10), ack(1, 10, Syn.rnr(13)), send(100, 10), ack(101, 10)],
  'a timeout resend that skips the first unacknowledged PSN': [send(0, 10), send(1, 11), send(2, 12), ack(3, 10), send(20000, 12), ack(20003, 11, Syn.NAK_SEQ)],
  'a timeout burst past its recovery': burstPastRecovery().map((s) => (s.from === 'a' ? { ...s, t: { ...s.t, payload: new Uint8Array(1000) } } : s)),
};

/** The verdicts a cut capture must keep: everything but the `truncated` flags and the capture quality's count of them. */
function verdicts(r: AnalysisResult): unknown {
  return {
    episodes: r.episodes,
    violations: r.violations,
    messages: r.messages,
    captureGaps: r.captureGaps,
    frames: r.frameResults.map((f) => ({ ...f, flags: f.flags.filter((x) => x !== 'truncated') })),
    malformed: r.frames.malformed,
    icrcBad: r.frames.icrcBad,
  };
}

/** The analysis made through view batches (the two-thread `roce analyze`: analysis/view-batch.ts), on this thread. */
function viaBatches(file: Uint8Array): AnalysisResult {
  const analyzer = new Analyzer({ allFrames: true });
  const reader = new ViewBatchReader(analyzer, {});
  const writer = new ViewBatchWriter({});
  writer.begin(newViewBatch());
  const cap = readCapture(file);
  const t0 = cap.records[0]?.timestampNs ?? 0n;
  for (const r of cap.records) {
    if (writer.full) {
      reader.read(writer.end());
      writer.begin(newViewBatch());
    }
    const d = r.data;
    writer.add(
      r.index,
      Number(r.timestampNs - t0),
      r.linkType,
      r.origLen,
      new DataView(d.buffer),
      new Uint8Array(d.buffer),
      d.byteOffset,
      d.byteOffset + d.byteLength,
      r.index === 1 ? { sec: r.sec, nsec: r.nsec, digits: r.timeDigits } : undefined,
    );
  }
  reader.read(writer.end());
  return analyzer.finish();
}

const CUTS: readonly { name: string; cut: (f: Uint8Array) => Uint8Array }[] = [
  { name: 'snaplen 64', cut: (f) => cutSnaplen(f, 64) },
  { name: 'snaplen 128', cut: (f) => cutSnaplen(f, 128) },
  { name: 'records cut to 64 bytes that do not say so', cut: (f) => cutUnadmitted(f, 64) },
  { name: 'records cut to 128 bytes that do not say so', cut: (f) => cutUnadmitted(f, 128) },
];

describe('go-back-N verdicts of a cut capture are the whole capture’s', () => {
  for (const [name, steps] of Object.entries(SEQUENCES)) {
    for (const c of CUTS) {
      test(`${name}, ${c.name}`, () => {
        const whole = analyzeCapture(capture(steps), { allFrames: true });
        const cut = analyzeCapture(c.cut(capture(steps)), { allFrames: true });
        expect(verdicts(cut)).toEqual(verdicts(whole));
        // Every request (1058-byte frames) is cut, every response (62 bytes) whole.
        const requests = steps.filter((s) => s.from === 'a').length;
        expect(cut.frames.truncated).toBe(requests);
        expect(cut.captureQuality.truncated).toBe(requests);
        expect(cut.flagCounts.truncated).toBe(requests);
        steps.forEach((s, i) => expect(flagsOf(cut, i + 1).includes('truncated')).toBe(s.from === 'a'));
        expect(cut.flagCounts.malformed + cut.flagCounts.icrcBad).toBe(0);
        expect(analysisDocument(viaBatches(c.cut(capture(steps))), 'f')).toEqual(analysisDocument(cut, 'f'));
      });
    }
  }

  test('the sequences hold what they are about: episodes, violations and messages', () => {
    const all = Object.values(SEQUENCES).map((s) => analyzeCapture(capture(s)));
    expect(all.reduce((n, r) => n + r.episodeCount, 0)).toBeGreaterThanOrEqual(6);
    expect(new Set(all.flatMap((r) => r.violations.map((v) => v.rule)))).toEqual(
      new Set([RuleId.ONE_NAK_PER_GAP, RuleId.RETRANSMIT_FROM_NAK_PSN, RuleId.RNR_WAIT_RESPECTED, RuleId.RETRANSMIT_FROM_FIRST_UNACKED]),
    );
  });

  // The stack's own runs with frame loss (SEND, WRITE, READ, atomics, RNR NAKs and go-back-N):
  // every header is within the first 82 bytes (Ethernet, IPv4, UDP, BTH and an AtomicETH).
  for (const seed of [1, 2, 3]) {
    for (const c of CUTS.filter((x) => x.name.includes('128'))) {
      test(`the stack’s own lossy run (seed ${seed}), ${c.name}`, () => {
        const file = ownCapture(seed, 'host-b', { qps: 2, bytes: 48 * 1024, maxMessage: 5000 }, 0.05);
        const whole = analyzeCapture(file, { allFrames: true });
        expect(whole.episodeCount).toBeGreaterThan(5);
        const cut = analyzeCapture(c.cut(file), { allFrames: true });
        expect(cut.frames.truncated).toBeGreaterThan(50);
        expect(verdicts(cut)).toEqual(verdicts(whole));
        expect(analysisDocument(viaBatches(c.cut(file)), 'f')).toEqual(analysisDocument(cut, 'f'));
      });
    }
  }
});

describe('frames cut inside their headers', () => {
  test('a capture ending inside the BTH: a RoCE frame, truncated, in no conversation, not malformed', () => {
    const file = cutUnadmitted(capture([send(0, 10), ack(1, 10)]), 50);
    const r = analyzeCapture(file, { allFrames: true });
    expect(r.frames).toMatchObject({ total: 2, roce: 2, malformed: 0, icrcBad: 0, truncated: 2 });
    expect(r.frameResults.map((f) => [f.frame, f.conversation, f.opcode, f.flags])).toEqual([
      [1, null, 'UNDECODED', ['truncated']],
      [2, null, 'UNDECODED', ['truncated']],
    ]);
    expect(r.conversations).toEqual([]);
  });

  test('an ACK whose AETH the capture cut belongs to its conversation and tells the flow nothing', () => {
    // 56 bytes: the ACK's BTH and 2 of its AETH's 4 bytes; the SEND's BTH whole.
    const steps = [send(0, 10), send(1, 11), ack(5, 10, Syn.NAK_SEQ), send(7, 10), send(8, 11), ack(12, 11)];
    const cut = analyzeCapture(cutSnaplen(capture(steps), 56), { allFrames: true });
    expect(cut.frames.malformed).toBe(0);
    // As if the capture held no response at all: no NAK, so no episode, the resends are duplicates
    // to the responder as far as the capture shows, and no message completes.
    const requestsOnly = analyzeCapture(capture(steps.filter((s) => s.from === 'a')), { allFrames: true });
    const requestFlags = requestsOnly.frameResults.map((f) => f.flags);
    expect(cut.frameResults.map((f) => [f.conversation, f.flags])).toEqual([
      [1, [...requestFlags[0]!, 'truncated']],
      [1, [...requestFlags[1]!, 'truncated']],
      [1, ['truncated']],
      [1, [...requestFlags[2]!, 'truncated']],
      [1, [...requestFlags[3]!, 'truncated']],
      [1, ['truncated']],
    ]);
    expect(requestFlags[2]).toContain('retransmission');
    const kinds = (r: AnalysisResult): unknown => ({
      episodes: r.episodes.map((e) => [e.trigger, e.gapPsn, e.resentFirstPsn, e.resentLastPsn, e.recoveredFrame]),
      violations: r.violations.map((v) => v.rule),
    });
    expect(kinds(cut)).toEqual(kinds(requestsOnly));
    expect(cut.episodes.map((e) => e.trigger)).toEqual(['timeout']);
    expect(cut.messages.map((m) => m.status)).toEqual(requestsOnly.messages.map((m) => m.status));
    expect(cut.conversations[0]!.flows.a!.responses).toBe(2);
  });

  test('a READ whose RETH the capture cut: its responses still count (the READ reaches up to the next request)', () => {
    // 64 bytes: the READ REQUEST's BTH and 10 of its RETH's 16 bytes; the responses' BTH and AETH whole.
    const steps: Step[] = [
      req(0, Op.READ_REQUEST, 10, { reth: { va: 0x1000n, rkey: 7, dmaLength: 2048 } }),
      {
        us: 5,
        from: 'b',
        t: { bth: { opcode: Op.READ_RESPONSE_FIRST, destQp: 0x11, psn: 10 }, aeth: { syndrome: 0x1f, msn: 0 }, payload: new Uint8Array(1024) },
      },
      {
        us: 6,
        from: 'b',
        t: { bth: { opcode: Op.READ_RESPONSE_LAST, destQp: 0x11, psn: 11 }, aeth: { syndrome: 0x1f, msn: 1 }, payload: new Uint8Array(1024) },
      },
      send(7, 12),
      ack(9, 12),
    ];
    const whole = analyzeCapture(capture(steps), { allFrames: true });
    const cut = analyzeCapture(cutSnaplen(capture(steps), 64), { allFrames: true });
    expect(whole.violations).toEqual([]);
    expect(cut.violations).toEqual([]);
    expect(cut.frames.malformed).toBe(0);
    expect(cut.frameResults.map((f) => f.flags.filter((x) => x !== 'truncated'))).toEqual(whole.frameResults.map((f) => f.flags));
    expect(cut.messages.map((m) => [m.op, m.status])).toEqual(whole.messages.map((m) => [m.op, m.status]));
  });
});
