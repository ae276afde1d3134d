/**
 * R_Keys chosen by hardware, in a responder replay. The stack makes its keys from a key index and a
 * variant byte, so two captured R_Keys that share an index (ConnectX: 0x1943 and 0x1944) cannot
 * both be registered as they are. Such a region is registered under a key the stack picks, and the
 * requests fed to the stack carry that key instead of the captured one (RETH, AtomicETH, IETH), with
 * the ICRC recomputed. The key a request names is not what a responder's answer depends on, beyond
 * naming the region: the comparison is unchanged.
 */
import type { RocePacket } from '../../packets/decode';
import { Hdr } from '../../packets/opcodes';
import { sealIcrcV2 } from '../../packets/icrc';
import { OFF as RETH_OFF } from '../../packets/reth';
import { OFF as ATOMIC_OFF } from '../../packets/atomic-eth';

/** Where each header that names an R_Key keeps it, from the header's start. */
const KEY_FIELDS: readonly { hdr: number; name: 'RETH' | 'ATOMIC_ETH' | 'IETH'; at: number }[] = [
  { hdr: Hdr.RETH, name: 'RETH', at: RETH_OFF.RKEY },
  { hdr: Hdr.ATOMIC_ETH, name: 'ATOMIC_ETH', at: ATOMIC_OFF.RKEY },
  { hdr: Hdr.IETH, name: 'IETH', at: 0 },
];

/** `bytes` (decoded as `p`) with each R_Key in `map` replaced by its stack key; `bytes` itself when none is. */
export function withStackKeys(bytes: Uint8Array, p: RocePacket, map: ReadonlyMap<number, number>): Uint8Array {
  const info = p.info;
  const b = p.bth;
  if (map.size === 0 || info === undefined || b === null || p.version !== 2) return bytes;
  let out: Uint8Array | null = null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (const k of KEY_FIELDS) {
    if ((info.hdrs & k.hdr) === 0) continue;
    const off = p.bthOff + (info.offsets[k.name] ?? 0) + k.at;
    const key = map.get(view.getUint32(off));
    if (key === undefined) continue;
    // A copy of its own: a captured frame is often a Buffer, whose slice() shares the file's memory
    // (the key written through a view of the pool landed on the frame's IP header instead).
    out ??= new Uint8Array(bytes);
    new DataView(out.buffer, out.byteOffset, out.byteLength).setUint32(off, key);
  }
  if (out === null) return bytes;
  sealIcrcV2(out, p.l3Off, p.payloadOff + p.payloadLength + b.padCount);
  return out;
}
