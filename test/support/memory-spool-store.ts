/** A SpoolStore (base/sorted-spool.ts) in memory, for tests: it says how many bytes went in. */
import type { SpoolStore } from '../../base/sorted-spool';

export function memoryStore(): SpoolStore & { bytes: () => number } {
  let buf = new Uint8Array(1024);
  let size = 0;
  return {
    bytes: () => size,
    append(bytes: Uint8Array): number {
      while (size + bytes.length > buf.length) {
        const bigger = new Uint8Array(buf.length * 2);
        bigger.set(buf.subarray(0, size));
        buf = bigger;
      }
      buf.set(bytes, size);
      const start = size;
      size += bytes.length;
      return start;
    },
    read(into: Uint8Array, position: number): number {
      const n = Math.max(0, Math.min(into.length, size - position));
      into.set(buf.subarray(position, position + n));
      return n;
    },
  };
}
