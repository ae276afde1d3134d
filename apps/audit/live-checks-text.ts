/** The text report of `roce audit --live-checks` (the JSON report is the result object itself). */
import type { LiveChecksResult } from './live-check-connection';

const hex = (n: number, w = 0): string => `0x${n.toString(16).padStart(w, '0')}`;

export function liveChecksText(r: LiveChecksResult): string {
  const lines: string[] = [];
  const c = r.connection;
  lines.push(
    c !== null
      ? `live checks (one more connection: the peer's QP ${hex(c.qpn)}, R_Key ${hex(c.rkey, 8)}, told PSN ${c.psn}; this side's QP ${hex(c.localQpn)}):`
      : 'live checks:',
  );
  const i = r.injection;
  if (i !== null) {
    lines.push(`  injection (ReDMArk A1) from ${i.spoofedIp} (${i.spoofedMac}) at PSN ${i.psn}: ${i.outcome}`);
    lines.push(`    ${i.detail}`);
    lines.push(`    expected: ${i.expected}`);
  }
  const w = r.wrongRkey;
  if (w !== null) {
    lines.push(`  wrong R_Key (ReDMArk A2) ${hex(w.rkey, 8)} at PSN ${w.psn}: ${w.outcome}${w.outcome !== 'not-run' ? ` (the peer's QP: ${w.peerQp})` : ''}`);
    lines.push(`    ${w.detail}`);
    lines.push(`    expected: ${w.expected}`);
  }
  if (r.sessionEnd !== null) lines.push(`  the perftest session then ended early: ${r.sessionEnd}`);
  if (r.stopped !== null) lines.push(`  not run: ${r.stopped}`);
  return `${lines.join('\n')}\n`;
}
