/**
 * The upper-layer protocols `roce decode` shows (ulp/protocols.ts: each registered protocol), as the
 * capture engine runs them: their field names beside the wire's (`decodeField`, for -Y and -T
 * fields), and the first pass that keeps their state in capture order while batches are decoded on
 * worker threads.
 *
 * Which conversation a frame belongs to is learned from earlier frames (the RDMA CM REQ and REP),
 * and a capsule may span packets; a batch decoded on another thread must start from the state the
 * frames before it left. So the command's thread, as it fills each batch, runs the same decoder
 * over it (`UlpPass.scan`): it reads only frames that can change a protocol's state (those some
 * decoder `wants`: to the GSI, QP 1, and to queue pairs a decoder has made its own; a few loads per
 * frame for any other), and hands each protocol's state as it stood before the batch to whichever
 * thread decodes it. The output is then the same
 * for any number of threads, and from a pipe (the state goes forward with the records, never back).
 */
import { type RocePacket, decodeAt } from '../packets/decode';
import { type FieldDef, frameField } from '../packets/frame-fields';
import { EtherType } from '../packets/ethernet';
import { IpProtocol } from '../packets/ipv4';
import { LinkType } from '../packets/pcap';
import type { UlpDecoder, UlpProtocol } from '../ulp/ulp-decoder';
import { ULP_PROTOCOLS, type UlpFrameOf, type UlpRuleSet } from '../ulp/protocols';
import { META_FIELDS } from './decode-batch-layout';

/**
 * A field by Wireshark's name: the wire's (packets/frame-fields.ts), else the first registered
 * protocol's that has it. One argument only: it is handed to the display filter as its lookup.
 */
export function decodeField(name: string): FieldDef | undefined {
  const f = frameField(name);
  if (f !== undefined) return f;
  for (const p of ULP_PROTOCOLS) {
    const u = p.text.field(name);
    if (u !== undefined) return u;
  }
  return undefined;
}

/**
 * A decoder per protocol, over `rules`, each starting from its entry of `states` (a batch's
 * carried states, in the protocols' order; null or absent: from nothing).
 */
export function ulpDecoders(
  protocols: readonly UlpProtocol<unknown, unknown>[],
  rules: UlpRuleSet,
  states: readonly (unknown | null)[] | null = null,
): UlpDecoder<unknown, unknown>[] {
  return protocols.map((p, i) => {
    const s = states?.[i] ?? null;
    return s === null ? p.decoder(rules[p.name]) : p.decoder(rules[p.name], s);
  });
}

/**
 * The destination QPN of an Ethernet frame (untagged or one VLAN tag) carrying IPv4 or IPv6, UDP to
 * `rocePort` and a BTH; -1 for any other frame or link type (the caller then decodes it in full).
 */
export function quickDestQp(view: DataView, start: number, end: number, linkType: number, rocePort: number): number {
  if (linkType !== LinkType.Ethernet || end - start < 14) return -1;
  let off = start + 12;
  let type = view.getUint16(off);
  off += 2;
  if (type === EtherType.VLAN) {
    if (end - off < 4) return -1;
    type = view.getUint16(off + 2);
    off += 4;
  }
  let udp: number;
  if (type === EtherType.IPv4) {
    if (end - off < 20) return -1;
    const vihl = view.getUint8(off);
    if (vihl >>> 4 !== 4 || view.getUint8(off + 9) !== IpProtocol.UDP) return -1;
    udp = off + (vihl & 0xf) * 4;
  } else if (type === EtherType.IPv6) {
    if (end - off < 40 || view.getUint8(off + 6) !== IpProtocol.UDP) return -1;
    udp = off + 40;
  } else return -1;
  if (end - udp < 8 + 12 || view.getUint16(udp + 2) !== rocePort) return -1;
  // BTH bytes 5-7: the destination QP.
  return view.getUint32(udp + 8 + 4) & 0xffffff;
}

/** The command thread's pass over each batch, in order, before the batch goes to be decoded. */
export class UlpPass {
  private readonly decoders: UlpDecoder<unknown, unknown>[];

  constructor(
    rules: UlpRuleSet,
    private readonly rocePort: number,
    private readonly protocols: readonly UlpProtocol<unknown, unknown>[] = ULP_PROTOCOLS,
  ) {
    this.decoders = ulpDecoders(protocols, rules);
  }

  /** Each protocol's state before the next batch, as the thread that decodes it gets it (null: nothing yet). */
  snapshot(): (unknown | null)[] {
    return this.decoders.map((d, i) => ((this.protocols[i] as UlpProtocol<unknown, unknown>).isEmpty(d.state) ? null : structuredClone(d.state)));
  }

  /** Takes the `count` records of a batch (decode-batch-layout.ts) in order. */
  scan(data: ArrayBuffer, meta: ArrayBuffer, count: number): void {
    const view = new DataView(data);
    const bytes = new Uint8Array(data);
    const m = new Float64Array(meta);
    const opts = { rocePort: this.rocePort, verifyIcrc: false, lean: true, leanWithIp: true };
    const decoders = this.decoders;
    for (let i = 0; i < count; i++) {
      const k = i * META_FIELDS;
      const start = m[k + 4] as number;
      const end = m[k + 5] as number;
      const linkType = m[k + 2] as number;
      const qp = quickDestQp(view, start, end, linkType, this.rocePort);
      if (qp >= 0 && !wantedByAny(decoders, qp)) continue;
      const d = decodeAt(view, bytes, start, end, linkType, opts, m[k + 3] as number);
      if (d.roce) observeAll(decoders, d, view, start);
    }
  }
}

/** Whether any decoder wants frames to `destQp`. */
export function wantedByAny(decoders: readonly UlpDecoder<unknown, unknown>[], destQp: number): boolean {
  for (const d of decoders) if (d.wants(destQp)) return true;
  return false;
}

/**
 * Hands a RoCE frame to every decoder that wants it (a frame without a BTH to each, which then
 * finds nothing in it); what the first that makes something of it made, with its index, or null.
 * Every decoder sees the frame whatever the others made of it: each keeps its own conversations.
 */
export function observeAll(decoders: readonly UlpDecoder<unknown, unknown>[], p: RocePacket, view: DataView, start: number): UlpHit | null {
  const destQp = p.bth === null ? -1 : p.bth.destQp;
  let hit: UlpHit | null = null;
  for (let i = 0; i < decoders.length; i++) {
    const dec = decoders[i] as UlpDecoder<unknown, unknown>;
    if (destQp >= 0 && !dec.wants(destQp)) continue;
    const f = dec.observe(p, view, start);
    if (f !== null && hit === null) hit = { protocol: dec.name, frame: f, index: i };
  }
  return hit;
}

/** A frame a protocol made something of: `FieldFrame.ulp`'s shape, and the protocol's place in the list. */
export interface UlpHit extends UlpFrameOf {
  readonly index: number;
}
