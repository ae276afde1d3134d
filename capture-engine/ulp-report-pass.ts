/**
 * `roce analyze`'s per-protocol reports of RPC-over-RDMA calls, iSER tasks and SMB Direct requests:
 * a pass over a capture that runs one protocol's decoder (ulp/) on its frames in order and hands
 * what it makes of each frame, with the frame's number, time, opcode and PSN, to that protocol's
 * request analysis (ulp/exchange-analysis.ts). ICRCs are not checked: the decoder takes a frame
 * with a bad one, as `roce decode` does.
 */
import type { CaptureRecord } from '../packets/pcap';
import { type RocePacket, decodeAt } from '../packets/decode';
import type { WireError } from '../packets/errors';
import { forEachRecord } from '../analysis/capture-stream';
import type { UlpDecoder, UlpRules } from '../ulp/ulp-decoder';
import type { ExchangeAt } from '../ulp/exchange-analysis';
import { RpcRdmaDecoder } from '../ulp/rpc-rdma/rpcrdma-decoder';
import { type RpcRdmaAnalysis, RpcCallAnalysis } from '../ulp/rpc-rdma/rpc-call-analysis';
import { IserDecoder } from '../ulp/iser/iser-decoder';
import { type IserAnalysis, IserTaskAnalysis } from '../ulp/iser/iser-task-analysis';
import { SmbdDecoder } from '../ulp/smbd/smbd-decoder';
import { type SmbdAnalysis, Smb2RequestAnalysis } from '../ulp/smbd/smb2-request-analysis';
import { quickDestQp } from './ulp-decoding';
import { ResentFilter } from './resent-filter';
import { OPCODES, OpFlag, Transport } from '../packets/opcodes';

/**
 * Runs `decoder` over the capture at `source` (a path, read in pieces, or held whole), handing each
 * frame it makes something of to `take` with the packet it was decoded from. A resent copy of a
 * SEND the capture already holds (resent-filter.ts) is not decoded again: a per-request report
 * counts each command, RPC or PDU once, the copy the peer answered, and a message of several
 * packets is put together from one copy of each.
 */
export function ulpFramesOf<F>(
  source: string | Uint8Array,
  decoder: UlpDecoder<F, unknown>,
  rocePort: number,
  take: (f: F, at: ExchangeAt, p: RocePacket) => void,
): WireError | null {
  let first: bigint | null = null;
  const resent = new ResentFilter();
  return forEachRecord(source, (rec: CaptureRecord) => {
    first ??= rec.timestampNs;
    const view = new DataView(rec.data.buffer, rec.data.byteOffset, rec.data.byteLength);
    const qp = quickDestQp(view, 0, rec.data.byteLength, rec.linkType, rocePort);
    if (qp >= 0 && !decoder.wants(qp)) return;
    const d = decodeAt(view, rec.data, 0, rec.data.byteLength, rec.linkType, { rocePort, verifyIcrc: false }, rec.origLen);
    if (!d.roce || d.bth === null) return;
    // RC SENDs only: UC and UD are never resent (a UD datagram's PSN, a CM MAD's, says nothing of
    // repeats), and the RDMA READs and WRITEs that move data go on to the analyses, which count
    // their resent packets themselves.
    const info = OPCODES[d.bth.opcode];
    if (info?.transport === Transport.RC && (info.flags & OpFlag.SEND) !== 0 && resent.isCopy(d.bth.destQp, d.bth.psn)) return;
    const f = decoder.observe(d, view, 0);
    if (f !== null) take(f, { frame: rec.index, timeNs: Number(rec.timestampNs - first), opcode: d.bth.opcode, psn: d.bth.psn }, d);
  });
}

/** The RPCs of the capture. */
export function rpcCallsOf(source: string | Uint8Array, rules: UlpRules, rocePort: number): { analysis: RpcRdmaAnalysis; captureError: WireError | null } {
  const a = new RpcCallAnalysis();
  const captureError = ulpFramesOf(source, new RpcRdmaDecoder(rules), rocePort, (f, at) => a.take(f, at));
  return { analysis: a.result(), captureError };
}

/** The iSCSI tasks of the capture's iSER connections. */
export function iserTasksOf(source: string | Uint8Array, rules: UlpRules, rocePort: number): { analysis: IserAnalysis; captureError: WireError | null } {
  const a = new IserTaskAnalysis();
  const captureError = ulpFramesOf(source, new IserDecoder(rules), rocePort, (f, at) => a.take(f, at));
  return { analysis: a.result(), captureError };
}

/** The SMB2 requests of the capture's SMB Direct connections. */
export function smbdRequestsOf(source: string | Uint8Array, rules: UlpRules, rocePort: number): { analysis: SmbdAnalysis; captureError: WireError | null } {
  const a = new Smb2RequestAnalysis();
  const captureError = ulpFramesOf(source, new SmbdDecoder(rules), rocePort, (f, at) => a.take(f, at));
  return { analysis: a.result(), captureError };
}
