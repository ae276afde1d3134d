/**
 * SMB Direct and the SMB2 parts it carries read back what they wrote (negotiate request and
 * response, data transfer header, SMB2 header, READ/WRITE with RDMA buffer descriptors), with the
 * bytes where MS-SMBD and MS-SMB2 put them; short or impossible input is a typed WireError.
 */
import { WireError, WireErrorCode } from '../../packets/errors';
import { emitNegotiateRequest, emitNegotiateResponse, parseNegotiateRequest, parseNegotiateResponse } from '../../ulp/smbd/negotiate';
import { emitDataTransfer, parseDataTransfer } from '../../ulp/smbd/data-transfer';
import { emitBufferDescriptors, parseBufferDescriptors } from '../../ulp/smbd/buffer-descriptor';
import { type Smb2Header, emitSmb2Header, parseSmb2Header, smb2CommandName, Smb2Command } from '../../ulp/smbd/smb2-header';
import {
  Smb2Channel,
  emitReadResponse,
  emitReadWriteRequest,
  emitWriteResponse,
  parseSessionSetupChannel,
  parseReadWriteRequest,
  parseReadWriteResponseLength,
} from '../../ulp/smbd/smb2-read-write';

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
const hdr = (over: Partial<Smb2Header> = {}): Smb2Header => ({
  creditCharge: 1,
  status: 0,
  command: Smb2Command.WRITE,
  credits: 10,
  flags: 0,
  nextCommand: 0,
  messageId: 7n,
  word32: 0xfeff,
  word36: 3,
  sessionId: 0x1122334455667788n,
  ...over,
});
const message = (h: Smb2Header, body: Uint8Array) => {
  const m = new Uint8Array(64 + body.length);
  emitSmb2Header(h, view(m), 0);
  m.set(body, 64);
  return m;
};

describe('negotiate (MS-SMBD §2.2.1, §2.2.2)', () => {
  const req = { minVersion: 0x100, maxVersion: 0x100, creditsRequested: 255, preferredSendSize: 1364, maxReceiveSize: 8192, maxFragmentedSize: 1048576 };
  const rsp = {
    minVersion: 0x100,
    maxVersion: 0x100,
    negotiatedVersion: 0x100,
    creditsRequested: 255,
    creditsGranted: 255,
    status: 0,
    maxReadWriteSize: 1048576,
    preferredSendSize: 1364,
    maxReceiveSize: 8192,
    maxFragmentedSize: 1048576,
  };
  test('request and response read back, little-endian at their offsets', () => {
    const b = emitNegotiateRequest(req);
    expect(b.length).toBe(20);
    expect([...b.subarray(0, 8)]).toEqual([0, 1, 0, 1, 0, 0, 255, 0]);
    expect(parseNegotiateRequest(view(b), 0, 20)).toEqual(req);
    const r = emitNegotiateResponse({ ...rsp, status: 0xc00000bb });
    expect(r.length).toBe(32);
    expect([...r.subarray(12, 16)]).toEqual([0xbb, 0, 0, 0xc0]);
    expect(parseNegotiateResponse(view(r), 0, 32)).toEqual({ ...rsp, status: 0xc00000bb });
  });
  test('short input is Truncated; a value that does not fit is BadValue', () => {
    expect(wireError(() => parseNegotiateRequest(view(new Uint8Array(19)), 0, 19)).code).toBe(WireErrorCode.Truncated);
    expect(wireError(() => parseNegotiateResponse(view(new Uint8Array(31)), 0, 31)).code).toBe(WireErrorCode.Truncated);
    expect(wireError(() => emitNegotiateRequest({ ...req, creditsRequested: 0x10000 })).code).toBe(WireErrorCode.BadValue);
    expect(wireError(() => emitNegotiateResponse({ ...rsp, status: -1 })).code).toBe(WireErrorCode.BadValue);
  });
});

