/** `roce demo`: the main job. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { readCapture } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-demo-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function demo(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const o = memoryOutput();
  const code = await run(['demo', ...argv], o);
  return { code, out: o.out, err: o.err };
}

test('default-like run: every byte verified, trace, summary and a valid capture', async () => {
  const pcap = path.join(dir, 'demo.pcap');
  const r = await demo('--bytes', '256K', '--pcap', pcap);
  expect(r.code).toBe(0);
  expect(r.out).toMatch(/Result: OK: 262144 of 262144 bytes verified/);
  expect(r.out).toMatch(/Interesting moments/);
  expect(r.out).toMatch(/go-back-N from PSN \d+/);
  expect(r.out).toMatch(/Per QP pair/);
  const cap = readCapture(fs.readFileSync(pcap));
  expect(cap.error).toBeNull();
  expect(cap.records.length).toBeGreaterThan(100);
  for (const rec of cap.records) {
    const d = decodeFrame(rec.data);
    expect(d.roce && d.error === null && d.icrcOk).toBe(true);
  }
});

test('--json summary has the documented keys and agrees with itself', async () => {
  const r = await demo('--json', '--bytes', '128K', '--loss', '2%', '--seed', '9', '--qps', '2', '--mtu', '4096', '--pcap', '-');
  expect(r.code).toBe(0);
  const s = JSON.parse(r.out) as Record<string, unknown>;
  for (const k of ['ok', 'bytesVerified', 'completions', 'completionErrors', 'retransmittedPackets', 'seqErrNaks', 'rnrNaks', 'timeouts', 'pcap'])
    expect(s).toHaveProperty(k);
  expect(s['ok']).toBe(true);
  expect(s['bytesVerified']).toBe(128 * 1024);
  expect(s['completionErrors']).toBe(0);
  expect(s['pcap']).toBeNull();
  expect(s['retransmittedPackets'] as number).toBeGreaterThan(0);
});

test('the same seed gives the same run', async () => {
  const a = JSON.parse((await demo('--json', '--bytes', '64K', '--seed', '4', '--pcap', '-')).out) as Record<string, unknown>;
  const b = JSON.parse((await demo('--json', '--bytes', '64K', '--seed', '4', '--pcap', '-')).out) as Record<string, unknown>;
  delete a['wallTimeMs'];
  delete b['wallTimeMs'];
  expect(a).toEqual(b);
});

test('a link that loses everything ends in RETRY_EXC_ERR, exit 1, quickly', async () => {
  const t0 = Date.now();
  const r = await demo('--loss', '100%', '--bytes', '16K', '--pcap', '-', '--trace', '3');
  expect(r.code).toBe(1);
  expect(r.err).toMatch(/FAILED: .*RETRY_EXC_ERR \(transport retry counter exceeded/);
  expect(Date.now() - t0).toBeLessThan(10_000);
});

test.each([
  [['--loss', '200%'], /--loss must be/],
  [['--mtu', '1000'], /--mtu must be 256, 512, 1024, 2048 or 4096/],
  [['--bytes', 'lots'], /--bytes must be a number/],
  [['--qps', '0'], /--qps must be an integer from 1/],
  [['extra'], /takes no positional arguments/],
])('bad flag %j', async (argv, msg) => {
  const r = await demo(...argv);
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});

test('a --pcap that cannot be written is one line naming it, exit 2, before the run and without creating folders', async () => {
  const missing = path.join(dir, 'no-such-folder', 'x.pcap');
  const r = await demo('--bytes', '16K', '--pcap', missing);
  expect({ code: r.code, err: r.err, out: r.out }).toEqual({ code: 2, err: `roce demo: cannot write ${missing}: no such directory\n`, out: '' });
  expect(fs.existsSync(path.dirname(missing))).toBe(false);
  const r2 = await demo('--bytes', '16K', '--pcap', dir);
  expect({ code: r2.code, err: r2.err }).toEqual({ code: 2, err: `roce demo: cannot write ${dir}: is a directory\n` });
});
