/**
 * Where each message of a test goes in its buffer, as perftest lays it out
 * (perftest_resources.c): two halves of BUFF_SIZE, the first for this side's
 * messages, the second the area the peer writes to or reads from. Each message
 * goes to the next cache-line-aligned slot of a cycle buffer (page size) when
 * it fits twice, else always to the start. A verifying SEND bandwidth server
 * keeps one slot per receive behind the halves, so a message is checked before
 * its buffer is posted again.
 */
import type { SysData } from '../oob/perftest-session';
import { PerftestVerb as Verb } from '../oob/perftest-session';
import type { ResolvedConfig } from './config';

/** perftest's INC(): a slot is the message rounded up to whole cache lines (at least one). */
function slotStride(size: number, cacheLine: number): number {
  return size > cacheLine ? Math.ceil(size / cacheLine) * cacheLine : cacheLine;
}

export class BufferLayout {
  /** Bytes from one slot to the next. */
  readonly stride: number;
  /** Slots of the cycle buffer (1 when a message does not fit twice). */
  readonly slots: number;
  /** Bytes of each half (perftest BUFF_SIZE). */
  readonly half: number;
  /** Where the verifying SEND server's receive slots start. */
  readonly recvArea: number;
  /** The whole buffer. */
  readonly total: number;
  private readonly cycled: boolean;

  constructor(
    private readonly rc: ResolvedConfig,
    sysData: SysData,
  ) {
    const cycle = sysData.cycleBuffer;
    this.stride = slotStride(rc.size, sysData.cacheLineSize);
    this.cycled = rc.size <= cycle / 2;
    this.slots = this.cycled ? Math.max(1, Math.floor(cycle / this.stride)) : 1;
    this.half = Math.max(rc.size, cycle, this.slots * this.stride);
    const sendServerVerify = rc.verb === Verb.SEND && !rc.lat && rc.role === 'server' && rc.verify;
    this.recvArea = 2 * this.half;
    this.total = this.recvArea + (sendServerVerify ? rc.rxDepth * this.stride : 0);
  }

  /** The slot of message `k`. */
  slotIndex(k: number): number {
    return this.cycled ? k % this.slots : 0;
  }

  /** Where message `k` goes out from (or, for READ, lands). */
  slotOffset(k: number): number {
    return this.slotIndex(k) * this.stride;
  }

  /** Where receive `j` lands. */
  recvOffset(j: number): number {
    const { rc } = this;
    if (rc.lat) return this.half;
    if (rc.verify) return this.recvArea + j * this.stride;
    return this.half + (j % this.slots) * this.stride;
  }
}
