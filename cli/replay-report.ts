/**
 * `roce replay`'s report, as text and as one JSON document: first where the stack's QP went to the
 * error state (every difference after that follows from it), then each conversation with its
 * differences, then the verdict. Frames that need a feature this stack lacks are `unsupported`:
 * they are named with the feature, never counted as violations, and a replay whose only
 * shortcoming they are passes ("PASS with 2 frames unsupported (FLUSH, ATOMIC WRITE)").
 */
import type { QpErrorReport, ReplaySummary } from '../apps/replay/differences';
import { DiffClass } from '../apps/replay/differences';
import type { NotReplayable } from '../apps/replay/replayable';

export interface ReplayTotals {
  framesIn: number;
  framesOut: number;
  matched: number;
  expected: number;
  violations: number;
  unsupported: number;
  unsupportedFeatures: string[];
}

export function replayTotals(results: readonly ReplaySummary[]): ReplayTotals {
  return {
    framesIn: results.reduce((s, r) => s + r.framesIn, 0),
    framesOut: results.reduce((s, r) => s + r.framesOut, 0),
    matched: results.reduce((s, r) => s + r.matched, 0),
    expected: results.reduce((s, r) => s + r.expected, 0),
    violations: results.reduce((s, r) => s + r.violations, 0),
    unsupported: results.reduce((s, r) => s + r.unsupported, 0),
    unsupportedFeatures: [...new Set(results.flatMap((r) => r.unsupportedFeatures))],
  };
}

const hex = (n: number): string => `0x${n.toString(16)}`;

/** One line: which QP went to ERR, at which captured frame, with what completion and why. */
export function qpErrorLine(role: ReplaySummary['role'], e: QpErrorReport): string {
  const at = e.frame === null ? 'before the first captured frame it was given' : `at frame ${e.frame}${e.psn !== null ? ` (PSN ${e.psn})` : ''}`;
  const wc =
    e.status !== null
      ? `${e.status}${e.opcode !== null ? ` on ${e.opcode}` : ''}`
      : `no error completion (no ${role === 'responder' ? 'receive' : 'send'} work request in use)`;
  const peer = role === 'responder' ? 'the captured responder sent the same kind of NAK there' : 'the capture holds the NAK that ended it';
  const unexpected = role === 'responder' ? 'the captured responder went on' : 'the captured answer there ends no QP';
  return `QP ${hex(e.qpn)} (${role}) went to the error state ${at}: ${wc}: ${e.reason}; ${e.captured ? peer : unexpected}`;
}

/** The verdict line. */
export function verdictLine(t: ReplayTotals, notReplayable: number): string {
  const unsupported =
    t.unsupported > 0 ? ` with ${t.unsupported} frame${t.unsupported === 1 ? '' : 's'} unsupported (${t.unsupportedFeatures.join(', ')})` : '';
  const verdict = t.violations === 0 ? `PASS${unsupported}` : 'FAIL';
  const tail = t.violations > 0 && t.unsupported > 0 ? `, ${t.unsupported} frames unsupported (${t.unsupportedFeatures.join(', ')})` : '';
  return `${verdict}: ${t.matched} of ${t.expected} matched, ${t.violations} violations${tail}${notReplayable > 0 ? `, ${notReplayable} conversations not replayable` : ''}`;
}

export function replayReportText(role: ReplaySummary['role'], results: readonly ReplaySummary[], notReplayable: readonly NotReplayable[]): string {
  const lines: string[] = [];
  for (const r of results) if (r.qpError !== null) lines.push(qpErrorLine(role, r.qpError));
  for (const r of results) {
    const unsupported = r.differences.filter((d) => d.class === DiffClass.UNSUPPORTED).length;
    const other = r.differences.length - r.violations - unsupported;
    lines.push(
      `${role} replay of QP ${hex(r.requesterQpn)} -> ${hex(r.responderQpn)} (path MTU ${r.pathMtu}): ${r.framesIn} frames in, ${r.framesOut} out, ${r.matched} of ${r.expected} captured ${role === 'responder' ? 'responses' : 'requests'} matched, ${r.violations} violations, ${r.unsupported > 0 ? `${r.unsupported} frames unsupported, ` : ''}${other} other differences`,
    );
    for (const d of r.differences) {
      lines.push(
        `  ${d.class.padEnd(12)} ${d.kind.padEnd(20)} PSN ${d.psn ?? '-'}${d.frames.length ? ` (frame ${d.frames.join(', ')})` : ''}: expected ${d.expected}, got ${d.got} [${d.rule}]`,
      );
    }
  }
  lines.push(verdictLine(replayTotals(results), notReplayable.length));
  return `${lines.join('\n')}\n`;
}

/** The JSON document (`captureError` as describeCaptureError words it, or null). */
export function replayReportJson(
  file: string,
  role: ReplaySummary['role'],
  results: readonly ReplaySummary[],
  notReplayable: readonly NotReplayable[],
  captureError: string | null,
): string {
  const total = replayTotals(results);
  const qpErrors = results.flatMap((r) => (r.qpError === null ? [] : [{ requesterQpn: r.requesterQpn, responderQpn: r.responderQpn, ...r.qpError }]));
  return `${JSON.stringify({
    file,
    role,
    ok: total.violations === 0 && captureError === null,
    qpErrors,
    ...total,
    captureError,
    differences: results.flatMap((r) => r.differences),
    conversations: results,
    notReplayable,
  })}\n`;
}
