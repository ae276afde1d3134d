/**
 * RFC 8797's RPC-over-RDMA CM private data (ulp/rpc-rdma/cm-private-data.ts): the 8-byte record
 * round trip, its absence (other private data), and a malformed one as a typed error.
 */
import { WireError } from '../../packets/errors';
import { RPCRDMA_CM_FORMAT_ID, emitRpcRdmaCmPrivateData, parseRpcRdmaCmPrivateData } from '../../ulp/rpc-rdma/cm-private-data';

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);

test('the record round trip: sizes in 1024-byte units less one, the I flag in bit 0', () => {
  const b = emitRpcRdmaCmPrivateData({ remoteInvalidate: true, sendSize: 4096, receiveSize: 262144 });
  expect([...b]).toEqual([0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 255]);
  expect(parseRpcRdmaCmPrivateData(view(b), 0, b.length)).toEqual({ version: 1, flags: 1, remoteInvalidate: true, sendSize: 4096, receiveSize: 262144 });
  expect(RPCRDMA_CM_FORMAT_ID).toBe(0xf6ab0e18);
});

test('private data without the format identifier is not the record; a bad version or a short record is a WireError', () => {
  expect(parseRpcRdmaCmPrivateData(view(new Uint8Array(56)), 0, 56)).toBeNull();
  expect(parseRpcRdmaCmPrivateData(view(new Uint8Array(2)), 0, 2)).toBeNull();
  const v2 = emitRpcRdmaCmPrivateData({ remoteInvalidate: false, sendSize: 1024, receiveSize: 1024 });
  v2[4] = 2;
  expect(() => parseRpcRdmaCmPrivateData(view(v2), 0, v2.length)).toThrow(WireError);
  expect(() => parseRpcRdmaCmPrivateData(view(v2.subarray(0, 6)), 0, 6)).toThrow(WireError);
  expect(() => emitRpcRdmaCmPrivateData({ remoteInvalidate: false, sendSize: 1000, receiveSize: 1024 })).toThrow(WireError);
});
