/**
 * The congestion pictures: `roce plot --sim` of a `roce sim --json` result and
 * `roce plot --rate` of a capture with CE marks and CNPs, as SVG (well-formed, one line per flow,
 * one marker per mark and CNP) and as HTML rendered by headless Chromium (the DOM after its script
 * ran, and a screenshot that is not blank). Chromium's part is skipped, with the reason, where it
 * is not installed.
 *
 * @group browser
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { roce } from '../support/cli';
import { xmlProblems } from './well-formed';
import { testUnless } from '../support/skip';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p)) ?? null;
const withChromium = testUnless(CHROMIUM === null ? 'chromium is not installed (apt-get install chromium)' : null);

let dir = '';
let sim: { flows: { name: string }[]; ecnMarked: number; cnpsSent: number };
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-ccplot-'));
  const r = await roce('sim', '--flows', 'a>c,b>c', '--cc', 'dcqcn-paper', '--duration', '4ms', '--json', '--pcap', path.join(dir, 'sim.pcap'));
  expect(r.code).toBe(0);
  fs.writeFileSync(path.join(dir, 'sim.json'), r.out);
  sim = JSON.parse(r.out) as typeof sim;
}, 60_000);
afterAll(() => {
  if (dir !== '') fs.rmSync(dir, { recursive: true, force: true });
});

test('--sim: a rate panel (throughput and RP rate per flow) and a queue panel, well-formed', async () => {
  const out = path.join(dir, 'sim.svg');
  const r = await roce('plot', '--sim', path.join(dir, 'sim.json'), '-o', out);
  expect(r.code).toBe(0);
  const svg = fs.readFileSync(out, 'utf8');
  expect(xmlProblems(svg)).toEqual([]);
  expect(svg.match(/<g class="panel"/g)).toHaveLength(2);
  expect(svg.match(/<path class="ln line"/g)).toHaveLength(2 * sim.flows.length + 1);
  for (const f of sim.flows) {
    expect(svg).toContain(`data-name="${f.name.replace('>', '&gt;')} throughput"`);
    expect(svg).toContain(`data-name="${f.name.replace('>', '&gt;')} RP rate"`);
  }
  expect(svg).toContain(`CNPs ${sim.cnpsSent}`);
});

test('--rate: one panel per flow with its CE marks and CNPs, as the capture has them', async () => {
  const out = path.join(dir, 'rate.svg');
  const r = await roce('plot', '--rate', path.join(dir, 'sim.pcap'), '-o', out);
  expect(r.code).toBe(0);
  const svg = fs.readFileSync(out, 'utf8');
  expect(xmlProblems(svg)).toEqual([]);
  expect(svg.match(/<g class="panel"/g)).toHaveLength(2); // two senders; the receiver sends no requests
  expect(svg.match(/data-kind="CE-marked request"/g)?.length).toBe(sim.ecnMarked);
  const cnps = svg.match(/data-kind="CNP"/g)?.length ?? 0;
  expect(cnps).toBeLessThanOrEqual(sim.cnpsSent);
  expect(cnps).toBeGreaterThanOrEqual(sim.cnpsSent - 2); // one may be on the wire when the run ends
});

test('bad input: a file that is not a roce sim result, a missing -o type, --bin without --rate', async () => {
  fs.writeFileSync(path.join(dir, 'x.json'), '{"flows": 3}');
  const a = await roce('plot', '--sim', path.join(dir, 'x.json'), '-o', path.join(dir, 'x.svg'));
  expect(a.code).toBe(2);
  expect(a.err).toMatch(/is not a `roce sim --json` result: no "flows" array/);
  const b = await roce('plot', '--sim', path.join(dir, 'sim.json'), '-o', path.join(dir, 'x.png'));
  expect(b.code).toBe(2);
  expect(b.err).toMatch(/must end in \.svg or \.html/);
  const c = await roce('plot', path.join(dir, 'sim.pcap'), '--bin', '10', '-o', path.join(dir, 'y.svg'));
  expect(c.code).toBe(2);
  expect(c.err).toMatch(/--bin applies with --rate/);
});

withChromium(
  'HTML in headless Chromium: the panels and markers in the DOM, the readout script, a screenshot that is not blank',
  async () => {
    const page = path.join(dir, 'rate.html');
    const r = await roce('plot', '--rate', path.join(dir, 'sim.pcap'), '-o', page);
    expect(r.code).toBe(0);
    const run = (args: string[]): { stdout: string; status: number | null } => {
      const x = spawnSync(
        CHROMIUM as string,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          `--user-data-dir=${path.join(dir, 'profile')}`,
          ...args,
        ],
        { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 << 20 },
      );
      return { stdout: x.stdout ?? '', status: x.status };
    };
    const dom = run(['--dump-dom', `file://${page}`]);
    expect(dom.status).toBe(0);
    expect(dom.stdout.match(/<g class="panel"/g)).toHaveLength(2);
    expect(dom.stdout.match(/data-kind="CE-marked request"/g)?.length).toBe(sim.ecnMarked);
    expect(dom.stdout).toContain('<div id="readout">');
    const shot = path.join(dir, 'rate.png');
    const s = run(['--window-size=1000,700', `--screenshot=${shot}`, `file://${page}`]);
    expect(s.status).toBe(0);
    const png = fs.readFileSync(shot);
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expect(png.length).toBeGreaterThan(20_000); // a blank page compresses to a few kB
  },
  120_000,
);
