/**
 * `roce analyze`'s view of an upper-layer protocol's requests: each from the frame that carries it
 * to the frame that answers it, per connection, with the RDMA transfers that moved its data. A
 * protocol's adapter turns what its decoder makes of each frame into events (a request under a key,
 * the response to a key, an RDMA transfer for a key), in capture order; this keeps, per request,
 * when it was made and answered, the answer's status and whether it is an error, and its RDMA READ
 * requests, WRITE messages, packets and bytes (a packet seen again at the same PSN is counted as
 * sent again, its bytes once). Per connection it reports the latency from request to answer
 * (ulp/command-latency.ts), the requests never answered, the errors, the most outstanding at once,
 * and the bytes moved in SENDs, by RDMA READ and by RDMA WRITE.
 * RPC-over-RDMA (rpc-rdma/rpc-call-analysis.ts), iSER and SMB Direct report through it.
 */
import { OpFlag, Opcode, opcodeInfo } from '../packets/opcodes';
import { type LatencySummary, latencyFigures } from './command-latency';

/** Where a frame sits in the capture, and what the transport layer says of it. */
export interface ExchangeAt {
  frame: number;
  /** Nanoseconds since the first frame of the capture. */
  timeNs: number;
  opcode: number;
  psn: number;
}

export type ExchangeEvent =
  /** A request under `key` (a key used again before its answer forgets the first: never answered). `via`: how it travelled, when it matters. */
  | { kind: 'request'; conn: string; key: string; name: string; sendBytes: number; via?: string }
  /** A better name for the open request under `key` (its message was read later). */
  | { kind: 'name'; conn: string; key: string; name: string }
  /** The answer to `key`. */
  | { kind: 'response'; conn: string; key: string; status: string; error: boolean; sendBytes: number; via?: string }
  /**
   * An RDMA packet of `key`'s data (null: of no request the capture showed): an RDMA READ request
   * (`readRequest`), READ response data (`read`) or WRITE data.
   */
  | { kind: 'rdma'; conn: string; key: string | null; op: 'readRequest' | 'read' | 'write'; bytes: number; direction: string };

/** One request as the capture shows it. */
export interface ExchangeRecord {
  key: string;
  name: string;
  /** The frame that carried it, and when. */
  frame: number;
  timeNs: number;
  via?: string;
  /** Bytes of its SEND message and its answer's. */
  sendBytes: number;
  answer: { frame: number; timeNs: number; latencyNs: number; status: string; error: boolean; via?: string } | null;
  /** RDMA READ requests and WRITE messages that moved its data, their data packets and bytes, and packets sent again. */
  rdma: { reads: number; writes: number; packets: number; bytes: number; resent: number };
}

export interface ExchangeReport {
  conversation: string;
  requests: number;
  answered: number;
  errors: ExchangeRecord[];
  neverAnswered: ExchangeRecord[];
  maxOutstanding: number;
  latencyUs: LatencySummary | null;
  /** Answered requests by latency: `[upper bound in µs, count]`, bounds doubling from 1 µs (the last bucket is open). */
  histogram: [number, number][];
  /** Bytes in SENDs, as RDMA READ response data, as RDMA WRITE data (a packet sent again counted once). */
  bytes: { sends: number; rdmaRead: number; rdmaWrite: number };
  list: ExchangeRecord[];
}

interface Work {
  open: Map<string, ExchangeRecord>;
  all: ExchangeRecord[];
  answered: ExchangeRecord[];
  maxOutstanding: number;
  bytes: ExchangeReport['bytes'];
  seenPsns: Set<string>;
}

const WRITE_STARTS = new Set<number>([Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_ONLY, Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE]);

/** What an RDMA packet is to a request's data, by its opcode's row of the opcode table: a READ request, READ response data, or WRITE data. */
export function rdmaOpOf(opcode: number): 'readRequest' | 'read' | 'write' {
  const flags = opcodeInfo(opcode)?.flags ?? 0;
  if ((flags & OpFlag.READ) === 0) return 'write';
  return (flags & OpFlag.RESP) !== 0 ? 'read' : 'readRequest';
}

