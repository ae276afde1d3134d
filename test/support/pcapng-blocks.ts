/** pcapng blocks built field by field (draft-ietf-opsawg-pcapng §3.1, §4), for reader tests. */

export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** One pcapng block: type, total length, body padded to 4, total length (pcapng §3.1). */
export function block(type: number, body: Uint8Array, le = true): Uint8Array {
  const padded = (body.length + 3) & ~3;
  const total = 12 + padded;
  const b = new Uint8Array(total);
  const v = new DataView(b.buffer);
  v.setUint32(0, type, le);
  v.setUint32(4, total, le);
  b.set(body, 8);
  v.setUint32(total - 4, total, le);
  return b;
}

export function shb(le = true): Uint8Array {
  const body = new Uint8Array(16);
  const v = new DataView(body.buffer);
  v.setUint32(0, 0x1a2b3c4d, le);
  v.setUint16(4, 1, le);
  v.setUint16(6, 0, le);
  v.setBigInt64(8, -1n, le);
  return block(0x0a0d0d0a, body, le);
}

export function opt(code: number, value: Uint8Array, le = true): Uint8Array {
  const b = new Uint8Array(4 + ((value.length + 3) & ~3));
  const v = new DataView(b.buffer);
  v.setUint16(0, code, le);
  v.setUint16(2, value.length, le);
  b.set(value, 4);
  return b;
}

export function i64(n: bigint, le = true): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigInt64(0, n, le);
  return b;
}

export function idb(linkType: number, options: Uint8Array[] = [], le = true, snaplen = 0): Uint8Array {
  const head = new Uint8Array(8);
  const v = new DataView(head.buffer);
  v.setUint16(0, linkType, le);
  v.setUint32(4, snaplen, le);
  const opts = options.length > 0 ? [...options, new Uint8Array(4)] : [];
  return block(1, concat([head, ...opts]), le);
}

export function epb(ifId: number, ts: bigint, data: Uint8Array, le = true, orig = data.length): Uint8Array {
  const head = new Uint8Array(20);
  const v = new DataView(head.buffer);
  v.setUint32(0, ifId, le);
  v.setUint32(4, Number(ts >> 32n), le);
  v.setUint32(8, Number(ts & 0xffffffffn), le);
  v.setUint32(12, data.length, le);
  v.setUint32(16, orig, le);
  return block(6, concat([head, data]), le);
}

export function spb(orig: number, data: Uint8Array): Uint8Array {
  const head = new Uint8Array(4);
  new DataView(head.buffer).setUint32(0, orig, true);
  return block(3, concat([head, data]));
}

export function obsoletePb(ifId: number, ts: bigint, data: Uint8Array): Uint8Array {
  const head = new Uint8Array(20);
  const v = new DataView(head.buffer);
  v.setUint16(0, ifId, true);
  v.setUint16(2, 0, true);
  v.setUint32(4, Number(ts >> 32n), true);
  v.setUint32(8, Number(ts & 0xffffffffn), true);
  v.setUint32(12, data.length, true);
  v.setUint32(16, data.length, true);
  return block(2, concat([head, data]));
}
