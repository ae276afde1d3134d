/**
 * The target's one namespace (NSID 1): blocks of 512 bytes held in memory, as a Linux nvmet
 * namespace backed by a RAM disk. Reads and writes are checked against its size by the I/O handlers
 * (io-handlers.ts); here a range is only copied.
 */
import { NvmfError, NvmfErrorCode } from './nvmf-error';

/** The logical block size (LBADS 9). */
export const LBA_SIZE = 512;
/** The largest namespace the target holds in memory (1 GiB). */
export const MAX_NAMESPACE_BYTES = 1 << 30;

export class RamNamespace {
  readonly nsid = 1;
  readonly blocks: bigint;
  private readonly bytes: Uint8Array;

  constructor(sizeBytes: number) {
    if (!Number.isInteger(sizeBytes) || sizeBytes < LBA_SIZE || sizeBytes > MAX_NAMESPACE_BYTES || sizeBytes % LBA_SIZE !== 0)
      throw new NvmfError(
        NvmfErrorCode.CONFIG,
        `a namespace is a whole number of ${LBA_SIZE}-byte blocks, ${LBA_SIZE} B to ${MAX_NAMESPACE_BYTES} B, not ${sizeBytes}`,
      );
    this.bytes = new Uint8Array(sizeBytes);
    this.blocks = BigInt(sizeBytes / LBA_SIZE);
  }

  /** Whether blocks [slba, slba + count) lie inside the namespace. */
  holds(slba: bigint, count: number): boolean {
    return slba < this.blocks && slba + BigInt(count) <= this.blocks;
  }

  read(slba: bigint, count: number): Uint8Array {
    const at = Number(slba) * LBA_SIZE;
    return this.bytes.slice(at, at + count * LBA_SIZE);
  }

  write(slba: bigint, data: Uint8Array): void {
    this.bytes.set(data, Number(slba) * LBA_SIZE);
  }
}
