/**
 * `roce analyze`'s view of NVMe-oF: each command from its capsule to its completion, per queue.
 *
 * It takes what the NVMe-oF decoder (nvme-decoder.ts) made of each frame, in capture order, with
 * the frame's number, time, opcode and PSN, and keeps per command: when its capsule and its
 * completion were seen, the completion's status, and the RDMA transfers that moved its data (the
 * READ requests and WRITE messages whose RETH named its keyed SGL, their packets, and those sent
 * again). Per queue it reports the latency from capsule to completion (percentiles and a
 * histogram), the commands that never completed and the completions with an error status, named;
 * the invalidations a keyed SGL of type 0x4F asked for and whether the controller did them (a
 * SEND with Invalidate naming the SGL's key, NVMe-oF 1.1 §7.3.2 / NVMe over Fabrics RDMA transport
 * binding: "Remote Invalidate"); a key used by an RDMA transfer after it was invalidated; and the
 * most commands outstanding at once against the queue's size (the Connect's SQSIZE, 0's based).
 */
import { Opcode } from '../../packets/opcodes';
import type { NvmeFrame } from './nvme-decoder';
import { statusName, statusParts } from './cqe';
import { commandName } from './nvme-text';
import { FABRICS_OPCODE, FabricsType } from './opcode-names';
import { SglSubtype, SglType } from './sgl';
import { type LatencySummary, latencyFigures } from '../command-latency';

/** Where a frame sits in the capture, and what the transport layer says of it. */
export interface FrameAt {
  frame: number;
  /** Nanoseconds since the first frame of the capture. */
  timeNs: number;
  opcode: number;
  psn: number;
  /** The IETH of a SEND with Invalidate: the key it invalidates, else null. */
  invalidatedKey: number | null;
  /** The RETH's R_Key (an RDMA READ request, a WRITE's first packet), else null. */
  rkey: number | null;
}

/** One command as the capture shows it. */
export interface NvmeCommandRecord {
  commandId: number;
  opcode: number;
  name: string;
  /** Frame and time (ns) of its capsule (the LAST packet of a capsule in several). */
  frame: number;
  timeNs: number;
  /** Bytes the SGL describes (a keyed SGL's length, or the in-capsule data's). */
  dataBytes: number;
  keyed: boolean;
  /** The keyed SGL asked the controller to invalidate its key (descriptor 0x4F). */
  invalidateAsked: boolean;
  completion: { frame: number; timeNs: number; latencyNs: number; status: number; statusName: string; invalidatedKey: number | null } | null;
  /** RDMA transfers of its data: READ requests, WRITE messages, their packets and bytes, and packets seen again (resent). */
  rdma: { reads: number; writes: number; packets: number; bytes: number; resent: number };
}

/** The commands of one queue, and what is judged of them. */
export interface NvmeQueueReport {
  /** The queue's key (the controller's QP end: `address/QPN`, or a --decode-as pair). */
  queue: string;
  qid: number | null;
  /** The Connect's SQSIZE + 1: the commands the host may have outstanding; null when no Connect was seen. */
  sqSize: number | null;
  commands: number;
  completed: number;
  /** Completions whose status is not Success. */
  errors: NvmeCommandRecord[];
  /** Commands whose completion the capture does not hold. */
  neverCompleted: NvmeCommandRecord[];
  /** The most commands outstanding at once (sent, not yet completed). */
  maxOutstanding: number;
  /** Capsule to completion, in µs, over the completed commands: nearest-rank percentiles; null when none completed. */
  latencyUs: LatencySummary | null;
  /** Completed commands by latency: `[upper bound in µs, count]`, bounds doubling from 1 µs (the last bucket is open). */
  histogram: [number, number][];
  /** Data moved: by RDMA (READ responses to the controller, WRITEs to the host) and in capsules. */
  bytes: { rdmaToController: number; rdmaToHost: number; inCapsule: number };
  /** Invalidations asked for (keyed SGL 0x4F), done by a SEND with Invalidate of the SGL's key, and not done. */
  invalidation: { asked: number; done: number; notDone: NvmeCommandRecord[] };
  /** RDMA transfers that used a key after a SEND with Invalidate of it: `frame` and the key. */
  usedAfterInvalidation: { frame: number; key: number; commandId: number | null }[];
  /** Every command, in capsule order (kept for `--verbose` and JSON). */
  list: NvmeCommandRecord[];
}

export interface NvmeAnalysis {
  queues: NvmeQueueReport[];
}

interface QueueWork {
  qid: number | null;
  sqSize: number | null;
  open: Map<number, NvmeCommandRecord & { key: number | null }>;
  done: NvmeCommandRecord[];
  all: NvmeCommandRecord[];
  maxOutstanding: number;
  bytes: NvmeQueueReport['bytes'];
  invalidated: Set<number>;
  usedAfterInvalidation: NvmeQueueReport['usedAfterInvalidation'];
  /** PSNs of data packets seen, per direction, to count packets sent again. */
  seenPsns: Set<string>;
}

const WRITE_MESSAGE_STARTS = new Set<number>([Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_WRITE_ONLY, Opcode.RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE]);

export class NvmeCommandAnalysis {
  private readonly queues = new Map<string, QueueWork>();

