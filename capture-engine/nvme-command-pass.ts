/**
 * `roce analyze`'s NVMe-oF commands: a pass over a capture that runs the NVMe-oF decoder
 * (ulp/nvme-rdma/nvme-decoder.ts) on its frames in order and hands what it makes of each to the
 * command analysis (ulp/nvme-rdma/command-analysis.ts). Only frames that can belong to an NVMe-oF
 * conversation are decoded in full (to the GSI and to queue pairs the decoder has made its own),
 * as `roce decode`'s pass does (ulp-decoding.ts).
 */
import type { CaptureRecord } from '../packets/pcap';
import { decodeAt } from '../packets/decode';
import type { WireError } from '../packets/errors';
import { forEachRecord } from '../analysis/capture-stream';
import { NvmeDecoder, type NvmeRules } from '../ulp/nvme-rdma/nvme-decoder';
import { type NvmeAnalysis, NvmeCommandAnalysis } from '../ulp/nvme-rdma/command-analysis';
import { quickDestQp } from './ulp-decoding';

export interface NvmeCommandPass {
  analysis: NvmeAnalysis;
  captureError: WireError | null;
}

/** The NVMe-oF commands of the capture at `source` (a path, read in pieces) or held whole. */
export function nvmeCommandsOf(source: string | Uint8Array, rules: NvmeRules, rocePort: number): NvmeCommandPass {
  const decoder = new NvmeDecoder(rules);
  const commands = new NvmeCommandAnalysis();
  let first: bigint | null = null;
  const take = (rec: CaptureRecord): void => {
    first ??= rec.timestampNs;
    const view = new DataView(rec.data.buffer, rec.data.byteOffset, rec.data.byteLength);
    const qp = quickDestQp(view, 0, rec.data.byteLength, rec.linkType, rocePort);
    if (qp >= 0 && !decoder.wants(qp)) return;
    // ICRCs are not checked: the decoder takes a frame with a bad one, as roce decode does.
    const d = decodeAt(view, rec.data, 0, rec.data.byteLength, rec.linkType, { rocePort, verifyIcrc: false }, rec.origLen);
    if (!d.roce || d.bth === null) return;
    const f = decoder.observe(d, view, 0);
    if (f === null) return;
    commands.take(f, {
      frame: rec.index,
      timeNs: Number(rec.timestampNs - first),
      opcode: d.bth.opcode,
      psn: d.bth.psn,
      invalidatedKey: d.ieth?.rkey ?? null,
      rkey: d.reth?.rkey ?? null,
    });
  };
  const captureError = forEachRecord(source, take);
  return { analysis: commands.result(), captureError };
}
