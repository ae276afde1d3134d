/**
 * The ladder diagram as one self-contained HTML page: the SVG inline, a
 * legend, and a few lines of inline script that show a packet's decoded
 * fields (its `data-tip`) when the pointer is over its arrow. No external
 * files, fonts or scripts: it works offline and from file://.
 */
import type { Timeline } from '../timeline';
import { ladderSvg, xmlEscape } from './ladder-svg';
import { windowOthersText, windowShownText } from './ladder-window';

const CSS = `
body{font-family:sans-serif;margin:16px;color:#222;background:#fafafa}
h1{font-size:18px;margin:0 0 4px}
p.sub{margin:0 0 10px;color:#555;font-size:13px}
p.win{margin:0 0 4px;font-size:14px}
#legend span{display:inline-block;margin-right:14px;font-size:12px}
#legend i{display:inline-block;width:22px;height:3px;vertical-align:middle;margin-right:4px}
#tip{position:fixed;display:none;pointer-events:none;background:#fffff0;border:1px solid #888;border-radius:4px;padding:6px 8px;font:12px monospace;white-space:pre;box-shadow:2px 2px 6px rgba(0,0,0,.25);z-index:10}
.ladder .pkt{cursor:crosshair}
`;

const SCRIPT = `
(function(){
  var tip=document.getElementById('tip');
  var pkts=document.querySelectorAll('.pkt');
  for(var i=0;i<pkts.length;i++){
    pkts[i].addEventListener('mousemove',function(ev){
      tip.textContent=this.getAttribute('data-tip');
      tip.style.display='block';
      tip.style.left=(ev.clientX+14)+'px';
      tip.style.top=(ev.clientY+14)+'px';
    });
    pkts[i].addEventListener('mouseleave',function(){tip.style.display='none';});
  }
})();
`;

const LEGEND: readonly [string, string][] = [
  ['request', '#1f5fbf'],
  ['response / ACK', '#2e8b57'],
  ['retransmission', '#d62728'],
  ['NAK', '#ff7f0e'],
  ['RNR NAK (shaded: RNR wait)', '#9467bd'],
  ['CNP', '#8c564b'],
  ['bad ICRC / malformed', '#000'],
];

/** The page; `title` defaults to the conversation. The title and the window's description are the page's, once, above the SVG. */
export function ladderHtml(t: Timeline, title = ''): string {
  const head = title || `RoCE conversation #${t.conversation} (${t.type})`;
  const svg = ladderSvg(t, { title: head, header: false });
  const others = windowOthersText(t);
  const legend = LEGEND.map(([name, c]) => `<span><i style="background:${c}"></i>${xmlEscape(name)}</span>`).join('');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${xmlEscape(head)}</title>
<style>${CSS}</style>
</head>
<body>
<h1>${xmlEscape(head)}</h1>
<p class="win">${xmlEscape(windowShownText(t))}</p>
${others === '' ? '' : `<p class="sub">${xmlEscape(others)}</p>\n`}<p class="sub">${t.items.length} packet(s); each arrow's frame number is beside its start; a red cross marks a transmission that was lost and resent. Hover an arrow for its decoded fields.</p>
<div id="legend">${legend}</div>
${svg}<div id="tip"></div>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