  /** Takes the decoder's view of the next frame of the capture (null frames are skipped by the caller). */
  take(f: NvmeFrame, at: FrameAt): void {
    if (f.queue === null) return;
    const q = this.queue(f.queue, f.qid);
    if (f.qid !== null) q.qid = f.qid;
    if (f.kind === 'command' && f.command !== null) {
      const c = f.command;
      const sgl = c.sqe.sgl;
      const keyed = sgl.type === SglType.KEYED_DATA_BLOCK;
      const connect = c.fabrics?.connect ?? null;
      if (connect !== null) q.sqSize = connect.sqsize + 1;
      const rec = {
        commandId: c.sqe.commandId,
        opcode: c.sqe.opcode,
        name: commandName(c.sqe.opcode, c.fabrics?.fctype ?? null, q.qid),
        frame: at.frame,
        timeNs: at.timeNs,
        dataBytes: keyed ? sgl.length : c.inCapsuleLength,
        keyed,
        invalidateAsked: keyed && sgl.subtype === SglSubtype.INVALIDATE_KEY,
        completion: null,
        rdma: { reads: 0, writes: 0, packets: 0, bytes: 0, resent: 0 },
        key: keyed ? sgl.key : null,
      };
      q.bytes.inCapsule += c.inCapsuleLength;
      // A command ID used again before its completion: the first is forgotten (it never completed, as far as the capture shows).
      q.open.set(rec.commandId, rec);
      q.all.push(rec);
      // A key registered for a new command is valid again (the host registered it anew).
      if (rec.key !== null) q.invalidated.delete(rec.key);
      q.maxOutstanding = Math.max(q.maxOutstanding, q.open.size);
      return;
    }
    if (f.kind === 'completion' && f.completion !== null) {
      const cqe = f.completion;
      const rec = q.open.get(cqe.commandId);
      if (at.invalidatedKey !== null) q.invalidated.add(at.invalidatedKey);
      if (rec === undefined) return;
      q.open.delete(cqe.commandId);
      const isConnect = rec.opcode === FABRICS_OPCODE && f.of?.fctype === FabricsType.CONNECT;
      rec.completion = {
        frame: at.frame,
        timeNs: at.timeNs,
        latencyNs: at.timeNs - rec.timeNs,
        status: cqe.status,
        statusName: statusName(cqe.status, isConnect),
        invalidatedKey: at.invalidatedKey,
      };
      q.done.push(rec);
      return;
    }
    if (f.kind === 'data') {
      const rec = f.of === null ? undefined : q.open.get(f.of.commandId);
      const toHost = f.direction === 'to-host';
      // A key the controller invalidated (SEND with Invalidate) admits no access until the host registers it again.
      if (at.rkey !== null && q.invalidated.has(at.rkey)) q.usedAfterInvalidation.push({ frame: at.frame, key: at.rkey, commandId: f.of?.commandId ?? null });
      const seen = `${f.direction}/${at.opcode === Opcode.RC_RDMA_READ_REQUEST ? 'req' : 'data'}/${at.psn}`;
      const again = q.seenPsns.has(seen);
      q.seenPsns.add(seen);
      if (at.opcode !== Opcode.RC_RDMA_READ_REQUEST && !again) {
        if (toHost) q.bytes.rdmaToHost += f.length;
        else q.bytes.rdmaToController += f.length;
      }
      if (rec === undefined) return;
      if (at.opcode === Opcode.RC_RDMA_READ_REQUEST) rec.rdma.reads++;
      else {
        if (WRITE_MESSAGE_STARTS.has(at.opcode)) rec.rdma.writes++;
        rec.rdma.packets++;
        if (!again) rec.rdma.bytes += f.length;
      }
      if (again) rec.rdma.resent++;
    }
  }

  /** The report of every queue, in the order the capture showed them. */
  result(): NvmeAnalysis {
    return { queues: [...this.queues.entries()].map(([queue, q]) => queueReport(queue, q)) };
  }

  private queue(key: string, qid: number | null): QueueWork {
    let q = this.queues.get(key);
    if (q === undefined) {
      q = {
        qid,
        sqSize: null,
        open: new Map(),
        done: [],
        all: [],
        maxOutstanding: 0,
        bytes: { rdmaToController: 0, rdmaToHost: 0, inCapsule: 0 },
        invalidated: new Set(),
        usedAfterInvalidation: [],
        seenPsns: new Set(),
      };
      this.queues.set(key, q);
    }
    return q;
  }
}

/** Status Code Type 0 (generic), Status Code 0: Successful Completion (NVMe base specification, "Status Field"). */
function isSuccess(status: number): boolean {
  const p = statusParts(status);
  return p.sct === 0 && p.sc === 0;
}

function plain(r: NvmeCommandRecord & { key?: number | null }): NvmeCommandRecord {
  const { key: _key, ...rest } = r;
  return rest;
}

function queueReport(queue: string, q: QueueWork): NvmeQueueReport {
  const { latencyUs, histogram } = latencyFigures(q.done.map((r) => (r.completion?.latencyNs ?? 0) / 1000));
  const asked = q.all.filter((r) => r.invalidateAsked && r.completion !== null);
  const notDone = asked.filter((r) => r.completion?.invalidatedKey !== (r as NvmeCommandRecord & { key: number | null }).key);
  return {
    queue,
    qid: q.qid,
    sqSize: q.sqSize,
    commands: q.all.length,
    completed: q.done.length,
    errors: q.done.filter((r) => !isSuccess(r.completion?.status ?? 0)).map(plain),
    neverCompleted: [...q.open.values()].map(plain),
    maxOutstanding: q.maxOutstanding,
    latencyUs,
    histogram,
    bytes: q.bytes,
    invalidation: { asked: asked.length, done: asked.length - notDone.length, notDone: notDone.map(plain) },
    usedAfterInvalidation: q.usedAfterInvalidation,
    list: q.all.map(plain),
  };
}
