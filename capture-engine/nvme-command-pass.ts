/**
 * `roce analyze`'s NVMe-oF commands: a pass over a capture that runs the NVMe-oF decoder
 * (ulp/nvme-rdma/nvme-decoder.ts) on its frames in order and hands what it makes of each to the
 * command analysis (ulp/nvme-rdma/command-analysis.ts). Only frames that can belong to an NVMe-oF
 * conversation are decoded in full (to the GSI and to queue pairs the decoder has made its own),
 * as `roce decode`'s pass does (ulp-decoding.ts).
 */
import type { WireError } from '../packets/errors';
import { NvmeDecoder, type NvmeRules } from '../ulp/nvme-rdma/nvme-decoder';
import { type NvmeAnalysis, NvmeCommandAnalysis } from '../ulp/nvme-rdma/command-analysis';
import { ulpFramesOf } from './ulp-report-pass';

export interface NvmeCommandPass {
  analysis: NvmeAnalysis;
  captureError: WireError | null;
}

/** The NVMe-oF commands of the capture at `source` (a path, read in pieces) or held whole. */
export function nvmeCommandsOf(source: string | Uint8Array, rules: NvmeRules, rocePort: number): NvmeCommandPass {
  const commands = new NvmeCommandAnalysis();
  const captureError = ulpFramesOf(source, new NvmeDecoder(rules), rocePort, (f, at, d) =>
    commands.take(f, { ...at, invalidatedKey: d.ieth?.rkey ?? null, rkey: d.reth?.rkey ?? null }),
  );
  return { analysis: commands.result(), captureError };
}
