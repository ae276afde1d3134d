/**
 * `roce analyze`'s RPC-over-RDMA calls: a pass over a capture that runs the RPC-over-RDMA decoder
 * (ulp/rpc-rdma/rpcrdma-decoder.ts) on its frames in order and hands what it makes of each to the
 * call analysis (ulp/rpc-rdma/rpc-call-analysis.ts). The decoder claims QPs by a SEND's shape too,
 * so every RoCE frame is decoded.
 */
import type { CaptureRecord } from '../packets/pcap';
import { decodeAt } from '../packets/decode';
import type { WireError } from '../packets/errors';
import { forEachRecord } from '../analysis/capture-stream';
import type { UlpRules } from '../ulp/ulp-decoder';
import { RpcRdmaDecoder } from '../ulp/rpc-rdma/rpcrdma-decoder';
import { type RpcRdmaAnalysis, RpcCallAnalysis } from '../ulp/rpc-rdma/rpc-call-analysis';

export interface RpcCallPass {
  analysis: RpcRdmaAnalysis;
  captureError: WireError | null;
}

/** The RPCs of the capture at `source` (a path, read in pieces) or held whole. */
export function rpcCallsOf(source: string | Uint8Array, rules: UlpRules, rocePort: number): RpcCallPass {
  const decoder = new RpcRdmaDecoder(rules);
  const calls = new RpcCallAnalysis();
  let first: bigint | null = null;
  const take = (rec: CaptureRecord): void => {
    first ??= rec.timestampNs;
    const view = new DataView(rec.data.buffer, rec.data.byteOffset, rec.data.byteLength);
    // ICRCs are not checked: the decoder takes a frame with a bad one, as roce decode does.
    const d = decodeAt(view, rec.data, 0, rec.data.byteLength, rec.linkType, { rocePort, verifyIcrc: false }, rec.origLen);
    if (!d.roce || d.bth === null) return;
    const f = decoder.observe(d, view, 0);
    if (f === null) return;
    calls.take(f, { frame: rec.index, timeNs: Number(rec.timestampNs - first), opcode: d.bth.opcode, psn: d.bth.psn });
  };
  const captureError = forEachRecord(source, take);
  return { analysis: calls.result(), captureError };
}