describe('data transfer (MS-SMBD §2.2.3)', () => {
  test('a message with data puts it at offset 24 after the Padding; one without is 20 bytes', () => {
    const m = emitDataTransfer({ creditsRequested: 255, creditsGranted: 1, flags: 1, remainingDataLength: 100 }, Uint8Array.of(1, 2, 3));
    expect(m.length).toBe(27);
    expect(parseDataTransfer(view(m), 0, m.length)).toEqual({
      creditsRequested: 255,
      creditsGranted: 1,
      flags: 1,
      remainingDataLength: 100,
      dataOffset: 24,
      dataLength: 3,
      padding: 0,
    });
    const e = emitDataTransfer({ creditsRequested: 1, creditsGranted: 2, flags: 0, remainingDataLength: 0 }, new Uint8Array(0));
    expect(parseDataTransfer(view(e), 0, 20)).toEqual({
      creditsRequested: 1,
      creditsGranted: 2,
      flags: 0,
      remainingDataLength: 0,
      dataOffset: 0,
      dataLength: 0,
      padding: null,
    });
  });
  test('short, misaligned or overlong is a WireError', () => {
    expect(wireError(() => parseDataTransfer(view(new Uint8Array(19)), 0, 19)).code).toBe(WireErrorCode.Truncated);
    const m = emitDataTransfer({ creditsRequested: 1, creditsGranted: 1, flags: 0, remainingDataLength: 0 }, new Uint8Array(8));
    view(m).setUint32(16, 9, true);
    expect(wireError(() => parseDataTransfer(view(m), 0, m.length)).code).toBe(WireErrorCode.BadLength);
    view(m).setUint32(16, 4, true);
    view(m).setUint32(12, 20, true);
    expect(wireError(() => parseDataTransfer(view(m), 0, m.length)).code).toBe(WireErrorCode.BadField);
    expect(wireError(() => emitDataTransfer({ creditsRequested: 1, creditsGranted: 1, flags: 0x10000, remainingDataLength: 0 }, new Uint8Array(0))).code).toBe(
      WireErrorCode.BadValue,
    );
  });
});

describe('SMB2 header (MS-SMB2 §2.2.1) and READ/WRITE with buffer descriptors', () => {
  test('the header reads back; a wrong ProtocolId or StructureSize is BadField, a short one Truncated', () => {
    const m = message(hdr({ flags: 1, status: 0xc0000022 }), new Uint8Array(0));
    expect([...m.subarray(0, 6)]).toEqual([0xfe, 0x53, 0x4d, 0x42, 64, 0]);
    expect(parseSmb2Header(view(m), 0, 64)).toEqual(hdr({ flags: 1, status: 0xc0000022 }));
    expect(smb2CommandName(9)).toBe('WRITE');
    expect(smb2CommandName(0x55)).toBe('0x0055');
    m[0] = 0xff;
    expect(wireError(() => parseSmb2Header(view(m), 0, 64)).code).toBe(WireErrorCode.BadField);
    m[0] = 0xfe;
    m[4] = 65;
    expect(wireError(() => parseSmb2Header(view(m), 0, 64)).code).toBe(WireErrorCode.BadField);
    expect(wireError(() => parseSmb2Header(view(m), 0, 63)).code).toBe(WireErrorCode.Truncated);
    expect(wireError(() => emitSmb2Header(hdr({ messageId: -1n }), view(new Uint8Array(64)), 0)).code).toBe(WireErrorCode.BadValue);
  });
  test('READ and WRITE requests carry their descriptors; responses their length', () => {
    const d = [
      { offset: 0x7f0000001000n, token: 0xabcd0001, length: 8192 },
      { offset: 0x7f0000004000n, token: 0xabcd0002, length: 4096 },
    ];
    for (const write of [false, true]) {
      const r = { length: 12288, offset: 65536n, channel: Smb2Channel.RDMA_V1, descriptors: d };
      const m = message(hdr({ command: write ? 9 : 8 }), emitReadWriteRequest(r, write));
      expect(parseReadWriteRequest(view(m), write)).toEqual(r);
      const none = message(hdr(), emitReadWriteRequest({ length: 5, offset: 0n, channel: 0, descriptors: [] }, write));
      expect(parseReadWriteRequest(view(none), write)).toEqual({ length: 5, offset: 0n, channel: 0, descriptors: [] });
      expect(parseReadWriteResponseLength(view(message(hdr({ flags: 1 }), write ? emitWriteResponse(12288) : emitReadResponse(12288))), write)).toBe(12288);
      // Channel info past the message, of a length not a multiple of 16, or a short body.
      const bad = message(hdr(), emitReadWriteRequest(r, write));
      view(bad).setUint16(64 + (write ? 42 : 46), 48, true);
      expect(wireError(() => parseReadWriteRequest(view(bad), write)).code).toBe(WireErrorCode.BadLength);
      view(bad).setUint16(64 + (write ? 42 : 46), 15, true);
      expect(wireError(() => parseReadWriteRequest(view(bad), write)).code).toBe(WireErrorCode.BadLength);
      expect(wireError(() => parseReadWriteRequest(view(new Uint8Array(100)), write)).code).toBe(WireErrorCode.Truncated);
    }
    expect(parseBufferDescriptors(view(emitBufferDescriptors(d)), 0, 32)).toEqual(d);
    const setup = message(hdr({ command: 1 }), new Uint8Array(25));
    view(setup).setUint32(72, 1, true);
    expect(parseSessionSetupChannel(view(setup))).toBe(1);
    expect(wireError(() => parseSessionSetupChannel(view(new Uint8Array(80)))).code).toBe(WireErrorCode.Truncated);
    expect(wireError(() => emitBufferDescriptors([{ offset: 0n, token: 2 ** 32, length: 0 }])).code).toBe(WireErrorCode.BadValue);
  });
});
