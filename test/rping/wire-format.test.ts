/** rping's 16-byte buffer advertisement and its client's ping data, byte for byte as rping.c makes them. */
import { decodeRdmaInfo, encodeRdmaInfo, RDMA_INFO_LEN } from '../../apps/rping/rdma-info';
import { cString, cStringBytes, fillPingData, RPING_MIN_BUFSIZE } from '../../apps/rping/ping-data';

test('struct rping_rdma_info: buf (64), rkey (32), size (32), big-endian (htobe64/htobe32)', () => {
  const b = encodeRdmaInfo({ buf: 0x00007f1234567890n, rkey: 0x00abcdef, size: 64 });
  expect(b.length).toBe(RDMA_INFO_LEN);
  expect(Buffer.from(b).toString('hex')).toBe('00007f1234567890' + '00abcdef' + '00000040');
  expect(decodeRdmaInfo(b)).toEqual({ buf: 0x00007f1234567890n, rkey: 0x00abcdef, size: 64 });
});

test('ping data: "rdma-ping-N: ", letters from A+N wrapping at z, NUL last', () => {
  const b = new Uint8Array(64);
  fillPingData(b, 0);
  expect(cString(b)).toBe('rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr');
  expect(cStringBytes(b)).toBe(64);
  fillPingData(b, 57);
  expect(cString(b).slice(0, 16)).toBe('rdma-ping-57: zA');
  fillPingData(b, 58); // the start letter wraps back to A after 58 pings
  expect(cString(b).slice(0, 15)).toBe('rdma-ping-58: A');
  const big = new Uint8Array(200);
  fillPingData(big, 3);
  // after 'z' the letters start again at 'A'
  expect(cString(big).slice(13 + 122 - 68, 13 + 122 - 68 + 3)).toBe('zAB'); // 'D' at 13, 'z' 54 letters later
});

test('the smallest size rping allows holds the longest prefix and a NUL', () => {
  const b = new Uint8Array(RPING_MIN_BUFSIZE);
  fillPingData(b, 0x7fffffff);
  expect(cString(b)).toBe('rdma-ping-2147483647: HIJ'); // 2147483647 % 58 = 7: 'H';
  expect(b[RPING_MIN_BUFSIZE - 1]).toBe(0);
});
