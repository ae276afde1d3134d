/**
 * What each frame carries for an upper-layer protocol, in a few words, for `roce ladder`'s labels: a
 * pass over the capture that runs every registered protocol's decoder (ulp/protocols.ts) on its
 * frames in order, as `roce decode` does, and keeps the first protocol's note (`UlpText.note`, else
 * its summary words) for each frame one of them made something of: an NVMe-oF command or CQE, an
 * iSCSI PDU, an RPC call or reply, an SMB2 request or response, the data an RDMA transfer moves.
 */
import type { CaptureRecord } from '../packets/pcap';
import { decodeAt } from '../packets/decode';
import type { WireError } from '../packets/errors';
import { forEachRecord } from '../analysis/capture-stream';
import type { UlpProtocol } from '../ulp/ulp-decoder';
import { ULP_PROTOCOLS, type UlpRuleSet } from '../ulp/protocols';
import { observeAll, quickDestQp, ulpDecoders, wantedByAny } from './ulp-decoding';

export interface UlpFrameNotes {
  /** Frame number (1-based, as the capture counts) to its note. */
  notes: Map<number, string>;
  captureError: WireError | null;
}

export function ulpFrameNotes(
  source: string | Uint8Array,
  rules: UlpRuleSet,
  rocePort: number,
  protocols: readonly UlpProtocol<unknown, unknown>[] = ULP_PROTOCOLS,
): UlpFrameNotes {
  const decoders = ulpDecoders(protocols, rules);
  const notes = new Map<number, string>();
  const take = (rec: CaptureRecord): void => {
    const view = new DataView(rec.data.buffer, rec.data.byteOffset, rec.data.byteLength);
    const qp = quickDestQp(view, 0, rec.data.byteLength, rec.linkType, rocePort);
    if (qp >= 0 && !wantedByAny(decoders, qp)) return;
    // ICRCs are not checked: the decoders take a frame with a bad one, as roce decode does.
    const d = decodeAt(view, rec.data, 0, rec.data.byteLength, rec.linkType, { rocePort, verifyIcrc: false }, rec.origLen);
    if (!d.roce) return;
    const hit = observeAll(decoders, d, view, 0);
    if (hit === null) return;
    const text = (protocols[hit.index] as UlpProtocol<unknown, unknown>).text;
    const note = text.note === undefined ? text.words(hit.frame) : text.note(hit.frame);
    if (note !== null && note !== '') notes.set(rec.index, note);
  };
  const captureError = forEachRecord(source, take);
  return { notes, captureError };
}
