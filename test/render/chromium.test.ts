/**
 * The ladder HTML as a person sees it: rendered by headless Chromium
 * (Debian's `chromium`), screenshotted and its DOM dumped after the page's
 * script ran; the browser's own text boxes (getBBox) held clear of every
 * arrow, and no wider than the renderer's estimate. Skipped, with the reason,
 * when chromium is not installed (scripts/setup-system.sh installs it).
 *
 * @group browser
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { buildTimeline } from '../../analysis/timeline';
import { ladderHtml } from '../../analysis/render/ladder-html';
import { TEXT_FONTS, textBox } from '../../analysis/render/ladder-svg';
import { testUnless } from '../support/skip';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p)) ?? null;
const it = testUnless(CHROMIUM === null ? 'chromium is not installed (apt-get install chromium)' : null);
const RC = path.resolve(__dirname, '..', '..', 'captures', 'rc-conversation.pcap');

function chromium(args: string[], dir: string): { stdout: string; status: number | null; stderr: string } {
  const r = spawnSync(
    CHROMIUM!,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--user-data-dir=${path.join(dir, 'profile')}`,
      ...args,
    ],
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
  it('renders every arrow with its decoded fields, and the screenshot is not blank', () => {
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
  }, 120_000);

  it('as laid out by the browser, no text box meets an arrow, and none is wider than the renderer estimated', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-ladder-'));
    try {
      const t = buildTimeline(RC);
      // A script run after the page's: each text's box from the browser, checked against each arrow's line (sampled every px).
      const probe = `<script>
(function(){
  var lines=[].slice.call(document.querySelectorAll('line.arrow')).map(function(l){return [+l.getAttribute('x1'),+l.getAttribute('y1'),+l.getAttribute('x2'),+l.getAttribute('y2')];});
  var out=[];
  var texts=document.querySelectorAll('svg text');
  for(var i=0;i<texts.length;i++){
    var b=texts[i].getBBox();
    var hit=0;
    for(var j=0;j<lines.length;j++){var L=lines[j];var n=Math.ceil(Math.abs(L[2]-L[0]));for(var k=0;k<=n;k++){var x=L[0]+(L[2]-L[0])*k/n,y=L[1]+(L[3]-L[1])*k/n;if(x>b.x&&x<b.x+b.width&&y>b.y&&y<b.y+b.height){hit=1;}}}
    out.push(texts[i].getAttribute('class')+'|'+b.width.toFixed(1)+'|'+hit+'|'+texts[i].textContent);
  }
  var pre=document.createElement('pre');pre.id='probe';pre.textContent=out.join('\\n');document.body.appendChild(pre);
})();
</script>`;
      const page = path.join(dir, 'ladder.html');
      fs.writeFileSync(page, ladderHtml(t).replace('</body>', `${probe}\n</body>`));
      const dom = chromium(['--dump-dom', `file://${page}`], dir);
      expect(dom.status).toBe(0);
      const rows = (/<pre id="probe">([\s\S]*?)<\/pre>/.exec(dom.stdout)?.[1] ?? '').split('\n').map((r) => r.split('|'));
      expect(rows.length).toBeGreaterThan(100);
      const unescapeHtml = (s: string): string => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
      const problems: string[] = [];
      for (const [cls, width, hit, text] of rows) {
        if (hit !== '0') problems.push(`${cls} "${text}" meets an arrow`);
        const font = TEXT_FONTS[cls ?? ''];
        if (font === undefined) {
          problems.push(`${cls} "${text}": no font in TEXT_FONTS`);
          continue;
        }
        const est = textBox(unescapeHtml(text ?? ''), 0, 0, 'start', font.px, font.family);
        if (Number(width) > est.x1 - est.x0 + 0.5) problems.push(`${cls} "${text}" is ${width} px wide, estimated ${(est.x1 - est.x0).toFixed(1)}`);
      }
      expect(problems).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
