/**
 * Captured frames made whole again for the stack a replay runs: a frame the capture cut short
 * (snaplen) gets its missing payload as zero bytes, and a frame whose ICRC the capture tool did
 * not preserve (`--ignore-icrc`) or did not keep gets the ICRC its contents call for, so the
 * stack's receive path accepts it. What the capture did not hold is never compared: the payload
 * bytes a comparison may look at are `payloadCaptured` (packets/decode.ts).
 */
import type { RocePacket } from '../../packets/decode';
import { sealIcrcV2 } from '../../packets/icrc';

/** Whether `p` must be restored before the stack sees it. */
export function needsRestore(p: RocePacket, icrcIgnored: boolean): boolean {
  return p.truncated || (icrcIgnored && p.icrcOk !== true);
}

/**
 * The frame `data` (decoded as `p`, RoCE v2) at its full length with a correct ICRC: a copy; the
 * captured bytes are kept, the bytes the capture did not hold are zero.
 */
export function restoreFrame(data: Uint8Array, p: RocePacket): Uint8Array {
  const b = p.bth;
  if (b === null || p.payloadOff < 0 || p.version !== 2) return data;
  const icrcOff = p.payloadOff + p.payloadLength + b.padCount;
  const out = new Uint8Array(icrcOff + 4);
  out.set(data.subarray(0, Math.min(data.length, out.length)));
  sealIcrcV2(out, p.l3Off, icrcOff);
  return out;
}
