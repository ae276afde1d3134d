/**
 * captures/nvme-rdma.pcap: NVMe over Fabrics over RDMA between two roce-ts stacks on the in-memory
 * link (link MTU 1500: path MTU 1024), taken at the host's NIC. The host (198.18.0.1) connects
 * through the RDMA CM to the controller (198.18.0.2) on the NVMe-oF port 4420 with NVMe private data,
 * and a scripted controller answers each command capsule as Linux nvmet-rdma would:
 *
 * - admin queue (qid 0): Connect with its 1024 bytes of data in the capsule (SEND FIRST + LAST),
 *   Property Get of CAP, Property Set of CC.EN, Identify Controller with a keyed SGL (answered by an
 *   RDMA WRITE of 4096 bytes and a CQE);
 * - I/O queue (qid 1): Connect, a Write of 512 bytes in the capsule, a Read past the namespace's
 *   end (CQE status LBA Out of Range, DNR), a Write of 4096 bytes with a keyed SGL (the controller
 *   fetches the data with an RDMA READ: four response packets), a Read of 4096 bytes into a
 *   fast-registered region with a keyed SGL that asks for invalidation (RDMA WRITE, then the CQE in
 *   a SEND with Invalidate);
 * - a third CM REQ, for qid 9 with a send queue larger than the controller allows: REJ with the
 *   NVMe-oF status "invalid host SQ size".
 *
 * Deterministic: fixed seeds on the virtual clock. The capsules are built and read with
 * ulp/nvme-rdma/capsule.ts.
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { RdmaCm, type RdmaCmEvent } from '../../stack/cm/rdma-cm';
import type { Device } from '../../stack/device';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus } from '../../stack/work-completion';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { VirtualClock } from '../../base/clock';
import { emitNvmeCmRej, emitNvmeCmRep, emitNvmeCmReq, parseNvmeCmReq } from '../../ulp/nvme-rdma/cm-private-data';
import { decodeCommandCapsule, emitCommandCapsule, emitResponseCapsule } from '../../ulp/nvme-rdma/capsule';
import { emitConnectData } from '../../ulp/nvme-rdma/fabrics-command';
import { FABRICS_OPCODE, FabricsType, AdminOpcode, IoOpcode } from '../../ulp/nvme-rdma/opcode-names';
import { SQE_FLAGS_SGL_METABUF, dword10, rwDwords, type Sqe } from '../../ulp/nvme-rdma/sqe';
import { inCapsuleSgl, keyedSgl, SglSubtype, SglType, type SglDescriptor } from '../../ulp/nvme-rdma/sgl';
import { StatusCodeType, statusField } from '../../ulp/nvme-rdma/cqe';
import { NVME_RDMA_PORT } from '../../ulp/nvme-rdma/nvme-decoder';

const SUBNQN = 'nqn.2024-01.io.roce-ts:sample';
const HOSTNQN = 'nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-0000000000a1';
const HOST_ID = Uint8Array.from({ length: 16 }, (_, i) => 0xa0 + i);
const CNTLID = 1;
/** The controller's largest send queue (its MQES + 1). */
const MAX_SQ = 128;
/** Namespace 1's size in 512-byte blocks. */
const NS_BLOCKS = 2048n;
const CAP = 0x0000_0020_3c03_007fn;

interface Queue {
  qid: number;
  hostQp: QueuePair;
  hostCq: CompletionQueue;
  hostMr: MemoryRegion;
  tgtQp: QueuePair;
  tgtCq: CompletionQueue;
  tgtMr: MemoryRegion;
  sqHead: number;
}

const HOST_CAPSULE_AT = 0;
const HOST_CQE_AT = 16384;
const HOST_DATA_AT = 32768;
const TGT_RECV_AT = 0;
const TGT_OUT_AT = 32768;

