/**
 * captures/iser.pcap: iSER (RFC 7145) between two roce-ts stacks on the in-memory link (link MTU
 * 1500: path MTU 1024), taken at the initiator's NIC (198.18.0.1). The initiator connects through
 * the RDMA CM to the target (198.18.0.2) on the iSCSI port 3260 with the iSER CM private data (Z
 * and I set, as Linux iser sends them from a device without remote invalidation), the target's REP
 * carries the same flags, and a scripted target answers each iSCSI PDU as Linux isert would:
 *
 * - Login request (key=value text, in SEND FIRST + LAST) and Login Response;
 * - Text (SendTargets=All) and its response; NOP-Out and NOP-In;
 * - TEST UNIT READY, INQUIRY (the target RDMA WRITEs 36 bytes to the read STag), READ CAPACITY(16),
 *   REPORT LUNS, READ(10) of 4096 bytes (RDMA WRITE, 4 packets), WRITE(10) of 4096 bytes (the
 *   target RDMA READs the write STag: 4 response packets), READ(16) past the end (CHECK
 *   CONDITION with sense data), WRITE(16) of 512 bytes;
 * - a Task Management ABORT TASK and its response; Logout and its response;
 * - then a second connection whose CM is not in the capture (QPs connected directly): a NOP-Out and
 *   NOP-In, an iSER message decoded only with --decode-as qpn=Q=iser.
 *
 * Deterministic: fixed seeds on the virtual clock. The messages are built with ulp/iser/.
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
import { connectRc } from './sim-rc';
import { ISER_PORT } from '../../ulp/iser/iser-decoder';
import { emitIserCmPrivateData, ISER_CM_SEND_W_INV_NOT_USED, ISER_CM_ZBVA_NOT_USED } from '../../ulp/iser/cm-private-data';
import { controlHeader, type IserControl } from '../../ulp/iser/iser-header';
import { emitIserMessage, parseIserMessage } from '../../ulp/iser/iser-message';
import type { IscsiPdu } from '../../ulp/iser/iscsi-pdu';
import { keyValues } from '../../ulp/iser/iscsi-pdu';
import { pduDetails } from '../../ulp/iser/iscsi-details';
import * as B from '../../ulp/iser/iscsi-builders';
import { ScsiOpcode, rwCdb } from '../../ulp/iser/scsi-cdb';

const ISID = Uint8Array.of(0x80, 0x00, 0x23, 0x3d, 0x00, 0x00);
const LUN = 0x0000_0000_0000_0000n;
const BLOCKS = 2048n;

interface End {
  qp: QueuePair;
  cq: CompletionQueue;
  mr: MemoryRegion;
}

function ends(dev: Device): End {
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
  for (const wc of got) if (wc.status !== WcStatus.SUCCESS) throw new Error(`iSER sample: work completion ${wc.wrId} ended ${wc.status} ${wc.vendorErr}`);
  if (got.length < n) throw new Error('iSER sample: a completion never came');
  return got;
}

const OUT_AT = 0;
const IN_AT = 16384;
const DATA_AT = 32768;

/** Builds the capture's bytes. */
export function iserCapture(): Uint8Array {
  const tap = new PcapTap({ where: 'host-a' });
  const sim = createSimPair({ seed: 3260, tap, linkMtu: 1500 });
  const clock = sim.clock;
  const iniCm = new RdmaCm(sim.a, { seed: 21 });
  const tgtCm = new RdmaCm(sim.b, { seed: 22 });
  const cmFlags = ISER_CM_ZBVA_NOT_USED | ISER_CM_SEND_W_INV_NOT_USED;
  let tgt: End | null = null;
  tgtCm.listen(ISER_PORT, (e: RdmaCmEvent) => {
    if (e.type !== 'CONNECT_REQUEST') return;
    const t = ends(sim.b);
    tgt = t;
    e.id.accept(t.qp, { privateData: emitIserCmPrivateData(cmFlags) });
  });
  const ini = ends(sim.a);
  const events: RdmaCmEvent[] = [];
  iniCm.connect({ dst: '198.18.0.2', port: ISER_PORT, qp: ini.qp, param: { privateData: emitIserCmPrivateData(cmFlags) } }, (e) => events.push(e));
  clock.runWhile(() => events.length === 0, 10_000_000);
  clock.runUntil(clock.now() + 100_000);
  const target = tgt as End | null;
  if (events[0]?.type !== 'ESTABLISHED' || target === null) throw new Error('iSER sample: the CM connection failed');

  let cmdSn = 1;
  let statSn = 0x1000;
  /** One exchange: the initiator sends `pdu` behind `header`; the target answers (after any RDMA of `data`) with `answer`. */
  const exchange = (i: End, t: End, header: IserControl, pdu: IscsiPdu, answer: (req: IscsiPdu, h: IserControl) => IscsiPdu, sendFlagsCount = 2): void => {
    const msg = emitIserMessage({ header, pdu });
    t.qp.postRecv({ wrId: 1, sgList: [t.mr.sge(IN_AT, 16384)] });
    i.qp.postRecv({ wrId: 2, sgList: [i.mr.sge(IN_AT, 16384)] });
    i.mr.buffer.set(msg, OUT_AT);
    i.qp.postSend({ wrId: 3, opcode: WrOpcode.SEND, sgList: [i.mr.sge(OUT_AT, msg.length)], sendFlags: SendFlags.SIGNALED });
    const [got] = waitFor(clock, t.cq);
    const rx = t.mr.buffer.slice(IN_AT, IN_AT + (got?.byteLen ?? 0));
    const m = parseIserMessage(new DataView(rx.buffer), 0, rx.length);
    if (m.pdu === null || m.header.opcode !== 1) throw new Error('iSER sample: the target got no PDU');
    const reply = emitIserMessage({ header: controlHeader(null, null), pdu: answer(m.pdu, m.header) });
    t.mr.buffer.set(reply, OUT_AT);
    t.qp.postSend({ wrId: 4, opcode: WrOpcode.SEND, sgList: [t.mr.sge(OUT_AT, reply.length)], sendFlags: SendFlags.SIGNALED });
    waitFor(clock, i.cq, sendFlagsCount);
    waitFor(clock, t.cq);
  };
  const tseq = (req: IscsiPdu) => ({ itt: req.initiatorTaskTag, statSn: statSn++, expCmdSn: cmdSn, maxCmdSn: cmdSn + 31 });
  const iseq = (itt: number, immediate = false) => {
    const s = { itt, cmdSn, expStatSn: statSn };
    if (!immediate) cmdSn++;
    return s;
  };
  const none = controlHeader(null, null);

  const loginPairs = [
    'InitiatorName=iqn.2004-10.com.ubuntu:01:roce-ts',
    'TargetName=iqn.2024-01.io.roce-ts:target0',
    'SessionType=Normal',
    'RDMAExtensions=Yes',
    'HeaderDigest=None',
    'DataDigest=None',
    'MaxRecvDataSegmentLength=8192',
    'InitialR2T=Yes',
    'ImmediateData=No',
    'MaxBurstLength=262144',
    'FirstBurstLength=65536',
    'MaxOutstandingUnexpectedPDUs=0',
    'InitiatorRecvDataSegmentLength=8192',
    'TargetRecvDataSegmentLength=8192',
    `X-com.roce-ts.padding=${'p'.repeat(600)}`,
  ];
  exchange(ini, target, none, B.loginRequestPdu({ ...iseq(0, true), isid: ISID, tsih: 0, cid: 0, csg: 1, nsg: 3, transit: true, pairs: loginPairs }), (req) =>
    B.loginResponsePdu({
      ...tseq(req),
      isid: ISID,
      tsih: 1,
      csg: 1,
      nsg: 3,
      transit: true,
      statusClass: 0,
      statusDetail: 0,
      pairs: ['RDMAExtensions=Yes', 'MaxRecvDataSegmentLength=8192', 'TargetPortalGroupTag=1'],
    }),
  );
  exchange(ini, target, none, B.textRequestPdu({ ...iseq(1), pairs: ['SendTargets=All'] }), (req) =>
    B.textResponsePdu({ ...tseq(req), pairs: ['TargetName=iqn.2024-01.io.roce-ts:target0', 'TargetAddress=198.18.0.2:3260,1'] }),
  );
  exchange(ini, target, none, B.nopOutPdu({ ...iseq(2, true), ping: Uint8Array.of(0x70, 0x69, 0x6e, 0x67) }), (req) =>
    B.nopInPdu({ ...tseq(req), ping: req.data }),
  );

  /** A SCSI command: `dir` says which STag the header names; the target moves `len` bytes before it answers. */
  const scsi = (itt: number, cdb: Uint8Array, dir: 'read' | 'write' | 'none', len: number, status = 0, sense?: Uint8Array): void => {
    // Each task its own buffer, as an initiator registers one per I/O: a buffer filled by the CPU
    // after an earlier RDMA WRITE into it would read back bytes the wire never showed.
    const at = DATA_AT + (itt - 0x10) * 4096;
    const stag = { stag: ini.mr.rkey, offset: ini.mr.addr(at) };
    const header = controlHeader(dir === 'write' ? stag : null, dir === 'read' ? stag : null);
    if (dir === 'write') ini.mr.buffer.fill(0x57, at, at + len);
    const pdu = B.scsiCommandPdu({ ...iseq(itt), lun: LUN, read: dir === 'read', write: dir === 'write', edtl: len, cdb });
    exchange(ini, target, header, pdu, (req, h) => {
      const d = pduDetails(req, keyValues);
      if (status === 0 && h.rsv) {
        target.mr.buffer.fill(0x52, DATA_AT, DATA_AT + len);
        target.qp.postSend({
          wrId: 5,
          opcode: WrOpcode.RDMA_WRITE,
          sgList: [target.mr.sge(DATA_AT, len)],
          rdma: { remoteAddr: h.readBaseOffset, rkey: h.readStag },
          sendFlags: SendFlags.SIGNALED,
        });
        waitFor(clock, target.cq);
      }
      if (status === 0 && h.wsv) {
        target.qp.postSend({
          wrId: 6,
          opcode: WrOpcode.RDMA_READ,
          sgList: [target.mr.sge(DATA_AT, len)],
          rdma: { remoteAddr: h.writeBaseOffset, rkey: h.writeStag },
          sendFlags: SendFlags.SIGNALED,
        });
        waitFor(clock, target.cq);
      }
      const residual = status === 0 ? 0 : (d.scsiCommand?.expectedDataTransferLength ?? 0);
      return B.scsiResponsePdu({ ...tseq(req), status, residual, underflow: residual > 0, ...(sense === undefined ? {} : { sense }) });
    });
  };
  const cdb = (...b: number[]) => {
    const c = new Uint8Array(16);
    c.set(b);
    return c;
  };
  scsi(0x10, cdb(ScsiOpcode.TEST_UNIT_READY), 'none', 0);
  scsi(0x11, cdb(ScsiOpcode.INQUIRY, 0, 0, 0, 36), 'read', 36);
  scsi(0x12, cdb(ScsiOpcode.SERVICE_ACTION_IN_16, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32), 'read', 32);
  scsi(0x13, cdb(ScsiOpcode.REPORT_LUNS, 0, 0, 0, 0, 0, 0, 0, 0, 0x10), 'read', 16);
  scsi(0x14, rwCdb(ScsiOpcode.READ_10, 16n, 8), 'read', 4096);
  scsi(0x15, rwCdb(ScsiOpcode.WRITE_10, 24n, 8), 'write', 4096);
  // Fixed-format sense: ILLEGAL REQUEST, LOGICAL BLOCK ADDRESS OUT OF RANGE (ASC 0x21).
  const sense = new Uint8Array(18);
  sense.set([0x70, 0, 0x05, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x21, 0]);
  scsi(0x16, rwCdb(ScsiOpcode.READ_16, BLOCKS, 8), 'read', 4096, 0x02, sense);
  scsi(0x17, rwCdb(ScsiOpcode.WRITE_16, 32n, 1), 'write', 512);
  exchange(ini, target, none, B.tmfRequestPdu({ ...iseq(0x18, true), fn: 1, lun: LUN, referencedTaskTag: 0x16, refCmdSn: 9 }), (req) =>
    B.tmfResponsePdu({ ...tseq(req), response: 1 }),
  );
  exchange(ini, target, none, B.logoutRequestPdu({ ...iseq(0x19, true), reason: 0, cid: 0 }), (req) =>
    B.logoutResponsePdu({ ...tseq(req), response: 0, time2Wait: 0, time2Retain: 0 }),
  );

  // A connection whose CM is not in the capture: only --decode-as makes it iSER.
  const i2 = ends(sim.a);
  const t2 = ends(sim.b);
  connectRc(sim, i2.qp, t2.qp, 0x100, 0x200);
  exchange(i2, t2, none, B.nopOutPdu({ itt: 0x20, cmdSn: 1, expStatSn: 1 }), (req) =>
    B.nopInPdu({ itt: req.initiatorTaskTag, statSn: 1, expCmdSn: 2, maxCmdSn: 33 }),
  );
  clock.runUntil(clock.now() + 1_000_000);
  return tap.bytes();
}
