/**
 * Fuzz target: one captured frame through the decoder and every renderer of a decoded frame.
 * The decoder never throws: damage is reported in the result (`error`, `madError`), so any
 * exception is a finding. The first byte picks the link type (Ethernet, raw IP, Linux cooked
 * v1/v2), as a capture file's header would.
 */
import { decodeFrame } from '../../packets/decode';
import { LinkType } from '../../packets/pcap';
import { frameToJson } from '../../packets/json';
import { fieldTree, summaryLine } from '../../packets/summary';
import { ZERO_FRAME_TIME } from '../../base/exact-time';

const LINKS = [LinkType.Ethernet, LinkType.Raw, LinkType.LinuxSll, LinkType.LinuxSll2, LinkType.Ipv4, LinkType.Ipv6, LinkType.Null] as const;

export function fuzz(data: Uint8Array): void {
  if (data.length === 0) return;
  const link = LINKS[(data[0] as number) % LINKS.length] as number;
  const frame = data.subarray(1);
  for (const verifyIcrc of [true, false]) {
    const d = decodeFrame(frame, link, { verifyIcrc });
    JSON.stringify(frameToJson(1, ZERO_FRAME_TIME, d));
    if (d.roce) {
      summaryLine(1, ZERO_FRAME_TIME, d);
      fieldTree(1, ZERO_FRAME_TIME, frame.length, d, frame);
    }
  }
}
