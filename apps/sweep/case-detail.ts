/**
 * One case's verdict in full, for a person reproducing it (`npm run sweep -- --case '...'`): the
 * repro lines, each judge's violations and capture gaps (the analyzer's with their frames and the
 * `roce decode` command that shows them; replay's where the capture point allows none), the three episode counts side by side, and what the judges allowed.
 */
import { REPLAY_ROLES } from './capture-judgement';
import { analyzeViolationCount, captureGapImpossible, replayCaptureGapImpossible, type CaseVerdict } from './case-verdict';
import { EPISODE_TRIGGERS } from './episode-sources';
import { demoCommandLine, formatCase } from './sweep-case';

export function caseDetail(v: CaseVerdict, pcap: string | null): string {
  const out: string[] = [];
  const file = pcap ?? 'case.pcap';
  out.push(`case: ${v.line}`);
  out.push(`repro: npm run sweep -- --case '${formatCase(v.case)}' --pcap ${file}`);
  const demo = demoCommandLine(v.case, file);
  if (demo !== null) out.push(`   or: ${demo}`);
  out.push(`workload: ${v.workloadOk ? 'completed, every byte verified' : `did not complete: ${v.workloadProblem ?? ''}`}`);
  out.push(
    `capture: ${v.judgement.frames} frames${v.judgement.captureError === null ? '' : `, ${v.judgement.captureError}`}${pcap === null ? '' : `, written to ${pcap}`}`,
  );
  const a = v.judgement.analyze;
  out.push(
    `analyze: ${analyzeViolationCount(v.judgement)} violations${
      analyzeViolationCount(v.judgement) > 0
        ? ` (${Object.entries(a.violations)
            .map(([r, n]) => `${r} ${n}`)
            .join(', ')})`
        : ''
    }`,
  );
  for (const x of a.examples) {
    const lo = Math.max(1, Math.min(...x.frames) - 3);
    const hi = Math.max(...x.frames) + 1;
    out.push(`  ${x.rule}, frames ${x.frames.join(', ')}: ${x.message}`);
    out.push(`    roce decode --frames ${lo}-${hi} ${file}`);
  }
  if (v.violationsAtSentPoint !== null) {
    const left = Object.entries(v.violationsAtSentPoint);
    out.push(`  with --capture-point sent: ${left.length === 0 ? 'none' : left.map(([r, n]) => `${r} ${n}`).join(', ')}`);
  }
  if (a.captureGaps > 0) {
    const impossible = captureGapImpossible(v.case.at);
    out.push(
      `  capture gaps: ${a.captureGaps}, ${a.framesImplied} requests implied${impossible === null ? ' (allowed at this capture point)' : `: a finding, none is possible at=${v.case.at} (${impossible})`}`,
    );
    for (const g of a.gapExamples) {
      out.push(`    conversation ${g.conversation}: PSNs ${g.firstPsn}..${g.lastPsn} (${g.how}), shown by frame ${g.frame}`);
      out.push(`    roce decode --frames ${Math.max(1, g.frame - 8)}-${g.frame + 1} ${file}`);
    }
  }
  for (const role of REPLAY_ROLES) {
    const r = v.judgement.replay[role];
    out.push(
      `replay --role ${role}: ${r.conversations} conversations, ${r.violations} violations${
        r.violations > 0
          ? ` (${Object.entries(r.violationKinds)
              .map(([k, n]) => `${k} ${n}`)
              .join(', ')})`
          : ''
      }`,
    );
    for (const d of r.examples)
      out.push(
        `  ${d.kind} PSN ${d.psn ?? '-'}${d.frames.length > 0 ? ` (frames ${d.frames.join(', ')})` : ''}: expected ${d.expected}, got ${d.got} [${d.rule}]`,
      );
    const gaps = r.unverifiable.captureGap ?? 0;
    const impossible = replayCaptureGapImpossible(v.case.at, role);
    if (gaps > 0 && impossible !== null) out.push(`  capture gaps: ${gaps}: a finding, none is possible at=${v.case.at} (${impossible})`);
    const allowed = [...Object.entries(r.policy).map(([k, n]) => `${k} ${n}`), ...Object.entries(r.unverifiable).map(([k, n]) => `${k} ${n} (unverifiable)`)];
    if (allowed.length > 0) out.push(`  allowed: ${allowed.join(', ')}`);
  }
  if (v.judgement.notReplayable.length > 0) out.push(`not replayable: ${v.judgement.notReplayable.join('; ')}`);
  out.push('episodes (counters / demo / analyze; engine rewinds):');
  const e = v.episodes;
  for (const k of EPISODE_TRIGGERS) {
    const differs = v.episodeMismatches.includes(k);
    out.push(
      `  ${k.padEnd(10)} ${String(e.counters[k]).padStart(5)} ${String(e.demo[k]).padStart(5)} ${String(e.analyze[k]).padStart(5)}   ${String(e.rewinds[k]).padStart(5)}${differs ? '   differ' : ''}`,
    );
  }
  return `${out.join('\n')}\n`;
}
