/**
 * A RandomSource over the operating system's cryptographic generator (node:crypto, which reads
 * getrandom(2)): what a device that faces a network draws its keys, QP numbers and starting PSNs
 * from. Bytes are fetched 1 KiB at a time, so a draw is not a system call.
 */
import { randomFillSync } from 'node:crypto';
import type { RandomSource } from './random-source';

const POOL_WORDS = 256;

export class CryptoRandom implements RandomSource {
  private readonly pool = new Uint32Array(POOL_WORDS);
  private next = POOL_WORDS;

  u32(): number {
    if (this.next >= POOL_WORDS) {
      randomFillSync(this.pool);
      this.next = 0;
    }
    const x = this.pool[this.next] as number;
    // Each word is handed out once.
    this.pool[this.next++] = 0;
    return x >>> 0;
  }
}
