/**
 * What an Ethernet frame costs on the wire beyond the bytes the stack builds (frames here are
 * without FCS): the link serializes these, and a pacer that spaces frames at the line rate must
 * count them too, or it runs faster than the wire (IEEE 802.3 clause 4.4.2: preamble and SFD 8
 * bytes, FCS 4, minimum inter-frame gap 12 bytes; minimum frame 64 bytes with the FCS).
 */

/** Preamble + SFD (8), FCS (4) and inter-frame gap (12): wire bytes a frame costs beyond its own. */
export const WIRE_OVERHEAD_BYTES = 24;
/** Minimum Ethernet frame without FCS; shorter frames are padded on the wire. */
export const MIN_FRAME_BYTES = 60;

/** Bytes a frame of `len` bytes (without FCS) takes on the wire: padding, preamble, FCS and gap included. */
export function wireBytes(len: number): number {
  return (len < MIN_FRAME_BYTES ? MIN_FRAME_BYTES : len) + WIRE_OVERHEAD_BYTES;
}
