/**
 * Rewriting captured RoCE v2 frames for re-sending (`roce replay --onto`),
 * like tcpreplay's rewrite for RoCE: MAC and IP addresses, destination QPNs
 * and PSN bases, then the IPv4 checksum and the ICRC recomputed.
 */
import { WireError, WireErrorCode } from './errors';
import { decodeFrame } from './decode';
import { ipv4FromString, ipv6FromString, setMac, setU24, getU24, viewOf } from './bytes';
import { ipv4Checksum } from './ipv4';
import { icrcV2, writeIcrc } from './icrc';

export interface RewriteRules {
  /** Old MAC -> new MAC. */
  mac?: Map<number, number>;
  /** Old IP (text) -> new IP (text); IPv4 with IPv4, IPv6 with IPv6. */
  ip?: Map<string, string>;
  /** Old destination QPN -> new. */
  qpn?: Map<number, number>;
  /** Added to every PSN (mod 2^24), per destination QPN (after QPN mapping) or for all with key -1. */
  psnOffset?: Map<number, number>;
}

export interface RewriteResult {
  frame: Uint8Array;
  changed: boolean;
}

function ipKey(bytes: Uint8Array, off: number, len: number): string {
  if (len === 4) return `${bytes[off]}.${bytes[off + 1]}.${bytes[off + 2]}.${bytes[off + 3]}`;
  let s = '';
  for (let i = 0; i < 16; i += 2) s += (i ? ':' : '') + (((bytes[off + i] ?? 0) << 8) | (bytes[off + i + 1] ?? 0)).toString(16);
  return s;
}

function normalize(ip: string): string {
  if (/^\d+\.\d+\.\d+\.\d+$/.test(ip)) return ip;
  const b = ipv6FromString(ip);
  return ipKey(b, 0, 16);
}

/**
 * A rewriter for RoCE v2 frames. Frames that are not RoCE v2 pass through
 * untouched (their MACs still rewritten, so ARP and the like follow along).
 */
export function makeRewriter(rules: RewriteRules): (frame: Uint8Array) => RewriteResult {
  const ipMap = new Map<string, Uint8Array>();
  for (const [from, to] of rules.ip ?? []) {
    const v4From = /^\d+\.\d+\.\d+\.\d+$/.test(from);
    const v4To = /^\d+\.\d+\.\d+\.\d+$/.test(to);
    if (v4From !== v4To) throw new WireError(WireErrorCode.BadValue, 0, `cannot map ${from} to ${to}: both must be IPv4 or both IPv6`);
    const bytes = v4To ? new Uint8Array(new Uint32Array([ipv4FromString(to)]).buffer).reverse() : ipv6FromString(to);
    ipMap.set(normalize(from), bytes);
  }
  return (input: Uint8Array): RewriteResult => {
    const f = input.slice();
    const v = viewOf(f);
    let changed = false;
    if (f.length >= 12 && rules.mac !== undefined) {
      for (const off of [0, 6]) {
        const old = v.getUint16(off) * 0x1_0000_0000 + v.getUint32(off + 2);
        const to = rules.mac.get(old);
        if (to !== undefined) {
          setMac(v, off, to);
          changed = true;
        }
      }
    }
    const d = decodeFrame(f, undefined, { verifyIcrc: false });
    if (!d.roce || d.version !== 2 || d.bth === null || d.icrcOff < 0) return { frame: f, changed };
    const l3 = d.l3Off;
    const v4 = d.ipv4 !== null;
    const alen = v4 ? 4 : 16;
    for (const off of v4 ? [l3 + 12, l3 + 16] : [l3 + 8, l3 + 24]) {
      const to = ipMap.get(ipKey(f, off, alen));
      if (to !== undefined) {
        f.set(to, off);
        changed = true;
      }
    }
    let qpn = d.bth.destQp;
    const newQpn = rules.qpn?.get(qpn);
    if (newQpn !== undefined) {
      setU24(v, d.bthOff + 5, newQpn);
      qpn = newQpn;
      changed = true;
    }
    const delta = rules.psnOffset?.get(qpn) ?? rules.psnOffset?.get(-1);
    if (delta !== undefined && delta !== 0) {
      setU24(v, d.bthOff + 9, (getU24(v, d.bthOff + 9) + delta) & 0xffffff);
      changed = true;
    }
    if (changed) {
      if (v4) {
        v.setUint16(l3 + 10, 0);
        v.setUint16(l3 + 10, ipv4Checksum(v, l3, (d.ipv4?.ihl ?? 5) * 4));
      }
      writeIcrc(f, d.icrcOff, icrcV2(f, l3, d.icrcOff));
    }
    return { frame: f, changed };
  };
}
