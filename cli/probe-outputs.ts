/**
 * `roce probe --pcap FILE` and `--html FILE`, for a run on the in-memory link and a live one alike:
 * the frames the probe driver saw (apps/probe/probe-capture.ts) written as a capture at the DUT's
 * NIC, and the report as one page with a ladder per figure.
 */
import type { Output } from './output';
import { outputFileWritable, writeOutputFile } from './output-file';
import type { ProbeCapture } from '../apps/probe/probe-capture';
import { probeHtml } from '../apps/probe/probe-html';
import type { ProbeResult } from '../apps/probe/probe-result';
import type { ProbeScenario } from '../apps/probe/scenario';

/** The files asked for (undefined: not asked). */
export interface ProbeOutputPaths {
  pcap: string | undefined;
  html: string | undefined;
}

/** What --pcap wrote: the file, its frames, and the capture point to analyse it with. */
export interface CaptureWritten {
  file: string;
  frames: number;
  capturePoint: string;
}

/** False (after saying why) when a file asked for cannot be written: checked before the run, so a long run does not end in a write error. */
export function probeOutputsWritable(paths: ProbeOutputPaths, out: Output): boolean {
  if (paths.pcap !== undefined && !outputFileWritable('probe', paths.pcap, out)) return false;
  return paths.html === undefined || outputFileWritable('probe', paths.html, out);
}

/** Writes the files asked for; 'failed' (after saying why) when one could not be written. */
export function writeProbeOutputs(
  paths: ProbeOutputPaths,
  run: { result: ProbeResult; scenario: ProbeScenario; capture: ProbeCapture; source: string },
  out: Output,
): CaptureWritten | null | 'failed' {
  let written: CaptureWritten | null = null;
  if (paths.pcap !== undefined) {
    if (!writeOutputFile('probe', paths.pcap, run.capture.pcap(), out)) return 'failed';
    written = { file: paths.pcap, frames: run.capture.frames.length, capturePoint: `host:${run.capture.dutAddress() ?? '?'}` };
  }
  if (paths.html !== undefined && !writeOutputFile('probe', paths.html, probeHtml(run), out)) return 'failed';
  return written;
}

/** The line that says where the capture is and how to analyse it. */
export function captureLine(w: CaptureWritten): string {
  return `\ncapture: ${w.file}, ${w.frames} frames as the DUT's NIC sent and received them (times: the figures'); roce analyze --capture-point ${w.capturePoint} ${w.file}\n`;
}
