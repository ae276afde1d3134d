/**
 * A sweep case's one-line form reads back to the same case, bad lines are typed errors that say
 * what is wrong, the generator gives the same case for the same number, and a case the demo can
 * express is the demo's run: `roce demo` with its command line writes the very capture the sweep
 * judged, byte for byte.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { caseAt, casesAt } from '../../apps/sweep/case-generator';
import { runCase } from '../../apps/sweep/case-run';
import { demoCommandLine, formatCase, parseCase, reproLine } from '../../apps/sweep/sweep-case';
import { SweepError, SweepErrorCode } from '../../apps/sweep/sweep-error';
import { roce } from '../support/cli';

test('every generated case reads back from its one-line form', () => {
  for (const c of casesAt(1, 0, 2000)) expect(parseCase(formatCase(c))).toEqual(c);
});

test('case i of a sweep seed is always the same case, and another seed draws others', () => {
  expect(caseAt(1, 37)).toEqual(caseAt(1, 37));
  expect(casesAt(1, 30, 10)).toEqual(casesAt(1, 0, 40).slice(30));
  expect(casesAt(2, 0, 10)).not.toEqual(casesAt(1, 0, 10));
});

test('a line names the keys it sets; the rest are the defaults', () => {
  expect(parseCase('seed=9 loss=0.5% burst=1%x4 reorder=5%/3 dup=1% mtu=256 qps=16 mix=read bytes=64K at=host-b')).toEqual({
    seed: 9,
    loss: 0.005,
    burst: { enter: 0.01, meanLength: 4 },
    reorder: { probability: 0.05, window: 3 },
    duplicate: 0.01,
    mtu: 256,
    qps: 16,
    mix: 'read',
    bytes: 64 * 1024,
    at: 'host-b',
  });
  expect(parseCase('seed=3').seed).toBe(3);
});

test.each([
  ['loss=12', /loss must be a share 0\.\.1/],
  ['mtu=1000', /mtu must be one of 256, 512, 1024, 2048, 4096/],
  ['qps=17', /qps must be an integer 1\.\.16/],
  ['mix=write', /mix must be one of mix, send-rnr, read, atomic/],
  ['burst=1%', /burst must be off or ENTERxMEANLENGTH/],
  ['colour=red', /unknown case key "colour"/],
  ['seed=1 seed=2', /names seed twice/],
  ['seed', /a case is key=value words/],
])('%s is a SweepError: %s', (line, message) => {
  let err: unknown = null;
  try {
    parseCase(line);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(SweepError);
  expect((err as SweepError).code).toBe(SweepErrorCode.CASE);
  expect((err as SweepError).message).toMatch(message);
});

test('only the demo’s own setting has a roce demo command line', () => {
  const c = parseCase('seed=5 loss=2% mtu=512 qps=3 mix=mix bytes=48K at=host-a');
  expect(demoCommandLine(c)).toBe('roce demo --seed 5 --loss 2% --mtu 512 --qps 3 --bytes 48K --pcap case.pcap');
  expect(reproLine(c)).toBe(
    "npm run sweep -- --case 'seed=5 loss=2% burst=off reorder=off dup=0% mtu=512 qps=3 mix=mix bytes=48K at=host-a'   # = roce demo --seed 5 --loss 2% --mtu 512 --qps 3 --bytes 48K --pcap case.pcap",
  );
  for (const other of ['mix=read', 'burst=1%x2', 'reorder=1%/2', 'dup=1%', 'at=sent', 'at=host-b'])
    expect(demoCommandLine({ ...c, ...parseCase(`seed=5 loss=2% mtu=512 qps=3 bytes=48K ${other}`) })).toBeNull();
});

test('roce demo with a case’s command line writes the capture the sweep judged, byte for byte', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-sweep-'));
  try {
    for (const line of ['seed=11 loss=5% mtu=1024 qps=2 mix=mix bytes=32K at=host-a', 'seed=4 loss=0% mtu=4096 qps=1 mix=mix bytes=16K at=host-a']) {
      const c = parseCase(line);
      const pcap = path.join(dir, 'case.pcap');
      const argv = (demoCommandLine(c, pcap) as string).split(' ').slice(2);
      const r = await roce('demo', ...argv, '--json');
      expect(r.code).toBe(0);
      expect(Buffer.from(fs.readFileSync(pcap)).equals(Buffer.from(runCase(c).capture))).toBe(true);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
