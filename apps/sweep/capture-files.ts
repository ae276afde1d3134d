/**
 * Capture files judged by the sweep's two judges (analyze and replay, capture-judgement.ts): the
 * captures the test suite and the rxe lab write. A folder stands for the .pcap and .pcapng files
 * in it and its subfolders.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { judgeCapture, type CaptureJudgement } from './capture-judgement';
import { SweepError, SweepErrorCode } from './sweep-error';

export interface CaptureFileVerdict {
  file: string;
  judgement: CaptureJudgement;
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
  return { file, judgement: judgeCapture(bytes) };
}
