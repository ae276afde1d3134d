/**
 * NVMe-oF over RDMA structures read back what they wrote (CM private data, SGL descriptors, SQE,
 * Fabrics fields and Connect data, CQE, capsules), with the bytes where the specs put them, and
 * short or impossible input is a typed WireError, never a crash.
 */
import { WireError, WireErrorCode } from '../../packets/errors';
import {
  emitNvmeCmRej,
  emitNvmeCmRep,
  emitNvmeCmReq,
  parseNvmeCmRej,
  parseNvmeCmRep,
  parseNvmeCmReq,
  cmRejStatusName,
} from '../../ulp/nvme-rdma/cm-private-data';
import { emitSgl, inCapsuleSgl, keyedSgl, parseSgl, SglFormat } from '../../ulp/nvme-rdma/sgl';
import { decodeCommandCapsule, decodeResponseCapsule, emitCommandCapsule, emitResponseCapsule } from '../../ulp/nvme-rdma/capsule';
import { emitConnectData } from '../../ulp/nvme-rdma/fabrics-command';
import { FABRICS_OPCODE, FabricsType, IoOpcode, opcodeName } from '../../ulp/nvme-rdma/opcode-names';
import { rwDwords, readRw, SQE_FLAGS_SGL_METABUF, type Sqe } from '../../ulp/nvme-rdma/sqe';
import { StatusCodeType, statusField, statusName, statusParts } from '../../ulp/nvme-rdma/cqe';

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
const wireError = (f: () => unknown): WireError => {
  try {
    f();
  } catch (e) {
    if (e instanceof WireError) return e;
    throw e;
  }
  throw new Error('no error');
};
const sqe = (over: Partial<Sqe>): Sqe => ({
  opcode: IoOpcode.READ,
  flags: SQE_FLAGS_SGL_METABUF,
  commandId: 7,
  nsid: 1,
  metadata: 0n,
  sgl: keyedSgl(0x1234_5678_9abc_def0n, 4096, 0xc0de0042, true),
  cdw10to15: rwDwords(16n, 8),
  ...over,
});

describe('CM private data (nvme-rdma.h)', () => {
  test('REQ, REP and REJ read back, little-endian at their offsets', () => {
    const req = emitNvmeCmReq({ recfmt: 0, qid: 3, hrqsize: 32, hsqsize: 127, cntlid: 0xffff });
    expect([...req.subarray(0, 10)]).toEqual([0, 0, 3, 0, 32, 0, 127, 0, 0xff, 0xff]);
    expect(parseNvmeCmReq(view(req), 0, req.length)).toEqual({ recfmt: 0, qid: 3, hrqsize: 32, hsqsize: 127, cntlid: 0xffff });
    const rep = emitNvmeCmRep({ recfmt: 0, crqsize: 128 });
    expect(parseNvmeCmRep(view(rep), 0, rep.length)).toEqual({ recfmt: 0, crqsize: 128 });
    const rej = emitNvmeCmRej({ recfmt: 0, status: 4 });
    expect([...rej]).toEqual([0, 0, 4, 0]);
    expect(parseNvmeCmRej(view(rej), 0, 4)).toEqual({ recfmt: 0, status: 4 });
    expect(cmRejStatusName(4)).toBe('invalid host SQ size');
    expect(cmRejStatusName(0x77)).toBe('reserved');
  });
  test('short private data is Truncated; values that do not fit are BadValue', () => {
    expect(wireError(() => parseNvmeCmReq(view(new Uint8Array(31)), 0, 31)).code).toBe(WireErrorCode.Truncated);
    expect(wireError(() => parseNvmeCmRej(view(new Uint8Array(3)), 0, 3)).code).toBe(WireErrorCode.Truncated);
    expect(wireError(() => emitNvmeCmReq({ recfmt: 0, qid: 0x10000, hrqsize: 0, hsqsize: 0, cntlid: 0 })).code).toBe(WireErrorCode.BadValue);
    expect(wireError(() => emitNvmeCmRej({ recfmt: 0, status: 0 })).code).toBe(WireErrorCode.BadValue);
  });
});

describe('SGL descriptors', () => {
  test('keyed with invalidate: address, 24-bit length, key, type byte 0x4F', () => {
    const b = new Uint8Array(16);
    emitSgl(keyedSgl(0x1122334455667788n, 0x123456, 0xaabbccdd, true), view(b), 0);
    expect(b[15]).toBe(SglFormat.KEYED_INVALIDATE);
    expect([...b.subarray(8, 15)]).toEqual([0x56, 0x34, 0x12, 0xdd, 0xcc, 0xbb, 0xaa]);
    expect(parseSgl(view(b), 0, 16)).toEqual({ type: 4, subtype: 0xf, address: 0x1122334455667788n, length: 0x123456, key: 0xaabbccdd });
  });
  test('in-capsule: type byte 0x01, a 32-bit length, no key', () => {
    const b = new Uint8Array(16);
    emitSgl(inCapsuleSgl(512), view(b), 0);
    expect(b[15]).toBe(SglFormat.IN_CAPSULE);
    expect(parseSgl(view(b), 0, 16)).toEqual({ type: 0, subtype: 1, address: 0n, length: 512, key: null });
  });
  test('a keyed length past 24 bits is BadValue; 15 bytes are Truncated', () => {
    expect(wireError(() => emitSgl(keyedSgl(0n, 1 << 24, 1), view(new Uint8Array(16)), 0)).code).toBe(WireErrorCode.BadValue);
    expect(wireError(() => parseSgl(view(new Uint8Array(15)), 0, 15)).code).toBe(WireErrorCode.Truncated);
  });
});

