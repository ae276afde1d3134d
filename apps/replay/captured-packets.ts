/**
 * The RoCE v2 packets of a capture as replay takes them: decoded (with the records' original
 * lengths, so frames cut by the snaplen are truncated captures, not malformed), frames that do
 * not decode left out, and frames the stack could not take as captured made whole
 * (restore.ts): truncated ones, and with `ignoreIcrc` those whose ICRC the capture did not keep.
 */
import { type CaptureReadResult } from '../../packets/pcap';
import { decodeAt } from '../../packets/decode';
import type { CapturedPacket } from './conversation';
import { needsRestore, restoreFrame } from './restore';

export interface CapturedPacketOptions {
  rocePort?: number;
  /** Do not check the captured ICRCs (a capture tool that did not preserve them). */
  ignoreIcrc?: boolean;
}

export interface CapturedPackets {
  packets: CapturedPacket[];
  /** Frames the capture cut short (snaplen). */
  truncated: number;
}

export function capturedPackets(cap: Pick<CaptureReadResult, 'records'>, o: CapturedPacketOptions = {}): CapturedPackets {
  const ignoreIcrc = o.ignoreIcrc === true;
  const packets: CapturedPacket[] = [];
  const t0 = cap.records[0]?.timestampNs ?? 0n;
  let truncated = 0;
  for (const rec of cap.records) {
    const view = new DataView(rec.data.buffer, rec.data.byteOffset, rec.data.byteLength);
    const d = decodeAt(view, rec.data, 0, rec.data.byteLength, rec.linkType, { rocePort: o.rocePort ?? 4791, verifyIcrc: !ignoreIcrc }, rec.origLen);
    if (!d.roce || d.error !== null || d.version !== 2) continue;
    if (d.truncated) truncated++;
    packets.push({ frame: rec.index, timeNs: Number(rec.timestampNs - t0), p: d, bytes: needsRestore(d, ignoreIcrc) ? restoreFrame(rec.data, d) : rec.data });
  }
  return { packets, truncated };
}
