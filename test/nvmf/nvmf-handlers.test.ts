/**
 * The target's handlers without a link: the CM REQ checks and their REJ statuses, Connect (controller
 * IDs, the subsystem and discovery NQNs, I/O queues only for an enabled controller), properties
 * (CC.EN → CSTS.RDY, CC.SHN → CSTS.SHST), Identify, Get Log Page (the discovery entry), Set
 * Features, AER limits, Read/Write/Flush status codes, and a malformed capsule's answer.
 */
import { decodeCommandCapsule, emitCommandCapsule, type NvmeCommand } from '../../ulp/nvme-rdma/capsule';
import { emitConnectData, type FabricsCommand } from '../../ulp/nvme-rdma/fabrics-command';
import { emitNvmeCmReq } from '../../ulp/nvme-rdma/cm-private-data';
import { FABRICS_OPCODE, FabricsType, IoOpcode } from '../../ulp/nvme-rdma/opcode-names';
import { SQE_FLAGS_SGL_METABUF, dword10, rwDwords } from '../../ulp/nvme-rdma/sqe';
import { inCapsuleSgl, keyedSgl, type SglDescriptor } from '../../ulp/nvme-rdma/sgl';
import { statusName, statusParts } from '../../ulp/nvme-rdma/cqe';
import { Subsystem, DISCOVERY_NQN } from '../../apps/nvmf/controller';
import { RamNamespace } from '../../apps/nvmf/ram-namespace';
import { type QueueContext, handleAdmin } from '../../apps/nvmf/admin-handlers';
import { handleIo } from '../../apps/nvmf/io-handlers';
import { checkCmReq } from '../../apps/nvmf/nvmf-target';

const NQN = 'nqn.2024-01.io.roce-ts:test';
const HOST = 'nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-000000000001';
const sub = (): Subsystem =>
  new Subsystem({ nqn: NQN, serial: 's', model: 'm', maxIoQueues: 2, traddr: '198.18.0.2', trsvcid: '4420' }, new RamNamespace(1 << 20));

function cmd(opcode: number, opts: { nsid?: number; sgl?: SglDescriptor; cdw?: Uint8Array; fabrics?: FabricsCommand; data?: Uint8Array } = {}): NvmeCommand {
  const bytes = emitCommandCapsule(
    {
      opcode,
      flags: SQE_FLAGS_SGL_METABUF,
      commandId: 7,
      nsid: opts.nsid ?? 0,
      metadata: 0n,
      sgl: opts.sgl ?? keyedSgl(0x1000n, 4096, 0x1234),
      cdw10to15: opts.cdw ?? new Uint8Array(24),
    },
    opts.fabrics ?? null,
    opts.data,
  );
  return decodeCommandCapsule(new DataView(bytes.buffer), 0, bytes.length);
}
const connect = (qid: number, cntlid: number, subnqn = NQN, sqsize = 31): NvmeCommand => {
  const data = emitConnectData({ hostId: new Uint8Array(16), cntlid, subnqn, hostnqn: HOST });
  return cmd(FABRICS_OPCODE, {
    sgl: inCapsuleSgl(1024),
    data,
    fabrics: { fctype: FabricsType.CONNECT, connect: { recfmt: 0, qid, sqsize, cattr: 0, kato: 5000 }, property: null },
  });
};
const prop = (fctype: number, offset: number, eight: boolean, value: bigint | null = null): NvmeCommand =>
  cmd(FABRICS_OPCODE, { sgl: keyedSgl(0n, 0, 0), fabrics: { fctype, connect: null, property: { attrib: eight ? 1 : 0, offset, value } } });
const name = (status: number, isConnect = false): string => (status === 0 ? 'Success' : statusName(status, isConnect));

test('CM REQ private data: record format, queue ID, host SQ and RQ sizes give the REJ statuses of nvme-rdma.h', () => {
  const req = (o: Partial<{ recfmt: number; qid: number; hrqsize: number; hsqsize: number }>) =>
    checkCmReq(emitNvmeCmReq({ recfmt: 0, qid: 0, hrqsize: 32, hsqsize: 31, cntlid: 0xffff, ...o }), 4);
  expect(req({})).toEqual({ qid: 0, size: 32 });
  expect(req({ qid: 3, hsqsize: 127, hrqsize: 128 })).toEqual({ qid: 3, size: 128 });
  expect(checkCmReq(new Uint8Array(8), 4)).toEqual({ status: 1 });
  expect(req({ recfmt: 1 })).toEqual({ status: 2 });
  expect(req({ qid: 5 })).toEqual({ status: 3 });
  expect(req({ hsqsize: 32 })).toEqual({ status: 4 });
  expect(req({ qid: 1, hsqsize: 128 })).toEqual({ status: 4 });
  expect(req({ hrqsize: 0 })).toEqual({ status: 5 });
});

