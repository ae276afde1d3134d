/**
 * The sweep has teeth: a real run's capture, rewritten the way a broken implementation would have
 * behaved (apps/sweep/capture-mutants.ts: frames the run really sent, copied), fails the sweep
 * with the rule that names the break, where the same case unbroken shows none.
 */
import { MutantTap, type Mutant } from '../../apps/sweep/capture-mutants';
import { caseFailed, judgeCase } from '../../apps/sweep/case-verdict';
import { parseCase } from '../../apps/sweep/sweep-case';
import type { RuleId } from '../../analysis/types';

const CASES: { mutant: Mutant; rule: RuleId; line: string; what: string }[] = [
  {
    mutant: 'early-rnr-retry',
    rule: 'rnrWaitRespected',
    line: 'seed=1 loss=0% mtu=1024 qps=1 mix=send-rnr bytes=16K at=host-a',
    what: 'a requester that resends before the RNR timer runs out',
  },
  {
    mutant: 'resend-acked',
    rule: 'retransmitFromNakPsn',
    line: 'seed=1 loss=2% mtu=1024 qps=1 mix=mix bytes=32K at=host-a',
    what: 'a requester that resends a PSN the NAK acknowledged',
  },
  {
    mutant: 'second-nak',
    rule: 'oneNakPerGap',
    line: 'seed=1 loss=2% mtu=1024 qps=1 mix=mix bytes=32K at=host-b',
    what: 'a responder that NAKs the same gap twice',
  },
];

test.each(CASES)('$mutant ($what) fails the sweep with $rule', ({ mutant, rule, line }) => {
  const c = parseCase(line);
  const plain = judgeCase(c);
  expect(plain.judgement.analyze.violations[rule] ?? 0).toBe(0);
  const taps: MutantTap[] = [];
  const broken = judgeCase(c, (where) => {
    const tap = new MutantTap(mutant, where);
    taps.push(tap);
    return tap;
  });
  const inserted = taps[0]?.inserted ?? 0;
  expect(inserted).toBeGreaterThan(0);
  expect(broken.judgement.analyze.violations[rule] ?? 0).toBeGreaterThan(0);
  expect(caseFailed(broken)).toBe(true);
  // The mutant only adds frames: everything the plain capture held is still there.
  expect(broken.judgement.frames).toBe(plain.judgement.frames + inserted);
});
