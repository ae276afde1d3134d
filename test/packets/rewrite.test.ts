/** Rewriting captured frames for re-sending: addresses, QPNs, PSNs, checksums and ICRC. */
import { makeRewriter } from '../../packets/rewrite';
import { buildRoceV2Frame } from '../../packets/build';
import { decodeFrame, packetAddresses } from '../../packets/decode';
import { ipv4ChecksumOk } from '../../packets/ipv4';
import { viewOf } from '../../packets/bytes';

const frame = buildRoceV2Frame({
  eth: { src: 0x020000000001, dst: 0x020000000002 },
  ip: { version: 4, src: '10.0.0.1', dst: '10.0.0.2' },
  bth: { opcode: 0x0a, destQp: 0x45, psn: 0xfffffe, ackReq: true },
  reth: { va: 0x1000n, rkey: 0x77, dmaLength: 3 },
  payload: new Uint8Array([1, 2, 3]),
});

test('MACs, IPs, QPN and PSN are rewritten and the frame is valid again', () => {
  const rw = makeRewriter({
    mac: new Map([[0x020000000001, 0x0a0000000001]]),
    ip: new Map([
      ['10.0.0.1', '198.18.0.1'],
      ['10.0.0.2', '198.18.0.2'],
    ]),
    qpn: new Map([[0x45, 0x11]]),
    psnOffset: new Map([[0x11, 5]]),
  });
  const { frame: out, changed } = rw(frame);
  expect(changed).toBe(true);
  const d = decodeFrame(out);
  if (!d.roce) throw new Error('not RoCE');
  expect(d.error).toBeNull();
  expect(d.icrcOk).toBe(true);
  expect(ipv4ChecksumOk(viewOf(out), d.l3Off, 5)).toBe(true);
  expect(packetAddresses(d)).toEqual({ src: '198.18.0.1', dst: '198.18.0.2' });
  expect(d.eth?.src).toBe(0x0a0000000001);
  expect(d.eth?.dst).toBe(0x020000000002);
  expect(d.bth?.destQp).toBe(0x11);
  expect(d.bth?.psn).toBe(3); // 0xfffffe + 5 wraps
  expect(d.reth).toEqual({ va: 0x1000n, rkey: 0x77, dmaLength: 3 });
  expect(Array.from(frame.subarray(0, 6))).toEqual(Array.from(out.subarray(0, 6))); // the input is not modified
});

test('a frame no rule touches comes back unchanged', () => {
  const { frame: out, changed } = makeRewriter({ qpn: new Map([[0x99, 1]]) })(frame);
  expect(changed).toBe(false);
  expect(Buffer.compare(out, frame)).toBe(0);
});

test('IPv6 rewrite and mixed families refused', () => {
  const v6 = buildRoceV2Frame({ eth: { src: 1, dst: 2 }, ip: { version: 6, src: 'fd00::1', dst: 'fd00::2' }, bth: { opcode: 0x04, destQp: 3, psn: 1 } });
  const { frame: out } = makeRewriter({ ip: new Map([['fd00::2', '2001:db8::9']]) })(v6);
  const d = decodeFrame(out);
  expect(d.roce && d.icrcOk).toBe(true);
  if (d.roce) expect(packetAddresses(d).dst).toBe('2001:db8::9');
  expect(() => makeRewriter({ ip: new Map([['10.0.0.1', 'fd00::1']]) })).toThrow(/both must be IPv4 or both IPv6/);
});
