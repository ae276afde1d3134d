/**
 * The PSN plot as one self-contained HTML page: the title once, as the page's
 * heading, the SVG inline under it, and a readout of the point or mark under
 * the pointer (its <title>: frame, PSN, time). No external files or scripts.
 */
import type { PsnSeries } from '../psn-series';
import { xmlEscape } from './ladder-svg';
import { plotSvg } from './plot-svg';

/** The page; the SVG is plotSvg's without its own title. */
export function plotHtml(series: readonly PsnSeries[], title = 'PSN over time'): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${xmlEscape(title)}</title>
<style>body{font-family:sans-serif;margin:16px;color:#222;background:#fafafa}h1{font-size:18px;margin:0 0 8px}#readout{position:fixed;right:8px;top:8px;background:#fffbe6;border:1px solid #ccc;padding:4px 8px;min-width:14em;font:12px monospace}</style>
</head>
<body>
<h1>${xmlEscape(title)}</h1>
<div id="readout">hover a point or a mark</div>
${plotSvg(series, title, { header: false })}<script>
(function(){
  var els=document.querySelectorAll('.panel line, .panel circle, .panel path, .panel rect');
  for(var i=0;i<els.length;i++){
    var t=els[i].querySelector('title');
    if(t===null)continue;
    els[i].addEventListener('mouseenter',function(){document.getElementById('readout').textContent=this.querySelector('title').textContent;});
  }
})();
</script>
</body>
</html>
`;
}
