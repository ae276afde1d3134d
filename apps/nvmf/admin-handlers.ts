/**
 * The admin queue's commands and the Fabrics commands of every queue, as the target answers them
 * (NVMe over Fabrics 1.1 "Fabrics Commands"; NVMe Base 2.0 "Admin Command Set"; the commands Linux's
 * host and nvme-cli send at connect: Connect, Property Get/Set, Identify, Get Log Page, Set/Get
 * Features, Keep Alive, Asynchronous Event Request). A command the target does not know, or a field
 * it cannot take, gets an NVMe status, never an exception.
 */
import type { NvmeCommand } from '../../ulp/nvme-rdma/capsule';
import { cdw10 } from '../../ulp/nvme-rdma/sqe';
import { FABRICS_OPCODE, FabricsType, AdminOpcode } from '../../ulp/nvme-rdma/opcode-names';
import { CommandSc, type Outcome, Sc, generic, ok, specific } from './command-outcome';
import { AERL, CAP, type Controller, DISCOVERY_NQN, MAX_QUEUE_SIZE, Prop, type Subsystem, VS } from './controller';
import { CSI_NVM, Cns, activeNamespaces, identifyController, identifyNamespace, namespaceDescriptors } from './identify-pages';
import { DISCOVERY_LOG_LID, discoveryLog } from './discovery-log';

/** What a queue knows of itself when a command arrives: its ID and depth (from the CM REQ) and its controller once connected. */
export interface QueueContext {
  qid: number;
  /** Entries of its send queue (hsqsize + 1). */
  size: number;
  controller: Controller | null;
}

const Admin = {
  GET_LOG_PAGE: 0x02,
  IDENTIFY: AdminOpcode.IDENTIFY,
  SET_FEATURES: 0x09,
  GET_FEATURES: 0x0a,
  AER: 0x0c,
  KEEP_ALIVE: AdminOpcode.KEEP_ALIVE,
} as const;
const Feature = { VOLATILE_WRITE_CACHE: 0x06, NUMBER_OF_QUEUES: 0x07, ASYNC_EVENT_CONFIG: 0x0b, KEEP_ALIVE_TIMER: 0x0f } as const;

/** The Connect's "invalid parameters" result: IATTR (bit 16: the field is in the data) and IPO, the field's offset (nvme.h IPO_IATTR_CONNECT_DATA / _SQE). */
const badParam = (inData: boolean, offset: number): Outcome => specific(CommandSc.CONNECT_INVALID_PARAMETERS, BigInt(((inData ? 1 : 0) << 16) | offset));

function dw(cmd: NvmeCommand, i: number): number {
  return new DataView(cmd.sqe.cdw10to15.buffer, cmd.sqe.cdw10to15.byteOffset, 24).getUint32(i * 4, true);
}

/** Connect on queue `q`: the admin queue's makes a controller, an I/O queue's joins the controller the data names. */
export function handleConnect(sub: Subsystem, q: QueueContext, cmd: NvmeCommand, nowMs: number): Outcome {
  const f = cmd.fabrics?.connect;
  if (f === undefined || f === null) return generic(Sc.INVALID_FIELD);
  if (q.controller !== null) return generic(Sc.COMMAND_SEQUENCE_ERROR);
  if (f.recfmt !== 0) return specific(CommandSc.CONNECT_INCOMPATIBLE_FORMAT);
  const data = cmd.connectData;
  if (data === null) return generic(Sc.INVALID_FIELD);
  // The queue the Connect names is the one the CM REQ opened, its depth the one agreed there (nvmet_rdma: hsqsize).
  if (f.qid !== q.qid) return badParam(false, 42);
  if (f.sqsize === 0 || f.sqsize + 1 > Math.min(q.size, MAX_QUEUE_SIZE)) return badParam(false, 44);
  const discovery = data.subnqn === DISCOVERY_NQN;
  if (!discovery && data.subnqn !== sub.config.nqn) return badParam(true, 256);
  if (q.qid === 0) {
    if (data.cntlid !== 0xffff) return badParam(true, 16);
    const c = sub.allocate(discovery, data.hostnqn, f.kato, nowMs);
    if (c === null) return specific(0x81); // Connect Controller Busy
    q.controller = c;
    return ok(BigInt(c.cntlid));
  }
  const c = sub.controllers.get(data.cntlid);
  if (c === undefined || c.hostnqn !== data.hostnqn || c.discovery !== discovery || !c.ready) return badParam(true, 16);
  if (q.qid > c.ioQueues) return badParam(false, 42);
  q.controller = c;
  c.lastCommandMs = nowMs;
  return ok(0n);
}

