/**
 * iSER and iSCSI structures read back what they wrote (the iSER header of RFC 7145 §9.2-§9.3, the
 * iSER CM private data of §9.1, the iSCSI PDU of RFC 7143 §11 with each opcode's fields, the SCSI
 * CDB), with the bytes where the specs put them; short or impossible input is a typed WireError.
 */
import { WireError, WireErrorCode } from '../../packets/errors';
import { controlHeader, emitIserHeader, parseIserHeader, IserOpcode, type IserHeader } from '../../ulp/iser/iser-header';
import { emitIserCmPrivateData, parseIserCmPrivateData } from '../../ulp/iser/cm-private-data';
import { type buildPdu, emitIscsiPdu, keyValues, parseIscsiPdu } from '../../ulp/iser/iscsi-pdu';
import { pduDetails } from '../../ulp/iser/iscsi-details';
import { emitIserMessage, parseIserMessage } from '../../ulp/iser/iser-message';
import * as B from '../../ulp/iser/iscsi-builders';
import { ScsiOpcode, parseCdb, rwCdb } from '../../ulp/iser/scsi-cdb';
import { iscsiOpcodeName } from '../../ulp/iser/iscsi-names';

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
const seq = { itt: 0x11, cmdSn: 5, expStatSn: 9 };
const tseq = { itt: 0x11, statSn: 9, expCmdSn: 6, maxCmdSn: 37 };

describe('iSER header (RFC 7145 §9.2, §9.3)', () => {
  test('a control-type header: opcode 1, W and R, STags and base offsets big-endian', () => {
    const h = controlHeader({ stag: 0xaabbccdd, offset: 0x1122334455667788n }, { stag: 0x01020304, offset: 0x10n });
    const b = emitIserHeader(h);
    expect(b).toHaveLength(28);
    expect([...b.subarray(0, 8)]).toEqual([0x1c, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd]);
    expect([...b.subarray(16, 20)]).toEqual([1, 2, 3, 4]);
    expect(parseIserHeader(view(b), 0, 28)).toEqual(h);
    expect(parseIserHeader(view(emitIserHeader(controlHeader(null, null))), 0, 28)).toMatchObject({ flags: 0x10, wsv: false, rsv: false, writeStag: 0 });
  });
  test('Hello and HelloReply: versions in one byte, IRD / ORD, REJ', () => {
    const hello: IserHeader = { opcode: IserOpcode.HELLO, flags: 0x20, maxVersion: 10, minVersion: 10, ird: 16 };
    const hb = emitIserHeader(hello);
    expect([...hb.subarray(0, 4)]).toEqual([0x20, 0xaa, 0, 16]);
    expect(parseIserHeader(view(hb), 0, 28)).toEqual(hello);
    const reply: IserHeader = { opcode: IserOpcode.HELLO_REPLY, flags: 0x31, rej: true, maxVersion: 10, currentVersion: 10, ord: 4 };
    expect(parseIserHeader(view(emitIserHeader(reply)), 0, 28)).toEqual(reply);
  });
  test('short, reserved opcode, or flags that disagree: typed errors', () => {
    expect(wireError(() => parseIserHeader(view(new Uint8Array(27)), 0, 27)).code).toBe(WireErrorCode.Truncated);
    const b = new Uint8Array(28);
    b[0] = 0x40;
    expect(wireError(() => parseIserHeader(view(b), 0, 28)).code).toBe(WireErrorCode.BadField);
    expect(wireError(() => emitIserHeader({ ...controlHeader(null, null), flags: 0x18 })).code).toBe(WireErrorCode.BadValue);
    expect(wireError(() => emitIserHeader({ ...controlHeader(null, null), flags: 0x20 })).code).toBe(WireErrorCode.BadValue);
    expect(wireError(() => emitIserHeader({ ...controlHeader(null, null), writeStag: 2 ** 32 })).code).toBe(WireErrorCode.BadValue);
  });
});

describe('iSER CM private data (RFC 7145 §9.1)', () => {
  test('Z and I bits read back; short data is Truncated', () => {
    const b = emitIserCmPrivateData(0xc0);
    expect([...b]).toEqual([0xc0, 0, 0, 0]);
    expect(parseIserCmPrivateData(view(b), 0, 4)).toEqual({ flags: 0xc0, zbvaNotUsed: true, sendWithInvalidateNotUsed: true });
    expect(parseIserCmPrivateData(view(emitIserCmPrivateData(0x80)), 0, 4).sendWithInvalidateNotUsed).toBe(false);
    expect(wireError(() => parseIserCmPrivateData(view(new Uint8Array(3)), 0, 3)).code).toBe(WireErrorCode.Truncated);
    expect(wireError(() => emitIserCmPrivateData(0x100)).code).toBe(WireErrorCode.BadValue);
  });
});

