/**
 * `roce analyze --fail-on RULE[,RULE...]|any`: exit 1 when the capture shows a listed
 * go-back-N rule violation or a frame with a listed flag, so a CI pipeline can assert on captures.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { memoryOutput } from '../../cli/output';
import { analyzeCommand } from '../../cli/analyze-command';
import { UsageError } from '../../cli/args';
import { parseFailOn } from '../../analysis/fail-on';
import { RuleId } from '../../analysis/types';
import { Op, Syn, ack, capture, req } from './frames';

const send = (us: number, psn: number) => req(us, Op.SEND_ONLY, psn, { len: 8 });
let dir: string;
let clean: string;
let skipped: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-fail-on-'));
  // A clean NAK recovery: flags (nakSeqErr, retransmission) but no violation.
  clean = path.join(dir, 'clean.pcap');
  fs.writeFileSync(clean, capture([send(0, 10), send(1, 11), send(2, 12), ack(5, 10, Syn.NAK_SEQ), send(7, 10), send(8, 11), send(9, 12), ack(12, 12)]));
  // The resend after the NAK skips the NAK'd PSN: a retransmitFromNakPsn violation.
  skipped = path.join(dir, 'skipped.pcap');
  fs.writeFileSync(
    skipped,
    capture([
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
    ]),
  );
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function analyze(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const o = memoryOutput();
  const code = await analyzeCommand(argv, o);
  return { code, out: o.out, err: o.err };
}

test('without --fail-on a violation does not change the exit status', async () => {
  expect((await analyze(skipped)).code).toBe(0);
});

test('--fail-on any: a capture with a rule violation exits 1 and names it; a clean one exits 0', async () => {
  const bad = await analyze('--fail-on', 'any', skipped);
  expect(bad.code).toBe(1);
  expect(bad.err).toMatch(/--fail-on: rule retransmitFromNakPsn: 1 violation\n/);
  const good = await analyze('--fail-on', 'any', clean);
  expect(good.code).toBe(0);
  expect(good.err).toBe('');
});

test('a named rule only fails on that rule; a named flag fails on frames with it', async () => {
  expect((await analyze('--fail-on', RuleId.ONE_NAK_PER_GAP, skipped)).code).toBe(0);
  expect((await analyze('--fail-on', `${RuleId.ONE_NAK_PER_GAP},${RuleId.RETRANSMIT_FROM_NAK_PSN}`, skipped)).code).toBe(1);
  const flag = await analyze('--fail-on', 'nakSeqErr', clean);
  expect(flag.code).toBe(1);
  expect(flag.err).toMatch(/--fail-on: flag nakSeqErr: 1 frame\n/);
  expect((await analyze('--fail-on', 'rnrNak,icrcBad', clean)).code).toBe(0);
});

test('--json carries the findings; the document is printed either way', async () => {
  const r = await analyze('--json', '--fail-on', 'any,retransmission', skipped);
  expect(r.code).toBe(1);
  const doc = JSON.parse(r.out) as { failOn: { names: string[]; findings: string[] }; violations: unknown[] };
  expect(doc.failOn.findings).toEqual(['rule retransmitFromNakPsn: 1 violation', expect.stringMatching(/^flag retransmission: \d+ frames?$/)]);
  expect(doc.violations).toHaveLength(1);
});

test('an unknown name is a usage error listing the known ones', async () => {
  await expect(analyze('--fail-on', 'anything', clean)).rejects.toThrow(UsageError);
  await expect(analyze('--fail-on', 'oneNakPerGap,bogus', clean)).rejects.toThrow(/unknown rule or flag "bogus"; known: any, oneNakPerGap/);
  expect(parseFailOn(['any']).failOn.rules.size).toBe(Object.keys(RuleId).length);
});