function ends(dev: Device): { qp: QueuePair; cq: CompletionQueue; mr: MemoryRegion } {
  const pd = dev.allocPd();
  const cq = dev.createCq(256);
  const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
  const mr = dev.regMr(pd, new Uint8Array(65536), Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
  return { qp, cq, mr };
}

function waitFor(clock: VirtualClock, cq: CompletionQueue, n = 1): ReturnType<CompletionQueue['poll']> {
  const got: ReturnType<CompletionQueue['poll']> = [];
  clock.runWhile(() => {
    got.push(...cq.poll());
    return got.length < n;
  }, 10_000_000);
  for (const wc of got) if (wc.status !== WcStatus.SUCCESS) throw new Error(`NVMe sample: work completion ${wc.wrId} ended ${wc.status} ${wc.vendorErr}`);
  if (got.length < n) throw new Error('NVMe sample: a completion never came');
  return got;
}

/** Builds the capture's bytes. */
export function nvmeRdmaCapture(): Uint8Array {
  const tap = new PcapTap({ where: 'host-a' });
  const sim = createSimPair({ seed: 4420, tap, linkMtu: 1500 });
  const clock = sim.clock;
  const hostCm = new RdmaCm(sim.a, { seed: 11 });
  const tgtCm = new RdmaCm(sim.b, { seed: 12 });
  let pendingTarget: ReturnType<typeof ends> | null = null;
  tgtCm.listen(NVME_RDMA_PORT, (e: RdmaCmEvent) => {
    if (e.type !== 'CONNECT_REQUEST') return;
    const pd = e.privateData;
    const req = parseNvmeCmReq(new DataView(pd.buffer, pd.byteOffset, pd.byteLength), 0, pd.byteLength);
    // nvmet_rdma_parse_cm_connect_req(): a send queue deeper than the controller's is refused.
    if (req.hsqsize + 1 > MAX_SQ) {
      e.id.reject(emitNvmeCmRej({ recfmt: 0, status: 0x04 }));
      return;
    }
    const t = ends(sim.b);
    pendingTarget = t;
    e.id.accept(t.qp, { privateData: emitNvmeCmRep({ recfmt: 0, crqsize: req.hrqsize }) });
  });

  const connect = (qid: number, hsqsize: number): Queue | null => {
    const h = ends(sim.a);
    const events: RdmaCmEvent[] = [];
    pendingTarget = null;
    hostCm.connect(
      {
        dst: '198.18.0.2',
        port: NVME_RDMA_PORT,
        qp: h.qp,
        param: { privateData: emitNvmeCmReq({ recfmt: 0, qid, hrqsize: 32, hsqsize, cntlid: qid === 0 ? 0xffff : CNTLID }) },
      },
      (e) => events.push(e),
    );
    clock.runWhile(() => events.length === 0, 10_000_000);
    clock.runUntil(clock.now() + 100_000);
    if (events[0]?.type !== 'ESTABLISHED' || pendingTarget === null) return null;
    const t: ReturnType<typeof ends> = pendingTarget;
    return { qid, hostQp: h.qp, hostCq: h.cq, hostMr: h.mr, tgtQp: t.qp, tgtCq: t.cq, tgtMr: t.mr, sqHead: 0 };
  };

  /** The host sends a capsule; the controller receives it and answers with `answer`, which returns the CQE's result and status. */
  const command = (
    q: Queue,
    sqe: Sqe,
    fabrics: Parameters<typeof emitCommandCapsule>[1],
    data: Uint8Array,
    answer: (c: ReturnType<typeof decodeCommandCapsule>) => { result: bigint; status: number; invalidate?: number },
  ): void => {
    const capsule = emitCommandCapsule(sqe, fabrics, data);
    q.tgtQp.postRecv({ wrId: 1, sgList: [q.tgtMr.sge(TGT_RECV_AT, 16384)] });
    q.hostQp.postRecv({ wrId: 2, sgList: [q.hostMr.sge(HOST_CQE_AT, 16)] });
    q.hostMr.buffer.set(capsule, HOST_CAPSULE_AT);
    q.hostQp.postSend({ wrId: 3, opcode: WrOpcode.SEND, sgList: [q.hostMr.sge(HOST_CAPSULE_AT, capsule.length)], sendFlags: SendFlags.SIGNALED });
    const [got] = waitFor(clock, q.tgtCq);
    const received = q.tgtMr.buffer.subarray(TGT_RECV_AT, TGT_RECV_AT + (got?.byteLen ?? 0));
    const c = decodeCommandCapsule(new DataView(received.buffer, received.byteOffset, received.byteLength), 0, received.length);
    const { result, status, invalidate } = answer(c);
    q.sqHead = (q.sqHead + 1) % 32;
    const cqe = emitResponseCapsule({ result, sqHead: q.sqHead, sqId: q.qid, commandId: c.sqe.commandId, status });
    q.tgtMr.buffer.set(cqe, TGT_OUT_AT);
    q.tgtQp.postSend({
      wrId: 4,
      opcode: invalidate === undefined ? WrOpcode.SEND : WrOpcode.SEND_WITH_INV,
      sgList: [q.tgtMr.sge(TGT_OUT_AT, 16)],
      sendFlags: SendFlags.SIGNALED,
      ...(invalidate === undefined ? {} : { invalidateRkey: invalidate }),
    });
    waitFor(clock, q.hostCq, 2);
    waitFor(clock, q.tgtCq);
  };

  /** The controller writes `len` bytes into the host memory a keyed SGL names. */
  const writeToHost = (q: Queue, sgl: SglDescriptor, len: number, fill: number): void => {
    q.tgtMr.buffer.fill(fill, TGT_OUT_AT + 64, TGT_OUT_AT + 64 + len);
    q.tgtQp.postSend({
      wrId: 5,
      opcode: WrOpcode.RDMA_WRITE,
      sgList: [q.tgtMr.sge(TGT_OUT_AT + 64, len)],
      rdma: { remoteAddr: sgl.address, rkey: sgl.key ?? 0 },
      sendFlags: SendFlags.SIGNALED,
    });
    waitFor(clock, q.tgtCq);
  };

  /** The controller reads `len` bytes from the host memory a keyed SGL names (a Write's data). */
  const readFromHost = (q: Queue, sgl: SglDescriptor, len: number): void => {
    q.tgtQp.postSend({
      wrId: 7,
      opcode: WrOpcode.RDMA_READ,
      sgList: [q.tgtMr.sge(TGT_RECV_AT, len)],
      rdma: { remoteAddr: sgl.address, rkey: sgl.key ?? 0 },
      sendFlags: SendFlags.SIGNALED,
    });
    waitFor(clock, q.tgtCq);
  };

  const sqe = (opcode: number, cid: number, nsid: number, sgl: SglDescriptor, cdw: Uint8Array = new Uint8Array(24)): Sqe => ({
    opcode,
    flags: SQE_FLAGS_SGL_METABUF,
    commandId: cid,
    nsid,
    metadata: 0n,
    sgl,
    cdw10to15: cdw,
  });
  const ok = { result: 0n, status: 0 };
  const connectCmd = (q: Queue, cid: number): void => {
    const data = emitConnectData({ hostId: HOST_ID, cntlid: q.qid === 0 ? 0xffff : CNTLID, subnqn: SUBNQN, hostnqn: HOSTNQN });
    command(
      q,
      sqe(FABRICS_OPCODE, cid, 0, inCapsuleSgl(data.length)),
      { fctype: FabricsType.CONNECT, connect: { recfmt: 0, qid: q.qid, sqsize: 31, cattr: 0, kato: q.qid === 0 ? 120000 : 0 }, property: null },
      data,
      () => ({ result: BigInt(CNTLID), status: 0 }),
    );
  };

  const admin = connect(0, 31);
  if (admin === null) throw new Error('NVMe sample: the admin queue did not connect');
  connectCmd(admin, 0);
  command(
    admin,
    sqe(FABRICS_OPCODE, 1, 0, inCapsuleSgl(0)),
    { fctype: FabricsType.PROPERTY_GET, connect: null, property: { attrib: 1, offset: 0x00, value: null } },
    new Uint8Array(0),
    () => ({
      result: CAP,
      status: 0,
    }),
  );
  command(
    admin,
    sqe(FABRICS_OPCODE, 2, 0, inCapsuleSgl(0)),
    { fctype: FabricsType.PROPERTY_SET, connect: null, property: { attrib: 0, offset: 0x14, value: 0x460001n } },
    new Uint8Array(0),
    () => ok,
  );
  const identify = keyedSgl(admin.hostMr.addr(HOST_DATA_AT), 4096, admin.hostMr.rkey);
  command(admin, sqe(AdminOpcode.IDENTIFY, 3, 0, identify, dword10(1)), null, new Uint8Array(0), () => {
    writeToHost(admin, identify, 4096, 0x49);
    return ok;
  });

  const io = connect(1, 31);
  if (io === null) throw new Error('NVMe sample: the I/O queue did not connect');
  connectCmd(io, 0);
  const payload = Uint8Array.from({ length: 512 }, (_, i) => (i * 7) & 0xff);
  command(io, sqe(IoOpcode.WRITE, 1, 1, inCapsuleSgl(512), rwDwords(16n, 1)), null, payload, () => ok);
  command(io, sqe(IoOpcode.READ, 2, 1, keyedSgl(io.hostMr.addr(HOST_DATA_AT), 4096, io.hostMr.rkey), rwDwords(NS_BLOCKS, 8)), null, new Uint8Array(0), () => ({
    result: 0n,
    status: statusField(StatusCodeType.GENERIC, 0x80, true),
  }));

  const written = keyedSgl(io.hostMr.addr(HOST_DATA_AT), 4096, io.hostMr.rkey);
  io.hostMr.buffer.fill(0x57, HOST_DATA_AT, HOST_DATA_AT + 4096);
  command(io, sqe(IoOpcode.WRITE, 3, 1, written, rwDwords(24n, 8)), null, new Uint8Array(0), (c) => {
    readFromHost(io, c.sqe.sgl, 4096);
    return ok;
  });

  // The invalidating Read comes last on its queue: roce replay cannot know the fast-registered region, and its
  // responder, failing the invalidation as rxe does, moves the QP to the error state.
  // The host's read buffer: a fast-registered region, so that the controller may invalidate its key.
  const pd = io.hostQp.pd;
  const fast = sim.a.allocMr(pd, 1);
  sim.a.mapMrSg(fast, new Uint8Array(4096), 0x7f00_0000_0000n);
  const key = ((fast.lkey & ~0xff) | 0x5a) >>> 0;
  io.hostQp.postSend({
    wrId: 6,
    opcode: WrOpcode.REG_MR,
    sendFlags: SendFlags.SIGNALED,
    reg: { mr: fast, key, access: Access.LOCAL_WRITE | Access.REMOTE_WRITE },
  });
  waitFor(clock, io.hostCq);
  const read = keyedSgl(0x7f00_0000_0000n, 4096, key, true);
  command(io, sqe(IoOpcode.READ, 4, 1, read, rwDwords(16n, 8)), null, new Uint8Array(0), (c) => {
    writeToHost(io, c.sqe.sgl, 4096, 0x52);
    return {
      ...ok,
      ...(c.sqe.sgl.subtype === SglSubtype.INVALIDATE_KEY && c.sqe.sgl.type === SglType.KEYED_DATA_BLOCK ? { invalidate: c.sqe.sgl.key ?? 0 } : {}),
    };
  });
  if (connect(9, 255) !== null) throw new Error('NVMe sample: the controller accepted a send queue it cannot hold');
  clock.runUntil(clock.now() + 1_000_000);
  return tap.bytes();
}
