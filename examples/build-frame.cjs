// Build a RoCE v2 frame from a description, check its ICRC, and see a flipped bit caught.
//   node build-frame.cjs
const assert = require('node:assert/strict');
const { buildRoceV2Frame, decodeFrame, Opcode, verifyIcrcV2 } = require('roce-ts/packets');

const payload = new TextEncoder().encode('hello, RoCE');
const frame = buildRoceV2Frame({
  eth: { src: 0x02_00_00_00_00_01, dst: 0x02_00_00_00_00_02 },
  ip: { version: 4, src: '198.18.0.1', dst: '198.18.0.2' },
  bth: { opcode: Opcode.RC_SEND_ONLY, destQp: 0x11, psn: 100, ackReq: true },
  payload,
});

// The ICRC covers the IP header (its variant fields masked) to the end of the payload; its own
// 4 bytes end the frame.
const ipOffset = 14; // after the Ethernet header
const icrcOffset = frame.length - 4;
assert.equal(verifyIcrcV2(frame, ipOffset, icrcOffset), true);

const p = decodeFrame(frame);
assert.equal(p.roce, true);
assert.equal(p.icrcOk, true);
assert.equal(p.bth.destQp, 0x11);
assert.deepEqual(frame.subarray(p.payloadOff, p.payloadOff + p.payloadLength), payload);

// A bit flipped in the payload, as a faulty switch would: the ICRC no longer checks.
const corrupt = frame.slice();
corrupt[p.payloadOff] ^= 0x01;
assert.equal(verifyIcrcV2(corrupt, ipOffset, icrcOffset), false);
assert.equal(decodeFrame(corrupt).icrcOk, false);
console.log(`built a ${frame.length}-byte RC_SEND_ONLY frame; ICRC 0x${p.icrc.toString(16)} checks, and fails with one bit flipped`);
