/**
 * The ICRCs of a batch of `roce decode`'s records (capture-engine/decode-batch.ts) in one native call, handed
 * to the decoder frame by frame.
 */
import { BTH_LEN } from '../packets/bth';
import { ETH_LEN, EtherType } from '../packets/ethernet';
import type { IcrcBatch } from '../packets/icrc';
import { IPV6_LEN } from '../packets/ipv6';
import { LinkType } from '../packets/pcap';
import { UDP_LEN } from '../packets/udp';
import { BATCH_RECORDS, META_FIELDS } from './decode-batch-layout';

/** The ICRCs of `count` frames in one call (the native addon's `IcrcBatch.compute`). */
export type IcrcBurst = IcrcBatch['compute'];

/** UDP header and BTH: what an ICRC covers after the IP header, at least. */
const UDP_BTH = UDP_LEN + BTH_LEN;

/**
 * The ICRCs of a batch's frames, computed in one native call before they are decoded (a call per
 * frame costs about three times as much at 1 KiB). Each value is kept with the offsets it was
 * computed over, the IP header's and the ICRC field's: the decoder's ICRC routine takes it only
 * when the decoder asks for exactly those offsets, and computes any other frame itself. The offsets
 * are guessed (an untagged Ethernet or a raw IP frame, the ICRC in its last four bytes), so a guess
 * that is wrong costs a lookup, never a wrong verdict: an ICRC depends on nothing but the bytes
 * between the two offsets.
 */
export class BatchIcrc {
  private desc = new Uint32Array(2 * BATCH_RECORDS);
  private values = new Uint32Array(BATCH_RECORDS);
  /** Per record: its index in `values`, or -1 when none was computed. */
  private slot = new Int32Array(BATCH_RECORDS);
  /** The record being decoded. */
  current = 0;
  /** The routine the decoder calls. */
  readonly icrcV2: (frame: Uint8Array, ipOff: number, end: number) => number;

  constructor(
    private readonly burst: IcrcBurst,
    fallback: (frame: Uint8Array, ipOff: number, end: number) => number,
  ) {
    this.icrcV2 = (frame, ipOff, end) => {
      const k = this.slot[this.current] as number;
      if (k >= 0 && this.desc[2 * k] === ipOff && this.desc[2 * k + 1] === end) return this.values[k] as number;
      return fallback(frame, ipOff, end);
    };
  }

  /** Computes what it can of the batch's ICRCs. */
  prepare(bytes: Uint8Array, meta: Float64Array, count: number): void {
    let n = 0;
    for (let i = 0; i < count; i++) {
      this.slot[i] = -1;
      const k = i * META_FIELDS;
      const start = meta[k + 4] as number;
      const end = meta[k + 5] as number;
      if (end - start !== meta[k + 3]) continue; // cut by the capture: no ICRC to check
      const linkType = meta[k + 2] as number;
      let ip: number;
      if (linkType === LinkType.Ethernet) {
        const type = ((bytes[start + 12] as number) << 8) | (bytes[start + 13] as number);
        if (type !== EtherType.IPv4 && type !== EtherType.IPv6) continue;
        ip = start + ETH_LEN;
      } else if (linkType === LinkType.Raw || linkType === LinkType.Ipv4 || linkType === LinkType.Ipv6) ip = start;
      else continue;
      if (ip >= end) continue;
      const icrcOff = end - 4;
      const first = bytes[ip] as number;
      const version = first >> 4;
      const least = version === 4 ? (first & 0x0f) * 4 + UDP_BTH : version === 6 ? IPV6_LEN + UDP_BTH : Infinity;
      if ((version === 4 && (first & 0x0f) < 5) || icrcOff - ip < least) continue;
      this.desc[2 * n] = ip;
      this.desc[2 * n + 1] = icrcOff;
      this.slot[i] = n++;
    }
    if (n === 0) return;
    try {
      this.burst(bytes, this.desc, n, this.values);
    } catch {
      this.slot.fill(-1, 0, count); // the addon refused one: every frame is checked on its own
    }
  }
}
