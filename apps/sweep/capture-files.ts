/**
 * Capture files judged by the sweep's two judges (analyze and replay, capture-judgement.ts): the
 * captures the test suite and the rxe lab write. A folder stands for the .pcap and .pcapng files
 * in it and its subfolders.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CapturePoint } from '../../analysis/analyzer';
import { judgeCapture, type CaptureJudgement } from './capture-judgement';
import { SweepError, SweepErrorCode } from './sweep-error';

export interface CaptureFileVerdict {
  file: string;
  /** The capture point it was judged at, and whether replay judged it too (captureFileContext). */
  capturePoint: CapturePoint;
  replayed: boolean;
  /** The rules its record says a host breaks on purpose (CaptureFileContext.breaksRules). */
  breaksRules: string[];
  judgement: CaptureJudgement;
}

/** How a capture file is judged, from the record beside it. */
export interface CaptureFileContext {
  capturePoint: CapturePoint;
  /** False when frames were dropped after the capture point: the answers to them are missing, so replay has nothing to hold the stack to. */
  replay: boolean;
  /** Why, when the record changes the defaults. */
  why: string | null;
  /**
   * The go-back-N rules a host of the capture breaks on purpose (the record's `breaksRules`: e.g.
   * `roce audit --live-checks`, whose QP leaves a PSN for an injected frame to fill): the analyzer
   * must still find those breaches, and only those.
   */
  breaksRules: string[];
}

/**
 * The record beside a capture file (`NAME.json` for `NAME.pcap`, as the rxe lab writes one per boot)
 * says where it was taken: `"guestLoss": N` (N > 0: the lab's guest dropped frames after the host's
 * capture point) or `"capturePoint": "sent"` make it a capture of frames as they were sent, judged
 * by `roce analyze --capture-point sent` and not replayed. No record, or neither field: the capture
 * point is unknown, as `roce analyze` assumes, and replay judges it.
 */
export function captureFileContext(file: string): CaptureFileContext {
  const record = file.replace(CAPTURE_FILE, '.json');
  const plain: CaptureFileContext = { capturePoint: 'unknown', replay: true, why: null, breaksRules: [] };
  if (record === file || !fs.existsSync(record)) return plain;
  let j: { guestLoss?: unknown; capturePoint?: unknown; breaksRules?: unknown };
  try {
    j = JSON.parse(fs.readFileSync(record, 'utf8')) as typeof j;
  } catch (e) {
    throw new SweepError(`${record}: not a JSON capture record (${(e as Error).message})`, SweepErrorCode.USAGE);
  }
  const breaksRules = Array.isArray(j.breaksRules) ? j.breaksRules.filter((r): r is string => typeof r === 'string') : [];
  if (typeof j.guestLoss === 'number' && j.guestLoss > 0)
    return {
      capturePoint: 'sent',
      replay: false,
      why: `${path.basename(record)}: the guest dropped frames after the capture point (guestLoss ${j.guestLoss})`,
      breaksRules,
    };
  if (j.capturePoint === 'sent')
    return { capturePoint: 'sent', replay: false, why: `${path.basename(record)}: frames dropped after the capture point`, breaksRules };
  return { ...plain, breaksRules };
}

const CAPTURE_FILE = /\.(pcap|pcapng|cap)$/i;

/** The capture files `names` stand for: files as given, folders walked (sorted, so runs compare). */
export function captureFiles(names: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && CAPTURE_FILE.test(e.name)) out.push(p);
    }
  };
  for (const n of names) {
    let st: fs.Stats;
    try {
      st = fs.statSync(n);
    } catch (e) {
      throw new SweepError(`--capture ${n}: ${(e as NodeJS.ErrnoException).code ?? 'cannot read it'}`, SweepErrorCode.USAGE);
    }
    if (st.isDirectory()) walk(n);
    else out.push(n);
  }
  return out;
}

export function judgeCaptureFile(file: string): CaptureFileVerdict {
  let bytes: Uint8Array;
  try {
    bytes = fs.readFileSync(file);
  } catch (e) {
    throw new SweepError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, SweepErrorCode.USAGE);
  }
  const c = captureFileContext(file);
  return {
    file,
    capturePoint: c.capturePoint,
    replayed: c.replay,
    breaksRules: c.breaksRules,
    judgement: judgeCapture(bytes, { capturePoint: c.capturePoint, replay: c.replay }),
  };
}

/**
 * What makes a judged file a finding, as test/sweep/bundled-captures.test.ts holds it: a rule
 * violation its record does not name, a rule its record names that the analyzer did not find (the
 * host broke it on purpose, so missing it is a misreading), or a replay violation. Empty: clean.
 */
export function captureFileFindings(f: CaptureFileVerdict): string[] {
  const out: string[] = [];
  const found = f.judgement.analyze.violations as Record<string, number | undefined>;
  for (const [rule, n] of Object.entries(found)) if ((n ?? 0) > 0 && !f.breaksRules.includes(rule)) out.push(`analyze: ${rule} ${n}`);
  for (const rule of f.breaksRules) if ((found[rule] ?? 0) === 0) out.push(`analyze: ${rule} not found, though the record says a host breaks it`);
  if (f.judgement.replay.responder.violations > 0) out.push(`replay --role responder: ${f.judgement.replay.responder.violations}`);
  if (f.judgement.replay.requester.violations > 0) out.push(`replay --role requester: ${f.judgement.replay.requester.violations}`);
  return out;
}
