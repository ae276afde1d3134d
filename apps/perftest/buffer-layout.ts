/**
 * Where each message of a test goes in its buffer, as perftest lays it out
 * (perftest_resources.c): two halves, the first for this side's messages, the
 * second the area the peer writes to or reads from, each holding one area of
 * BUFF_SIZE per QP (with -q N, QP i sends from area i of the first half and
 * gives the peer area N + i: set_up_connection's vaddr). Each message
 * goes to the next cache-line-aligned slot of a cycle buffer (page size) when
 * it fits twice, else always to the start. A verifying SEND bandwidth server
 * keeps one slot per receive behind the halves, so a message is checked before
 * its buffer is posted again.
 */
import type { SysData } from '../oob/perftest-session';
import { PerftestVerb as Verb } from '../oob/perftest-session';
import { Connection, type ResolvedConfig } from './config';

/** The GRH in front of every UD receive (IBTA 11.4.1.1: the first 40 bytes of a UD receive buffer; perftest's UD_ADDITION). */
export const UD_GRH_BYTES = 40;

/** perftest's INC(): a slot is the message rounded up to whole cache lines (at least one). */
function slotStride(size: number, cacheLine: number): number {
  return size > cacheLine ? Math.ceil(size / cacheLine) * cacheLine : cacheLine;
}

export class BufferLayout {
  /** Bytes from one slot to the next. */
  readonly stride: number;
  /** Slots of the cycle buffer (1 when a message does not fit twice). */
  readonly slots: number;
  /** Bytes of one QP's area (perftest BUFF_SIZE); with one QP, each half. */
  readonly half: number;
  /** QPs (perftest -q). */
  readonly qps: number;
  /** Bytes in front of each receive's message: the GRH of UD (40), else 0. */
  readonly grh: number;
  /** Where the verifying SEND server's receive slots start. */
  readonly recvArea: number;
  /** The whole buffer. */
  readonly total: number;
  private readonly cycled: boolean;

  /** `half`: a QP area fixed by a larger size (perftest -a runs every size in the buffer of the largest). */
  constructor(
    private readonly rc: ResolvedConfig,
    private readonly sysData: SysData,
    half?: number,
  ) {
    const cycle = sysData.cycleBuffer;
    this.grh = rc.connection === Connection.UD ? UD_GRH_BYTES : 0;
    const slot = rc.size + this.grh;
    this.stride = slotStride(slot, sysData.cacheLineSize);
    this.cycled = slot <= cycle / 2;
    this.slots = this.cycled ? Math.max(1, Math.floor(cycle / this.stride)) : 1;
    this.half = Math.max(half ?? 0, slot, cycle, this.slots * this.stride);
    this.qps = rc.qps;
    const sendServerVerify = rc.verb === Verb.SEND && !rc.lat && (rc.role === 'server' || rc.duplex) && rc.verify;
    this.recvArea = 2 * this.qps * this.half;
    this.total = this.recvArea + (sendServerVerify ? this.qps * rc.rxDepth * this.stride : 0);
  }

  /** The layout of the same buffer for messages of `rc.size` (smaller than this layout's). */
  forSize(rc: ResolvedConfig): BufferLayout {
    return new BufferLayout(rc, this.sysData, this.half);
  }

  /** Where QP `q`'s messages go out from (area q of the first half). */
  sendBase(q: number): number {
    return q * this.half;
  }

  /** The area of QP `q` that the peer writes to or reads from (area qps + q; set_up_connection's vaddr). */
  targetBase(q: number): number {
    return (this.qps + q) * this.half;
  }

  /** The slot of message `k`. */
  slotIndex(k: number): number {
    return this.cycled ? k % this.slots : 0;
  }

  /** Where message `k` of a QP sits within the QP's area: where it goes out from (or, for READ, lands), and where it lands in the peer's. */
  slotOffset(k: number): number {
    return this.slotIndex(k) * this.stride;
  }

  /** Bytes each receive takes: the message, and the GRH in front of it for UD. */
  get recvLength(): number {
    return this.rc.size + this.grh;
  }

  /** Where the message of receive `j` of QP `q` starts (after the GRH for UD). */
  recvPayload(j: number, q = 0): number {
    return this.recvOffset(j, q) + this.grh;
  }

  /** Where receive `j` of QP `q` lands (its GRH first, for UD). */
  recvOffset(j: number, q = 0): number {
    const { rc } = this;
    if (rc.lat) return this.targetBase(0);
    if (rc.verify) return this.recvArea + (q * rc.rxDepth + j) * this.stride;
    return this.targetBase(q) + (j % this.slots) * this.stride;
  }
}
