/**
 * Every capture the test suite and the rxe lab write, judged by the sweep's two judges
 * (apps/sweep/capture-judgement.ts): captures/ (generated), captures/rxe/ (recorded in the rxe lab)
 * and captures/interop/ (each interop boot's capture, when the interop tests have run here).
 * `roce analyze` finds no go-back-N rule violation (rxe's own choices are a class of their own,
 * counted apart); `roce replay` in both roles finds no violation (its policy, unverifiable and
 * unsupported differences are not violations).
 *
 * A capture whose frames were dropped after the capture point (the lab's loss runs: the guest's
 * nftables rule and the stack's fault injector drop after qemu's filter-dump) says so in the record
 * beside it, and is analysed with the capture point `sent` and not replayed: replay needs what the
 * replayed host received (apps/sweep/capture-files.ts captureFileContext, docs/interop.md). The
 * sweep script judges capture files the same way.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { captureFileContext, captureFileFindings, captureFiles } from '../../apps/sweep/capture-files';
import { judgeCapture } from '../../apps/sweep/capture-judgement';

const CAPTURES = path.resolve(__dirname, '..', '..', 'captures');
const files = captureFiles([CAPTURES]);

test('the bundled captures are all found (generated, and the rxe lab’s)', () => {
  const rel = files.map((f) => path.relative(CAPTURES, f));
  for (const f of [
    'rc-conversation.pcap',
    'rc-conversation.pcapng',
    'malformed.pcap',
    'xrc-rd-v1.pcap',
    'rxe/send-bw-rnr.pcap',
    'rxe/read-write-loss.pcap',
    'rxe/rping-req-retries.pcap',
  ])
    expect(rel).toContain(f);
});

describe.each(files.map((f) => [path.relative(CAPTURES, f), f] as const))('%s', (_name, file) => {
  const { capturePoint, replay, breaksRules } = captureFileContext(file);
  const j = judgeCapture(fs.readFileSync(file), { capturePoint, replay });

  const rel = path.relative(CAPTURES, file);
  test(`roce analyze (capture point ${capturePoint}): no rule violation${breaksRules.length > 0 ? ` but those its record says a host breaks on purpose (${breaksRules.join(', ')})` : ''}`, () => {
    if (breaksRules.length > 0) {
      // An attack's capture (the record's breaksRules): the analyzer finds the breaches, and nothing else.
      expect(j.captureError).toBeNull();
      expect(Object.keys(j.analyze.violations).length).toBeGreaterThan(0);
      for (const rule of Object.keys(j.analyze.violations)) expect(breaksRules).toContain(rule);
      // The sweep's judgement of the same file (docs/sweep-results.md) says the same.
      expect(captureFileFindings({ file, capturePoint, replayed: replay, breaksRules, judgement: j })).toEqual([]);
      return;
    }
    expect({ captureError: j.captureError, violations: j.analyze.violations, examples: j.analyze.examples }).toEqual({
      captureError: null,
      violations: {},
      examples: [],
    });
    // rxe's own choices are counted apart: none in the generated captures, whose hosts are the engine.
    if (!rel.includes(path.sep)) expect(j.analyze.rxeBehaviours).toEqual({});
    if (rel === path.join('rxe', 'send-bw-rnr.pcap')) expect(j.analyze.rxeBehaviours).toEqual({ seqNakAfterRnrNak: 9 });
    if (rel === path.join('rxe', 'send-bw-rnr-late.pcap'))
      expect(j.analyze.rxeBehaviours).toEqual({ seqNakAfterRnrNak: 16, sendsDuringRnrWait: 1, retryFromStaleCompleterPsn: 1 });
  });

  // Not replayed when frames were dropped after the capture point (see above).
  if (replay)
    test('roce replay in both roles: no violation', () => {
      for (const role of ['responder', 'requester'] as const) {
        const r = j.replay[role];
        expect({ role, violations: r.violations, kinds: r.violationKinds, examples: r.examples }).toEqual({ role, violations: 0, kinds: {}, examples: [] });
      }
    });
});