describe('iSCSI PDU (RFC 7143 §11)', () => {
  const roundTrip = (p: ReturnType<typeof buildPdu>) => {
    const b = emitIscsiPdu(p);
    expect(b.length % 4).toBe(0);
    const back = parseIscsiPdu(view(b), 0, b.length);
    expect(back).toEqual(p);
    return pduDetails(back, keyValues);
  };
  test('a SCSI Command: flags, LUN, ITT, EDTL, CmdSN, ExpStatSN and the CDB at byte 32', () => {
    const p = B.scsiCommandPdu({ ...seq, lun: 0x0001000000000000n, read: true, write: false, edtl: 4096, cdb: rwCdb(ScsiOpcode.READ_10, 16n, 8) });
    expect([...p.bhs.subarray(0, 2)]).toEqual([0x01, 0xc1]);
    const d = roundTrip(p);
    expect(d).toMatchObject({ lun: 0x0001000000000000n, cmdSn: 5, expStatSn: 9, statSn: null, targetTransferTag: null });
    expect(d.scsiCommand).toMatchObject({
      read: true,
      write: false,
      attr: 1,
      expectedDataTransferLength: 4096,
      cdb: { name: 'READ(10)', lba: 16n, blocks: 8 },
    });
    expect(iscsiOpcodeName(p.opcode)).toBe('SCSI Command');
  });
  test('a SCSI Response with sense data and a residual', () => {
    const d = roundTrip(B.scsiResponsePdu({ ...tseq, status: 2, residual: 512, underflow: true, sense: Uint8Array.of(0x70, 0, 5) }));
    expect(d).toMatchObject({ statSn: 9, expCmdSn: 6, maxCmdSn: 37, cmdSn: null });
    expect(d.scsiResponse).toMatchObject({ status: 2, response: 0, underflow: true, overflow: false, residualCount: 512, senseLength: 3 });
  });
  test('Login request and response: T/CSG/NSG, versions, ISID, TSIH, CID, status, key=value text', () => {
    const isid = Uint8Array.of(0x80, 0, 0x23, 0x3d, 0, 0);
    const rq = roundTrip(
      B.loginRequestPdu({ ...seq, isid, tsih: 0, cid: 1, csg: 1, nsg: 3, transit: true, pairs: ['InitiatorName=iqn.x', 'RDMAExtensions=Yes'] }),
    );
    expect(rq.login).toMatchObject({ transit: true, cont: false, csg: 1, nsg: 3, isid, tsih: 0, cid: 1, statusClass: null });
    expect(rq.keyValues).toEqual(['InitiatorName=iqn.x', 'RDMAExtensions=Yes']);
    const rs = roundTrip(
      B.loginResponsePdu({ ...tseq, isid, tsih: 7, csg: 1, nsg: 3, transit: true, statusClass: 0, statusDetail: 0, pairs: ['RDMAExtensions=Yes'] }),
    );
    expect(rs.login).toMatchObject({ tsih: 7, cid: null, statusClass: 0, statusDetail: 0 });
  });
  test('NOP, Text, Logout and Task Management fields', () => {
    expect(roundTrip(B.nopOutPdu({ ...seq, ping: Uint8Array.of(1, 2, 3, 4, 5) })).targetTransferTag).toBe(0xffffffff);
    expect(roundTrip(B.nopInPdu(tseq)).statSn).toBe(9);
    expect(roundTrip(B.textRequestPdu({ ...seq, pairs: ['SendTargets=All'] })).keyValues).toEqual(['SendTargets=All']);
    expect(roundTrip(B.textResponsePdu({ ...tseq, pairs: ['TargetName=iqn.t'] })).textContinue).toBe(false);
    expect(roundTrip(B.logoutRequestPdu({ ...seq, reason: 0, cid: 1 }))).toMatchObject({ logoutReason: 0, logoutCid: 1 });
    expect(roundTrip(B.logoutResponsePdu({ ...tseq, response: 0, time2Wait: 2, time2Retain: 20 }))).toMatchObject({
      logoutResponse: 0,
      time2Wait: 2,
      time2Retain: 20,
    });
    expect(roundTrip(B.tmfRequestPdu({ ...seq, fn: 1, lun: 0n, referencedTaskTag: 0x10, refCmdSn: 4 }))).toMatchObject({
      tmfFunction: 1,
      referencedTaskTag: 0x10,
      refCmdSn: 4,
    });
    expect(roundTrip(B.tmfResponsePdu({ ...tseq, response: 1 })).tmfResponse).toBe(1);
  });
  test('an iSER message: header then PDU; a Hello alone', () => {
    const m = { header: controlHeader(null, { stag: 7, offset: 0x1000n }), pdu: B.nopOutPdu(seq) };
    const b = emitIserMessage(m);
    expect(parseIserMessage(view(b), 0, b.length)).toEqual(m);
    const hello = { header: { opcode: IserOpcode.HELLO, flags: 0x20, maxVersion: 10, minVersion: 10, ird: 1 } as IserHeader, pdu: null };
    expect(parseIserMessage(view(emitIserMessage(hello)), 0, 28)).toEqual(hello);
  });
  test('short BHS, AHS or data segment: Truncated; the padding may be absent', () => {
    expect(wireError(() => parseIscsiPdu(view(new Uint8Array(47)), 0, 47)).code).toBe(WireErrorCode.Truncated);
    const b = emitIscsiPdu(B.nopOutPdu({ ...seq, ping: Uint8Array.of(1, 2, 3, 4, 5) }));
    expect(parseIscsiPdu(view(b), 0, 48 + 5).data).toEqual(Uint8Array.of(1, 2, 3, 4, 5));
    expect(wireError(() => parseIscsiPdu(view(b), 0, 48 + 4)).code).toBe(WireErrorCode.Truncated);
    const ahs = new Uint8Array(48);
    ahs[4] = 1;
    expect(wireError(() => parseIscsiPdu(view(ahs), 0, 48)).code).toBe(WireErrorCode.Truncated);
    expect(wireError(() => parseIserMessage(view(emitIserHeader(controlHeader(null, null))), 0, 28)).code).toBe(WireErrorCode.Truncated);
  });
  test('emit refuses a PDU whose BHS disagrees with its fields', () => {
    const p = B.nopOutPdu(seq);
    expect(wireError(() => emitIscsiPdu({ ...p, data: Uint8Array.of(1) })).code).toBe(WireErrorCode.BadValue);
    expect(wireError(() => emitIscsiPdu({ ...p, initiatorTaskTag: 3 })).code).toBe(WireErrorCode.BadValue);
    expect(wireError(() => emitIscsiPdu({ ...p, bhs: new Uint8Array(40) })).code).toBe(WireErrorCode.BadValue);
  });
});

