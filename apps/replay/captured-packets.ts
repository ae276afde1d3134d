/**
 * The RoCE v2 packets of a capture as replay takes them: decoded (with the records' original
 * lengths, so frames cut by the snaplen are truncated captures, not malformed), frames that do
 * not decode left out, and frames the stack could not take as captured made whole
 * (restore.ts): truncated ones, and with `ignoreIcrc` those whose ICRC the capture did not keep.
 * RoCE v1 frames are taken in their RoCE v2 form (v1-as-v2.ts), and frames captured without an
 * Ethernet header are given one (as-ethernet.ts).
 */
import { type CaptureReadResult, LinkType } from '../../packets/pcap';
import { decodeAt, decodeFrame } from '../../packets/decode';
import { v1AsV2 } from './v1-as-v2';
import type { CapturedPacket } from './conversation';
import { needsRestore, restoreFrame } from './restore';
import { asEthernet } from './as-ethernet';

export interface CapturedPacketOptions {
  rocePort?: number;
  /** Do not check the captured ICRCs (a capture tool that did not preserve them). */
  ignoreIcrc?: boolean;
}

export interface CapturedPackets {
  packets: CapturedPacket[];
  /** Frames the capture cut short (snaplen). */
  truncated: number;
  /** RoCE v1 frames, fed to the stack as RoCE v2. */
  v1: number;
}

export function capturedPackets(cap: Pick<CaptureReadResult, 'records'>, o: CapturedPacketOptions = {}): CapturedPackets {
  const ignoreIcrc = o.ignoreIcrc === true;
  const packets: CapturedPacket[] = [];
  const t0 = cap.records[0]?.timestampNs ?? 0n;
  let truncated = 0;
  let v1 = 0;
  for (const rec of cap.records) {
    const view = new DataView(rec.data.buffer, rec.data.byteOffset, rec.data.byteLength);
    const d = decodeAt(view, rec.data, 0, rec.data.byteLength, rec.linkType, { rocePort: o.rocePort ?? 4791, verifyIcrc: !ignoreIcrc }, rec.origLen);
    if (!d.roce || d.error !== null) continue;
    if (d.truncated) truncated++;
    if (d.version === 1) {
      // RoCE v1: fed to the stack (v2 only) as the v2 frame with the same transport (v1-as-v2.ts).
      const v2 = v1AsV2(rec.data, d);
      const p = v2 === null ? null : decodeFrame(v2);
      if (v2 === null || p === null || !p.roce || p.error !== null) continue;
      v1++;
      // Comparisons look only at what the capture holds.
      p.payloadCaptured = d.payloadCaptured;
      packets.push({ frame: rec.index, timeNs: Number(rec.timestampNs - t0), p, bytes: v2 });
      continue;
    }
    const bytes = needsRestore(d, ignoreIcrc) ? restoreFrame(rec.data, d) : rec.data;
    if (d.eth === null) {
      // No Ethernet header (raw IP, SLL, loopback): the stack is given the frame with one (as-ethernet.ts).
      const e = asEthernet(bytes, d);
      const p = e === null ? null : decodeFrame(e, LinkType.Ethernet, { rocePort: o.rocePort ?? 4791, verifyIcrc: !ignoreIcrc });
      if (e === null || p === null || !p.roce || p.error !== null) continue;
      // Comparisons look only at what the capture holds.
      p.payloadCaptured = d.payloadCaptured;
      packets.push({ frame: rec.index, timeNs: Number(rec.timestampNs - t0), p, bytes: e });
      continue;
    }
    packets.push({ frame: rec.index, timeNs: Number(rec.timestampNs - t0), p: d, bytes });
  }
  return { packets, truncated, v1 };
}
