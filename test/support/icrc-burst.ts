/** Random RoCE v2-shaped frames (IPv4 with options or IPv6) laid out one after another in one buffer, for batched ICRC tests. */
export interface IcrcBurst {
  buf: Uint8Array;
  /** (IP header offset, ICRC field offset) pairs, one per frame. */
  desc: Uint32Array;
  count: number;
}

/** A seeded generator (LCG), so a failure repeats. */
export function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export function randomIcrcBurst(rnd: () => number, count: number): IcrcBurst {
  const frames: { f: Uint8Array; ip: number; end: number }[] = [];
  for (let i = 0; i < count; i++) {
    const v6 = rnd() < 0.3;
    const ihl = v6 ? 0 : 5 + Math.floor(rnd() * 11);
    const hdr = v6 ? 40 : ihl * 4;
    const payload = rnd() < 0.5 ? Math.floor(rnd() * 200) : Math.floor(rnd() * 4200);
    const ip = 14 + (rnd() < 0.2 ? 4 : 0);
    const end = ip + hdr + 8 + 12 + payload;
    const f = new Uint8Array(end + 4 + Math.floor(rnd() * 8));
    for (let j = 0; j < f.length; j++) f[j] = Math.floor(rnd() * 256);
    f[ip] = v6 ? 0x60 | (f[ip]! & 0x0f) : 0x40 | ihl;
    frames.push({ f, ip, end });
  }
  const buf = new Uint8Array(frames.reduce((n, x) => n + x.f.length, 0));
  const desc = new Uint32Array(2 * count);
  let off = 0;
  frames.forEach((x, i) => {
    buf.set(x.f, off);
    desc[2 * i] = off + x.ip;
    desc[2 * i + 1] = off + x.end;
    off += x.f.length;
  });
  return { buf, desc, count };
}