describe('SCSI CDB', () => {
  test('READ/WRITE (10)/(16), INQUIRY, REPORT LUNS, READ CAPACITY (16), TEST UNIT READY', () => {
    expect(parseCdb(rwCdb(ScsiOpcode.WRITE_16, 0x1_0000_0000n, 65536))).toMatchObject({ name: 'WRITE(16)', lba: 0x1_0000_0000n, blocks: 65536 });
    expect(parseCdb(rwCdb(ScsiOpcode.WRITE_10, 7n, 1))).toMatchObject({ name: 'WRITE(10)', lba: 7n, blocks: 1 });
    expect(parseCdb(rwCdb(ScsiOpcode.READ_16, 3n, 2))).toMatchObject({ name: 'READ(16)', lba: 3n, blocks: 2 });
    const inq = new Uint8Array(16);
    inq.set([0x12, 1, 0x80, 0, 0xff]);
    expect(parseCdb(inq)).toMatchObject({ name: 'INQUIRY', evpd: true, pageCode: 0x80, allocationLength: 255 });
    const rl = new Uint8Array(16);
    rl.set([0xa0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0]);
    expect(parseCdb(rl)).toMatchObject({ name: 'REPORT LUNS', allocationLength: 4096 });
    const rc = new Uint8Array(16);
    rc.set([0x9e, 0x10]);
    rc[13] = 32;
    expect(parseCdb(rc)).toMatchObject({ name: 'READ CAPACITY(16)', allocationLength: 32 });
    expect(parseCdb(new Uint8Array(16)).name).toBe('TEST UNIT READY');
    expect(parseCdb(Uint8Array.of(0xee, ...new Uint8Array(15))).name).toBe('opcode 0xee');
  });
});
