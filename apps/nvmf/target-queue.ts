/**
 * One queue of the target (NVMe over Fabrics 1.1, RDMA transport binding; the model is Linux
 * drivers/nvme/target/rdma.c): an RC QP accepted through the RDMA CM with a receive posted for each
 * of the host's send-queue entries (a 64-byte SQE and up to INLINE_DATA_SIZE bytes in the capsule).
 * Each command capsule is read, its SGL checked, a Write's keyed data fetched with an RDMA READ, the
 * command handled, a Read's data put in the host's memory with an RDMA WRITE, and the CQE sent as a
 * SEND, or a SEND with Invalidate of the host's key when its SGL asked for it (sub type 0xF).
 * Commands are taken one at a time, in order; a malformed capsule is answered with an NVMe status
 * when its command ID can be read and counted otherwise, never thrown.
 */
import type { Device } from '../../stack/device';
import { QpType, QpState } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WC_STATUS_NAMES, WcOpcode, WcStatus, type WorkCompletion } from '../../stack/work-completion';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { RdmaCmEvent, RdmaCmId } from '../../stack/cm/rdma-cm';
import { type NvmeCommand, decodeCommandCapsule, emitResponseCapsule } from '../../ulp/nvme-rdma/capsule';
import { SQE_FLAGS_FUSE_MASK, SQE_FLAGS_PSDT_MASK, SQE_FLAGS_SGL_METABUF, SQE_LEN } from '../../ulp/nvme-rdma/sqe';
import { SglSubtype, SglType } from '../../ulp/nvme-rdma/sgl';
import { FABRICS_OPCODE, FabricsType } from '../../ulp/nvme-rdma/opcode-names';
import { CONNECT_DATA_LEN, parseConnectData } from '../../ulp/nvme-rdma/fabrics-command';
import { WireError } from '../../packets/errors';
import { type Outcome, Sc, generic } from './command-outcome';
import { INLINE_DATA_SIZE, MAX_TRANSFER, type Subsystem } from './controller';
import { type QueueContext, handleAdmin } from './admin-handlers';
import { checkIo, handleIo } from './io-handlers';

/** Bytes of one receive: the SQE and the largest in-capsule data. */
export const RECV_SLOT = SQE_LEN + INLINE_DATA_SIZE;
const WR_SEND = 1_000_000n;
const WR_READ = 2_000_000n;
const WR_WRITE = 3_000_000n;

/** The NVMe opcode's data transfer bits (1:0; NVMe Base 2.0, "Opcodes"): 01 moves data from host to controller. */
function hostToController(nvmeOp: number): boolean {
  return (nvmeOp & DIRECTION_BITS) === 1;
}
const DIRECTION_BITS = 3;

/** A command waiting on an RDMA READ (its Write data) or an RDMA WRITE (its Read data) before the next may start. */
interface Current {
  cmd: NvmeCommand;
  stage: 'fetch' | 'write';
}

export class TargetQueue {
  readonly ctx: QueueContext;
  readonly qp: QueuePair;
  readonly cq: CompletionQueue;
  private readonly recvMr: MemoryRegion;
  private readonly cqeMr: MemoryRegion;
  private readonly dataMr: MemoryRegion;
  private readonly incoming: Uint8Array[] = [];
  private current: Current | null = null;
  private sendSlot = 0;
  private sendsOut = 0;
  private readonly maxSends: number;
  private sqHead = 0;
  id: RdmaCmId | null = null;
  /** The host disconnected (DREQ) or the connection failed: the queue is to be closed. */
  disconnected = false;
  /** Why the queue failed (a completion error), or null. */
  failure: string | null = null;
  commands = 0;
  failedCommands = 0;
  malformed = 0;
  invalidations = 0;

  constructor(
    private readonly dev: Device,
    private readonly sub: Subsystem,
    qid: number,
    size: number,
    private readonly nowMs: () => number,
  ) {
    this.ctx = { qid, size, controller: null };
    const pd = dev.allocPd();
    this.maxSends = size + 2;
    this.cq = dev.createCq(size * 2 + this.maxSends + 4);
    this.qp = dev.createQp(pd, {
      qpType: QpType.RC,
      sendCq: this.cq,
      recvCq: this.cq,
      cap: { maxSendWr: this.maxSends + 2, maxRecvWr: size, maxSendSge: 1, maxRecvSge: 1 },
    });
    this.recvMr = dev.regMr(pd, new Uint8Array(size * RECV_SLOT), Access.LOCAL_WRITE);
    this.cqeMr = dev.regMr(pd, new Uint8Array(this.maxSends * 16), 0);
    this.dataMr = dev.regMr(pd, new Uint8Array(MAX_TRANSFER), Access.LOCAL_WRITE);
  }

  /** A receive for every entry of the host's send queue, before the REP goes out. */
  postReceives(): void {
    for (let i = 0; i < this.ctx.size; i++) this.postRecv(i);
  }