function propertyGet(c: Controller, cmd: NvmeCommand): Outcome {
  const p = cmd.fabrics?.property;
  if (p === undefined || p === null) return generic(Sc.INVALID_FIELD);
  const eight = (p.attrib & 7) === 1;
  if (p.offset === Prop.CAP) return eight ? ok(CAP) : generic(Sc.INVALID_FIELD);
  if (eight) return generic(Sc.INVALID_FIELD);
  if (p.offset === Prop.VS) return ok(BigInt(VS));
  if (p.offset === Prop.CC) return ok(BigInt(c.cc));
  if (p.offset === Prop.CSTS) return ok(BigInt(c.csts));
  return generic(Sc.INVALID_FIELD);
}

function propertySet(c: Controller, cmd: NvmeCommand): Outcome {
  const p = cmd.fabrics?.property;
  if (p === undefined || p === null || p.value === null) return generic(Sc.INVALID_FIELD);
  // Only CC is writable (CAP, VS and CSTS are read-only), and it is 4 bytes.
  if (p.offset !== Prop.CC || (p.attrib & 7) !== 0) return generic(Sc.INVALID_FIELD);
  c.setCc(Number(p.value));
  return ok();
}

/** A Fabrics command other than Connect on a connected queue: properties live on the admin queue only. */
function fabrics(q: QueueContext, c: Controller, cmd: NvmeCommand): Outcome {
  const t = cmd.fabrics?.fctype;
  if (t === FabricsType.CONNECT) return generic(Sc.COMMAND_SEQUENCE_ERROR);
  if (q.qid !== 0) return generic(Sc.INVALID_OPCODE);
  if (t === FabricsType.PROPERTY_GET) return propertyGet(c, cmd);
  if (t === FabricsType.PROPERTY_SET) return propertySet(c, cmd);
  return generic(Sc.INVALID_OPCODE);
}

function identify(sub: Subsystem, c: Controller, cmd: NvmeCommand): Outcome {
  const cns = cdw10(cmd.sqe.cdw10to15) & 0xff;
  if (cns === Cns.CONTROLLER) return ok(0n, identifyController(sub, c));
  if (c.discovery) return generic(Sc.INVALID_FIELD);
  const nsid = cmd.sqe.nsid;
  if (cns === Cns.ACTIVE_NS_LIST) return nsid >= 0xfffffffe ? generic(Sc.INVALID_FIELD) : ok(0n, activeNamespaces(sub.namespace, nsid));
  // The I/O Command Set specific controller data for the NVM command set, which Linux's host asks for
  // (nvme_init_non_mdts_limits()): all its limits zero, no limit (nvmet_execute_identify_ctrl_nvm()).
  if (cns === Cns.CSI_CONTROLLER) return dw(cmd, 1) >>> 24 === CSI_NVM ? ok(0n, new Uint8Array(4096)) : generic(Sc.INVALID_FIELD);
  if (cns === Cns.NAMESPACE || cns === Cns.NS_DESCRIPTORS) {
    if (nsid !== sub.namespace.nsid) return generic(Sc.INVALID_NAMESPACE);
    return ok(0n, cns === Cns.NAMESPACE ? identifyNamespace(sub.namespace) : namespaceDescriptors(sub.namespace));
  }
  return generic(Sc.INVALID_FIELD);
}

/** Get Log Page: LID, NUMDL/NUMDU (dwords, 0-based) and the offset LPOL/LPOU; the page sliced to what was asked (zero past its end). */
function getLogPage(sub: Subsystem, c: Controller, cmd: NvmeCommand): Outcome {
  const d10 = dw(cmd, 0);
  const lid = d10 & 0xff;
  const dwords = (((dw(cmd, 1) & 0xffff) << 16) >>> 0) + (d10 >>> 16) + 1;
  const offset = BigInt(dw(cmd, 2)) | (BigInt(dw(cmd, 3)) << 32n);
  let page: Uint8Array;
  if (lid === DISCOVERY_LOG_LID && c.discovery) page = discoveryLog(sub.config, 1n);
  else if (lid === 0x01)
    page = new Uint8Array(64); // error information: one entry, no error logged
  else if (lid === 0x02 && !c.discovery) page = smartLog();
  else if (lid === 0x03 && !c.discovery)
    page = new Uint8Array(512); // firmware slot information
  else return specific(CommandSc.INVALID_LOG_PAGE);
  if ((offset & 3n) !== 0n || offset > BigInt(page.length)) return generic(Sc.INVALID_FIELD);
  const len = dwords * 4;
  const out = new Uint8Array(Math.min(len, 1 << 20));
  out.set(page.subarray(Number(offset), Number(offset) + out.length));
  return ok(0n, out);
}