describe('command capsules', () => {
  test('a Read: SQE fields read back', () => {
    const b = emitCommandCapsule(sqe({}));
    expect(b.length).toBe(64);
    expect([b[0], b[1], b[2], b[3]]).toEqual([IoOpcode.READ, 0x40, 7, 0]);
    const c = decodeCommandCapsule(view(b), 0, b.length);
    expect(c.sqe).toEqual(sqe({}));
    expect(c.fabrics).toBeNull();
    expect(readRw(c.sqe.cdw10to15)).toEqual({ slba: 16n, blocks: 8 });
  });
  test('a Connect with its data in the capsule', () => {
    const data = emitConnectData({ hostId: new Uint8Array(16).fill(0xa5), cntlid: 0xffff, subnqn: 'nqn.x:sub', hostnqn: 'nqn.x:host' });
    const b = emitCommandCapsule(
      sqe({ opcode: FABRICS_OPCODE, nsid: 0, sgl: inCapsuleSgl(1024), cdw10to15: new Uint8Array(24) }),
      { fctype: FabricsType.CONNECT, connect: { recfmt: 0, qid: 2, sqsize: 127, cattr: 0, kato: 5000 }, property: null },
      data,
    );
    expect(b[4]).toBe(FabricsType.CONNECT);
    const c = decodeCommandCapsule(view(b), 0, b.length);
    expect(c.fabrics?.connect).toEqual({ recfmt: 0, qid: 2, sqsize: 127, cattr: 0, kato: 5000 });
    expect(c.connectData).toEqual({ hostId: new Uint8Array(16).fill(0xa5), cntlid: 0xffff, subnqn: 'nqn.x:sub', hostnqn: 'nqn.x:host' });
    expect(c.inCapsuleLength).toBe(1024);
    // The data cut short: a typed error, not a crash.
    expect(wireError(() => decodeCommandCapsule(view(b), 0, 64 + 500)).code).toBe(WireErrorCode.Truncated);
  });
  test('Property Set of an 8-byte property keeps its value', () => {
    const b = emitCommandCapsule(sqe({ opcode: FABRICS_OPCODE, sgl: inCapsuleSgl(0) }), {
      fctype: FabricsType.PROPERTY_SET,
      connect: null,
      property: { attrib: 1, offset: 0, value: 0x0102030405060708n },
    });
    expect(decodeCommandCapsule(view(b), 0, 64).fabrics?.property).toEqual({ attrib: 1, offset: 0, value: 0x0102030405060708n });
  });
  test('shorter than an SQE is BadLength; Fabrics fields without opcode 0x7F are refused', () => {
    expect(wireError(() => decodeCommandCapsule(view(new Uint8Array(63)), 0, 63)).code).toBe(WireErrorCode.BadLength);
    expect(wireError(() => emitCommandCapsule(sqe({}), { fctype: 0, connect: null, property: null })).code).toBe(WireErrorCode.BadValue);
  });
  test('opcode names depend on the queue', () => {
    expect(opcodeName(0x02, 0)).toBe('Get Log Page');
    expect(opcodeName(0x02, 1)).toBe('Read');
    expect(opcodeName(0x06, null)).toBe('Identify');
    expect(opcodeName(0x02, null)).toBe('Read/Get Log Page');
    expect(opcodeName(0x55, 1)).toBe('opcode 0x55');
  });
});

describe('response capsules', () => {
  test('a CQE reads back; its status splits into code, type and DNR', () => {
    const status = statusField(StatusCodeType.GENERIC, 0x80, true);
    expect(status).toBe(0x8100);
    const b = emitResponseCapsule({ result: 5n, sqHead: 3, sqId: 1, commandId: 9, status });
    expect(decodeResponseCapsule(view(b), 0, 16)).toEqual({ result: 5n, sqHead: 3, sqId: 1, commandId: 9, status });
    expect(statusParts(status)).toMatchObject({ sc: 0x80, sct: 0, dnr: true, more: false, phase: 0 });
    expect(statusName(status)).toBe('LBA Out of Range');
    expect(statusName(statusField(1, 0x82), true)).toBe('Connect Invalid Parameters');
    expect(statusName(statusField(5, 0x01))).toBe('SCT 5 SC 0x01');
  });
  test('a response capsule is exactly 16 bytes', () => {
    expect(wireError(() => decodeResponseCapsule(view(new Uint8Array(20)), 0, 20)).code).toBe(WireErrorCode.BadLength);
  });
});