  private postRecv(slot: number): void {
    this.qp.postRecv({ wrId: BigInt(slot), sgList: [this.recvMr.sge(slot * RECV_SLOT, RECV_SLOT)] });
  }

  onEvent = (e: RdmaCmEvent): void => {
    if (e.type === 'DISCONNECTED' || e.type === 'REJECTED' || e.type === 'UNREACHABLE' || e.type === 'CONNECT_ERROR') this.disconnected = true;
  };

  /** Takes what completed and moves the commands on. */
  step(): void {
    if (this.failure !== null) return;
    for (;;) {
      const wcs = this.cq.poll(16);
      if (wcs.length === 0) break;
      for (const wc of wcs) this.completion(wc);
      if (this.failure !== null) return;
    }
    while (this.current === null && this.incoming.length > 0 && this.sendsOut < this.maxSends) this.start(this.incoming.shift() as Uint8Array);
  }

  private completion(wc: WorkCompletion): void {
    if (wc.status !== WcStatus.SUCCESS) {
      // After the host's DREQ the QP's receives come back flushed: nothing failed.
      if (wc.status === WcStatus.WR_FLUSH_ERR && this.disconnected) return;
      const why = this.qp.errorReason !== '' ? `: ${this.qp.errorReason}` : '';
      this.failure = `queue ${this.ctx.qid}: completion ${WC_STATUS_NAMES[wc.status] ?? wc.status}${wc.vendorErr !== '' ? ` (${wc.vendorErr})` : ''}${why}`;
      return;
    }
    if (wc.opcode === WcOpcode.RECV) {
      const slot = Number(wc.wrId);
      const at = slot * RECV_SLOT;
      this.incoming.push(this.recvMr.buffer.slice(at, at + wc.byteLen));
      this.postRecv(slot);
    } else if (wc.wrId >= WR_SEND && wc.wrId < WR_READ) this.sendsOut--;
    else if (wc.wrId === WR_READ && this.current?.stage === 'fetch') {
      const c = this.current;
      this.current = null;
      const data = this.dataMr.buffer.slice(0, c.cmd.sqe.sgl.length);
      this.finish(c.cmd, this.dispatch(withConnectData(c.cmd, data), data));
    } else if (wc.wrId === WR_WRITE && this.current?.stage === 'write') this.current = null;
  }

  /** A capsule received: decoded (a malformed one answered or counted), its SGL checked, its data fetched or taken from the capsule. */
  private start(bytes: Uint8Array): void {
    let cmd: NvmeCommand;
    try {
      cmd = decodeCommandCapsule(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0, bytes.length);
    } catch {
      this.malformed++;
      // Shorter than an SQE there is no command to answer (nvmet-rdma takes it as a fatal transport error; here it is counted).
      if (bytes.length >= SQE_LEN) this.respond(new DataView(bytes.buffer).getUint16(2, true), generic(Sc.INVALID_FIELD), null);
      return;
    }
    const sgl = cmd.sqe.sgl;
    const keyed = sgl.type === SglType.KEYED_DATA_BLOCK && (sgl.subtype === SglSubtype.ADDRESS || sgl.subtype === SglSubtype.INVALIDATE_KEY);
    const inCapsule = sgl.type === SglType.DATA_BLOCK && sgl.subtype === SglSubtype.OFFSET;
    const toController = cmd.sqe.opcode !== FABRICS_OPCODE && hostToController(cmd.sqe.opcode);
    let bad: Outcome | null = null;
    // PSDT must say SGLs with a metadata buffer, and no fused operation (nvmet_req_init(): Invalid Field, DNR).
    const flags = cmd.sqe.flags;
    if ((flags & SQE_FLAGS_PSDT_MASK) !== SQE_FLAGS_SGL_METABUF || (flags & SQE_FLAGS_FUSE_MASK) !== 0) bad = generic(Sc.INVALID_FIELD);
    else if (!keyed && !inCapsule) bad = generic(Sc.SGL_TYPE_INVALID);
    else if (keyed && sgl.length > MAX_TRANSFER) bad = generic(Sc.DATA_SGL_LENGTH_INVALID);
    else if (inCapsule && sgl.length > 0) {
      const isConnect = cmd.fabrics?.fctype === FabricsType.CONNECT;
      if (!toController && !isConnect) bad = generic(Sc.INVALID_FIELD);
      else if (sgl.address + BigInt(sgl.length) > BigInt(cmd.inCapsuleLength)) bad = generic(Sc.SGL_OFFSET_INVALID);
    }
    if (bad === null && this.ctx.qid !== 0 && cmd.sqe.opcode !== FABRICS_OPCODE) bad = this.ioPrecheck(cmd);
    if (bad !== null) {
      this.finish(cmd, bad);
      return;
    }
    const isConnect = cmd.fabrics?.fctype === FabricsType.CONNECT;
    if ((toController || isConnect) && keyed && sgl.length > 0) {
      // A keyed Write, or a Connect whose data the host keeps (Linux's host on the admin queue): fetch the host's data (nvmet_rdma_rdma_read).
      this.current = { cmd, stage: 'fetch' };
      this.qp.postSend({
        wrId: WR_READ,
        opcode: WrOpcode.RDMA_READ,
        sgList: [this.dataMr.sge(0, sgl.length)],
        rdma: { remoteAddr: sgl.address, rkey: sgl.key ?? 0 },
        sendFlags: SendFlags.SIGNALED,
      });
      return;
    }
    const data = inCapsule && toController ? bytes.slice(SQE_LEN + Number(sgl.address), SQE_LEN + Number(sgl.address) + sgl.length) : null;
    this.finish(cmd, this.dispatch(cmd, data));
  }