/** SMART / Health Information: a composite temperature of 300 K, spare 100 %, nothing else to report. */
function smartLog(): Uint8Array {
  const out = new Uint8Array(512);
  new DataView(out.buffer).setUint16(1, 300, true);
  out[3] = 100;
  out[4] = 10;
  return out;
}

function setFeatures(sub: Subsystem, c: Controller, cmd: NvmeCommand): Outcome {
  const fid = dw(cmd, 0) & 0xff;
  const d11 = dw(cmd, 1);
  if (fid === Feature.NUMBER_OF_QUEUES && !c.discovery) {
    // NSQR and NCQR are 0-based; 0xFFFF is invalid (NVMe Base 2.0, Number of Queues). Grant at most the subsystem's.
    const nsqr = d11 & 0xffff;
    const ncqr = d11 >>> 16;
    if (nsqr === 0xffff || ncqr === 0xffff) return generic(Sc.INVALID_FIELD);
    const n = Math.min(nsqr + 1, ncqr + 1, sub.config.maxIoQueues);
    c.ioQueues = n;
    return ok(BigInt((((n - 1) << 16) | (n - 1)) >>> 0));
  }
  if (fid === Feature.ASYNC_EVENT_CONFIG || fid === Feature.KEEP_ALIVE_TIMER || (fid === Feature.VOLATILE_WRITE_CACHE && !c.discovery)) return ok();
  return generic(Sc.INVALID_FIELD);
}

function getFeatures(sub: Subsystem, c: Controller, cmd: NvmeCommand): Outcome {
  const fid = dw(cmd, 0) & 0xff;
  if (fid === Feature.NUMBER_OF_QUEUES && !c.discovery) {
    const n = Math.max(c.ioQueues, 1) - 1;
    return ok(BigInt(((n << 16) | n) >>> 0));
  }
  if (fid === Feature.KEEP_ALIVE_TIMER) return ok(BigInt(c.kato));
  if (fid === Feature.VOLATILE_WRITE_CACHE && !c.discovery) return ok(1n);
  if (fid === Feature.ASYNC_EVENT_CONFIG) return ok();
  void sub;
  return generic(Sc.INVALID_FIELD);
}

/** An admin-queue command (queue 0), or a Fabrics command on any queue, once its data (if any) is at hand. */
export function handleAdmin(sub: Subsystem, q: QueueContext, cmd: NvmeCommand, nowMs: number): Outcome {
  const c = q.controller;
  if (cmd.sqe.opcode === FABRICS_OPCODE && cmd.fabrics?.fctype === FabricsType.CONNECT) return handleConnect(sub, q, cmd, nowMs);
  // Before its Connect a queue takes nothing else (NVMe over Fabrics 1.1: "Command Sequence Error").
  if (c === null) return generic(Sc.COMMAND_SEQUENCE_ERROR);
  c.lastCommandMs = nowMs;
  if (cmd.sqe.opcode === FABRICS_OPCODE) return fabrics(q, c, cmd);
  // Admin commands other than Fabrics ones wait for CC.EN (nvmet_check_ctrl_status()).
  if (!c.ready) return generic(Sc.COMMAND_SEQUENCE_ERROR);
  switch (cmd.sqe.opcode) {
    case Admin.IDENTIFY:
      return identify(sub, c, cmd);
    case Admin.GET_LOG_PAGE:
      return getLogPage(sub, c, cmd);
    case Admin.SET_FEATURES:
      return setFeatures(sub, c, cmd);
    case Admin.GET_FEATURES:
      return getFeatures(sub, c, cmd);
    case Admin.KEEP_ALIVE:
      return ok();
    case Admin.AER:
      if (c.aers.length > AERL) return specific(CommandSc.AER_LIMIT_EXCEEDED);
      c.aers.push(cmd.sqe.commandId);
      return { status: 0, result: 0n, data: null, held: true };
    default:
      return generic(Sc.INVALID_OPCODE);
  }
}