/** Requests remembered per connection while unanswered, at most (the oldest are reported as never answered). */
const MAX_OPEN = 65536;

export class ExchangeAnalysis {
  private readonly conversations = new Map<string, Work>();

  /** Requests of `conn` awaiting their answer now. */
  outstanding(conn: string): number {
    return this.conversations.get(conn)?.open.size ?? 0;
  }

  take(e: ExchangeEvent, at: ExchangeAt): void {
    const c = this.work(e.conn);
    switch (e.kind) {
      case 'request': {
        const rec: ExchangeRecord = {
          key: e.key,
          name: e.name,
          frame: at.frame,
          timeNs: at.timeNs,
          ...(e.via === undefined ? {} : { via: e.via }),
          sendBytes: e.sendBytes,
          answer: null,
          rdma: { reads: 0, writes: 0, packets: 0, bytes: 0, resent: 0 },
        };
        c.bytes.sends += e.sendBytes;
        c.open.delete(e.key);
        c.open.set(e.key, rec);
        if (c.open.size > MAX_OPEN) {
          const first = c.open.keys().next();
          if (first.done !== true) c.open.delete(first.value);
        }
        c.all.push(rec);
        c.maxOutstanding = Math.max(c.maxOutstanding, c.open.size);
        return;
      }
      case 'name': {
        const rec = c.open.get(e.key);
        if (rec !== undefined) rec.name = e.name;
        return;
      }
      case 'response': {
        c.bytes.sends += e.sendBytes;
        const rec = c.open.get(e.key);
        if (rec === undefined) return;
        c.open.delete(e.key);
        rec.sendBytes += e.sendBytes;
        rec.answer = {
          frame: at.frame,
          timeNs: at.timeNs,
          latencyNs: at.timeNs - rec.timeNs,
          status: e.status,
          error: e.error,
          ...(e.via === undefined ? {} : { via: e.via }),
        };
        c.answered.push(rec);
        return;
      }
      case 'rdma': {
        const seen = `${e.direction}/${e.op === 'readRequest' ? 'req' : 'data'}/${at.psn}`;
        const again = c.seenPsns.has(seen);
        c.seenPsns.add(seen);
        if (!again && e.op === 'read') c.bytes.rdmaRead += e.bytes;
        if (!again && e.op === 'write') c.bytes.rdmaWrite += e.bytes;
        const rec = e.key === null ? undefined : c.open.get(e.key);
        if (rec === undefined) return;
        if (e.op === 'readRequest') rec.rdma.reads++;
        else {
          if (e.op === 'write' && WRITE_STARTS.has(at.opcode)) rec.rdma.writes++;
          rec.rdma.packets++;
          if (!again) rec.rdma.bytes += e.bytes;
        }
        if (again) rec.rdma.resent++;
        return;
      }
    }
  }

  /** The report of every connection, in the order the capture showed them. */
  result(): ExchangeReport[] {
    return [...this.conversations.entries()].map(([conversation, c]) => ({
      conversation,
      requests: c.all.length,
      answered: c.answered.length,
      errors: c.answered.filter((r) => r.answer?.error === true),
      neverAnswered: [...c.open.values()],
      maxOutstanding: c.maxOutstanding,
      ...latencyFigures(c.answered.map((r) => (r.answer?.latencyNs ?? 0) / 1000)),
      bytes: c.bytes,
      list: c.all,
    }));
  }

  private work(conn: string): Work {
    let c = this.conversations.get(conn);
    if (c === undefined) {
      c = { open: new Map(), all: [], answered: [], maxOutstanding: 0, bytes: { sends: 0, rdmaRead: 0, rdmaWrite: 0 }, seenPsns: new Set() };
      this.conversations.set(conn, c);
    }
    return c;
  }
}