  /** An I/O queue's command before its data moves: the queue must be connected and the controller ready. */
  private ioPrecheck(cmd: NvmeCommand): Outcome | null {
    const c = this.ctx.controller;
    if (c === null || !c.ready) return generic(Sc.COMMAND_SEQUENCE_ERROR);
    return checkIo(this.sub.namespace, cmd);
  }

  private dispatch(cmd: NvmeCommand, data: Uint8Array | null): Outcome {
    const now = this.nowMs();
    if (this.ctx.qid === 0 || cmd.sqe.opcode === FABRICS_OPCODE) return handleAdmin(this.sub, this.ctx, cmd, now);
    const c = this.ctx.controller;
    if (c !== null) c.lastCommandMs = now;
    return handleIo(this.sub.namespace, cmd, data);
  }

  /** The outcome's data to the host (RDMA WRITE to a keyed SGL), then the CQE; a held command gets nothing yet. */
  private finish(cmd: NvmeCommand, o: Outcome): void {
    this.commands++;
    if (o.held === true) return;
    if (o.status !== 0) this.failedCommands++;
    const sgl = cmd.sqe.sgl;
    let wrote = false;
    if (o.status === 0 && o.data !== null && sgl.type === SglType.KEYED_DATA_BLOCK && sgl.length > 0) {
      const n = Math.min(o.data.length, sgl.length);
      this.dataMr.buffer.set(o.data.subarray(0, n), 0);
      this.qp.postSend({
        wrId: WR_WRITE,
        opcode: WrOpcode.RDMA_WRITE,
        sgList: [this.dataMr.sge(0, n)],
        rdma: { remoteAddr: sgl.address, rkey: sgl.key ?? 0 },
        sendFlags: SendFlags.SIGNALED,
      });
      wrote = true;
    }
    const invalidate = sgl.type === SglType.KEYED_DATA_BLOCK && sgl.subtype === SglSubtype.INVALIDATE_KEY ? (sgl.key ?? 0) : null;
    this.respond(cmd.sqe.commandId, o, invalidate);
    if (wrote) this.current = { cmd, stage: 'write' };
  }

  private respond(commandId: number, o: Outcome, invalidate: number | null): void {
    this.sqHead = (this.sqHead + 1) % this.ctx.size;
    const slot = this.sendSlot;
    this.sendSlot = (slot + 1) % this.maxSends;
    this.cqeMr.buffer.set(emitResponseCapsule({ result: o.result, sqHead: this.sqHead, sqId: this.ctx.qid, commandId, status: o.status }), slot * 16);
    // The CQE follows the RDMA WRITE on the same QP: RC delivers them in order (IBTA §9.5), so the host sees the data first.
    this.qp.postSend({
      wrId: WR_SEND + BigInt(slot),
      opcode: invalidate === null ? WrOpcode.SEND : WrOpcode.SEND_WITH_INV,
      sgList: [this.cqeMr.sge(slot * 16, 16)],
      sendFlags: SendFlags.SIGNALED,
      ...(invalidate === null ? {} : { invalidateRkey: invalidate }),
    });
    if (invalidate !== null) this.invalidations++;
    this.sendsOut++;
  }

  close(): void {
    try {
      if (this.qp.state !== QpState.RESET) this.qp.modify({ qpState: QpState.RESET });
      this.dev.destroyQp(this.qp);
    } catch {
      // the device may already be closing
    }
  }
}

/** A Connect whose data was fetched by RDMA READ, with that data parsed; a Connect's data that does not parse leaves it without (Invalid Field). */
function withConnectData(cmd: NvmeCommand, data: Uint8Array): NvmeCommand {
  if (cmd.fabrics?.fctype !== FabricsType.CONNECT || data.length < CONNECT_DATA_LEN) return cmd;
  try {
    return { ...cmd, connectData: parseConnectData(new DataView(data.buffer, data.byteOffset, data.byteLength), 0, data.length) };
  } catch (e) {
    if (e instanceof WireError) return cmd;
    throw e;
  }
}