test('Connect: the admin queue makes controller 1, the I/O queue needs CC.EN and the Number of Queues granted', () => {
  const s = sub();
  const admin: QueueContext = { qid: 0, size: 32, controller: null };
  expect(name(handleAdmin(s, admin, prop(FabricsType.PROPERTY_GET, 0, true), 0).status)).toBe('Command Sequence Error');
  const c = handleAdmin(s, admin, connect(0, 0xffff), 0);
  expect(c).toMatchObject({ status: 0, result: 1n });
  expect(name(handleAdmin(s, admin, connect(0, 0xffff), 0).status)).toBe('Command Sequence Error');
  const io: QueueContext = { qid: 1, size: 32, controller: null };
  // Not enabled yet: the data's cntlid (offset 16 of the data) is invalid.
  expect(handleAdmin(s, io, connect(1, 1), 0)).toMatchObject({ result: (1n << 16n) | 16n });
  expect(handleAdmin(s, admin, prop(FabricsType.PROPERTY_SET, 0x14, false, 0x460001n), 0).status).toBe(0);
  expect(handleAdmin(s, admin, prop(FabricsType.PROPERTY_GET, 0x1c, false), 0).result).toBe(1n);
  // No queues granted: the Connect's qid (SQE offset 42) is invalid.
  expect(handleAdmin(s, io, connect(1, 1), 0)).toMatchObject({ result: 42n });
  const nq = handleAdmin(s, admin, cmd(0x09, { cdw: Uint8Array.from([7, 0, 0, 0, 9, 0, 9, 0, ...new Array<number>(16).fill(0)]) }), 0);
  expect(nq).toMatchObject({ status: 0, result: 0x0001_0001n });
  expect(handleAdmin(s, io, connect(1, 1), 0).status).toBe(0);
  const wrong: QueueContext = { qid: 0, size: 32, controller: null };
  const bad = handleAdmin(s, wrong, connect(0, 0xffff, 'nqn.2024-01.io.example:nope'), 0);
  expect(name(bad.status, true)).toBe('Connect Invalid Parameters');
  expect(bad.result).toBe((1n << 16n) | 256n);
  expect(name(handleAdmin(s, { qid: 2, size: 32, controller: null }, connect(1, 1), 0).status, true)).toBe('Connect Invalid Parameters');
});

test('properties: CAP 8 bytes only, CC the only writable one, CC.SHN completes the shutdown', () => {
  const s = sub();
  const q: QueueContext = { qid: 0, size: 32, controller: null };
  handleAdmin(s, q, connect(0, 0xffff), 0);
  const cap = handleAdmin(s, q, prop(FabricsType.PROPERTY_GET, 0, true), 0).result;
  expect(cap & 0xffffn).toBe(127n);
  expect((cap >> 37n) & 1n).toBe(1n);
  expect(name(handleAdmin(s, q, prop(FabricsType.PROPERTY_GET, 0, false), 0).status)).toBe('Invalid Field in Command');
  expect(name(handleAdmin(s, q, prop(FabricsType.PROPERTY_SET, 0x1c, false, 1n), 0).status)).toBe('Invalid Field in Command');
  expect(handleAdmin(s, q, prop(FabricsType.PROPERTY_GET, 0x08, false), 0).result).toBe(0x10300n);
  handleAdmin(s, q, prop(FabricsType.PROPERTY_SET, 0x14, false, 0x464001n), 0);
  expect(handleAdmin(s, q, prop(FabricsType.PROPERTY_GET, 0x1c, false), 0).result).toBe(0x9n);
});

test('discovery: Identify says a discovery controller, the log page has one RDMA/IPv4 entry for the subsystem; admin commands before CC.EN are refused', () => {
  const s = sub();
  const q: QueueContext = { qid: 0, size: 32, controller: null };
  expect(handleAdmin(s, q, connect(0, 0xffff, DISCOVERY_NQN), 0).status).toBe(0);
  expect(name(handleAdmin(s, q, cmd(0x06, { cdw: dword10(1) }), 0).status)).toBe('Command Sequence Error');
  handleAdmin(s, q, prop(FabricsType.PROPERTY_SET, 0x14, false, 0x460001n), 0);
  const id = handleAdmin(s, q, cmd(0x06, { cdw: dword10(1) }), 0).data as Uint8Array;
  expect(id[111]).toBe(2);
  // Get Log Page 0x70, 2048 bytes (NUMDL 511).
  const cdw = new Uint8Array(24);
  new DataView(cdw.buffer).setUint32(0, 0x70 | (511 << 16), true);
  const log = handleAdmin(s, q, cmd(0x02, { cdw }), 0).data as Uint8Array;
  const v = new DataView(log.buffer);
  expect(v.getBigUint64(8, true)).toBe(1n);
  expect([log[1024], log[1025], log[1026]]).toEqual([1, 1, 2]);
  const str = (at: number, n: number) => new TextDecoder().decode(log.subarray(at, at + n)).replace(/\0+$/, '');
  expect(str(1024 + 32, 32)).toBe('4420');
  expect(str(1024 + 256, 256)).toBe(NQN);
  expect(str(1024 + 512, 256)).toBe('198.18.0.2');
  expect(name(handleAdmin(s, q, cmd(0x06, { cdw: dword10(0), nsid: 1 }), 0).status)).toBe('Invalid Field in Command');
  new DataView(cdw.buffer).setUint32(0, 0x7f | (1 << 16), true);
  expect(name(handleAdmin(s, q, cmd(0x02, { cdw }), 0).status)).toBe('Invalid Log Page');
});

