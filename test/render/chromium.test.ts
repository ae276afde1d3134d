/**
 * The ladder HTML as a person sees it: rendered by headless Chromium
 * (Debian's `chromium`), screenshotted and its DOM dumped after the page's
 * script ran. Skipped, with the reason, when chromium is not installed
 * (scripts/setup-system.sh installs it).
 *
 * @group browser
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { buildTimeline } from '../../analysis/timeline';
import { ladderHtml } from '../../analysis/render/ladder-html';
import { testUnless } from '../support/skip';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p)) ?? null;
const it = testUnless(CHROMIUM === null ? 'chromium is not installed (apt-get install chromium)' : null);
const RC = path.resolve(__dirname, '..', '..', 'captures', 'rc-conversation.pcap');

function chromium(args: string[], dir: string): { stdout: string; status: number | null; stderr: string } {
  const r = spawnSync(
    CHROMIUM!,
    ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${path.join(dir, 'profile')}`, ...args],
    { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 << 20 },
  );
  return { stdout: r.stdout ?? '', status: r.status, stderr: r.stderr ?? '' };
}

/** Width and height of a PNG, from its IHDR (no decoder needed). */
function pngInfo(bytes: Buffer): { width: number; height: number } {
  expect(bytes.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
}

describe('ladder HTML in headless Chromium', () => {
  it(
    'renders every arrow with its decoded fields, and the screenshot is not blank',
    () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-ladder-'));
      try {
        const t = buildTimeline(RC);
        const page = path.join(dir, 'ladder.html');
        fs.writeFileSync(page, ladderHtml(t));
        const url = `file://${page}`;
        const dom = chromium(['--dump-dom', url], dir);
        expect(dom.status).toBe(0);
        const pkts = dom.stdout.match(/<g class="pkt [a-z]+" data-frame="\d+"/g) ?? [];
        expect(pkts).toHaveLength(t.items.length);
        expect(dom.stdout).toContain('data-tip="frame: 1\ntime: 0.000000000 s');
        expect(dom.stdout).toContain('PSN: 3086848');
        expect(dom.stdout).toContain('headers: RNR NAK 0.96 ms MSN=');
        expect(dom.stdout).toContain('<div id="tip"');
        const shot = path.join(dir, 'ladder.png');
        const s = chromium(['--window-size=1000,1400', `--screenshot=${shot}`, url], dir);
        expect(s.status).toBe(0);
        const png = fs.readFileSync(shot);
        expect(pngInfo(png)).toEqual({ width: 1000, height: 1400 });
        // A blank 1000x1400 page compresses to a few kB; the ladder's lines and text do not.
        expect(png.length).toBeGreaterThan(50_000);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