test('Identify of the NVM subsystem, AERs held up to AERL + 1, unknown opcodes', () => {
  const s = sub();
  const q: QueueContext = { qid: 0, size: 32, controller: null };
  handleAdmin(s, q, connect(0, 0xffff), 0);
  handleAdmin(s, q, prop(FabricsType.PROPERTY_SET, 0x14, false, 0x460001n), 0);
  const ns = handleAdmin(s, q, cmd(0x06, { cdw: dword10(0), nsid: 1 }), 0).data as Uint8Array;
  expect(new DataView(ns.buffer).getBigUint64(0, true)).toBe(2048n);
  expect(ns[130]).toBe(9);
  const list = handleAdmin(s, q, cmd(0x06, { cdw: dword10(2) }), 0).data as Uint8Array;
  expect(new DataView(list.buffer).getUint32(0, true)).toBe(1);
  expect(name(handleAdmin(s, q, cmd(0x06, { cdw: dword10(0), nsid: 2 }), 0).status)).toBe('Invalid Namespace or Format');
  const desc = handleAdmin(s, q, cmd(0x06, { cdw: dword10(3), nsid: 1 }), 0).data as Uint8Array;
  expect([desc[0], desc[1], desc[20], desc[21]]).toEqual([2, 16, 3, 16]);
  const ctrl = handleAdmin(s, q, cmd(0x06, { cdw: dword10(1) }), 0).data as Uint8Array;
  expect(new DataView(ctrl.buffer).getUint32(1792, true)).toBe((64 + 4096) / 16);
  // CNS 6 for the NVM command set (CSI 0, CDW11 bits 31:24), as Linux's host asks: a page of zeros; another CSI is Invalid Field.
  const csi = (v: number): Uint8Array => {
    const c = new Uint8Array(24);
    new DataView(c.buffer).setUint32(0, 6, true);
    new DataView(c.buffer).setUint32(4, (v << 24) >>> 0, true);
    return c;
  };
  const nvm = handleAdmin(s, q, cmd(0x06, { cdw: csi(0) }), 0);
  expect({ status: name(nvm.status), bytes: nvm.data?.length, zero: nvm.data?.every((b) => b === 0) }).toEqual({
    status: 'Success',
    bytes: 4096,
    zero: true,
  });
  expect(name(handleAdmin(s, q, cmd(0x06, { cdw: csi(2) }), 0).status)).toBe('Invalid Field in Command');
  for (let i = 0; i < 4; i++) expect(handleAdmin(s, q, cmd(0x0c), 0).held).toBe(true);
  expect(name(handleAdmin(s, q, cmd(0x0c), 0).status)).toBe('Asynchronous Event Request Limit Exceeded');
  expect(name(handleAdmin(s, q, cmd(0x80), 0).status)).toBe('Invalid Command Opcode');
});

test('Read, Write, Flush on the RAM namespace: data kept, LBA Out of Range with DNR, SGL length checked, wrong namespace', () => {
  const ns = new RamNamespace(8192);
  const data = Uint8Array.from({ length: 1024 }, (_, i) => i & 0xff);
  expect(handleIo(ns, cmd(IoOpcode.WRITE, { nsid: 1, sgl: keyedSgl(0n, 1024, 1), cdw: rwDwords(3n, 2) }), data).status).toBe(0);
  expect(handleIo(ns, cmd(IoOpcode.READ, { nsid: 1, sgl: keyedSgl(0n, 1024, 1), cdw: rwDwords(3n, 2) }), null).data).toEqual(data);
  const past = handleIo(ns, cmd(IoOpcode.READ, { nsid: 1, sgl: keyedSgl(0n, 1024, 1), cdw: rwDwords(15n, 2) }), null);
  expect(name(past.status)).toBe('LBA Out of Range');
  expect(statusParts(past.status).dnr).toBe(true);
  expect(name(handleIo(ns, cmd(IoOpcode.READ, { nsid: 1, sgl: keyedSgl(0n, 512, 1), cdw: rwDwords(0n, 2) }), null).status)).toBe('Data SGL Length Invalid');
  expect(name(handleIo(ns, cmd(IoOpcode.READ, { nsid: 2, sgl: keyedSgl(0n, 512, 1), cdw: rwDwords(0n, 1) }), null).status)).toBe('Invalid Namespace or Format');
  expect(handleIo(ns, cmd(IoOpcode.FLUSH, { nsid: 1 }), null).status).toBe(0);
  expect(name(handleIo(ns, cmd(0x05, { nsid: 1 }), null).status)).toBe('Invalid Command Opcode');
});
