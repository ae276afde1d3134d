/**
 * The AF_XDP driver's zero-copy transmit path (txReserve / txSpace /
 * txCommit): frames built straight into UMEM slots arrive intact and in
 * order, mixed with txBurst, across the ring's wrap-around and multi-buffer
 * frames, and frames over the MTU are dropped and counted. Root, namespaces
 * and the native addon needed.
 *
 * @group netns
 */
import { AfXdpDriver } from '../../nic-driver/af-xdp-driver';
import { hasZeroCopyTx } from '../../nic-driver/driver';
import { createNetnsPair, destroyNetnsPair, nativeNetnsSkipReason } from '../support/netns';
import { testUnless } from '../support/skip';

/** A UDP 4791 frame whose bytes encode its sequence number and length. */
function fill(buf: Uint8Array, off: number, len: number, seq: number): void {
  buf.fill(0, off, off + len);
  const v = new DataView(buf.buffer, buf.byteOffset + off, len);
  v.setUint16(12, 0x0800);
  buf[off + 14] = 0x45;
  v.setUint16(16, len - 14);
  buf[off + 22] = 64;
  buf[off + 23] = 17;
  v.setUint16(36, 4791);
  v.setUint16(38, len - 34);
  v.setUint32(42, seq);
  v.setUint32(46, len);
  for (let i = 50; i < len; i++) buf[off + i] = (seq * 7 + i) & 0xff;
}

function check(f: Uint8Array): number {
  const v = new DataView(f.buffer, f.byteOffset, f.length);
  const seq = v.getUint32(42);
  const len = v.getUint32(46);
  if (len !== f.length) throw new Error(`seq ${seq}: ${f.length} bytes arrived, ${len} sent`);
  for (let i = 50; i < len; i++) if (f[i] !== ((seq * 7 + i) & 0xff)) throw new Error(`seq ${seq}: byte ${i} differs`);
  return seq;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

testUnless(nativeNetnsSkipReason())('reserve/commit frames arrive intact and in order, with txBurst mixed in', async () => {
  const p = createNetnsPair({ mtu: 9000 });
  const a = AfXdpDriver.open({ ifname: p.ifA, netns: p.nsA, frames: 128 });
  const b = AfXdpDriver.open({ ifname: p.ifB, netns: p.nsB, frames: 512 });
  try {
    expect(hasZeroCopyTx(a)).toBe(true);
    if (!hasZeroCopyTx(a)) return;
    const expected: number[] = [];
    const got: number[] = [];
    const drain = (): void => {
      for (;;) {
        const r = b.rxBurst(64);
        if (r.length === 0) break;
        for (const f of r) got.push(check(f));
      }
    };
    // 9014 fits a 9000-byte MTU with its Ethernet header; 9100 does not and must be dropped.
    const sizes = [60, 1000, 4096, 4097, 4154, 8000, 9014, 9100, 200];
    let seq = 0;
    for (let round = 0; round < 40; round++) {
      for (let k = 0; k < 7; k++) {
        const len = sizes[(round * 7 + k) % sizes.length] as number;
        let off = a.txReserve(len);
        if (off < 0) {
          a.txCommit();
          await sleep(2);
          off = a.txReserve(len);
        }
        expect(off).toBeGreaterThanOrEqual(0);
        fill(a.txSpace.buf, off, len, seq);
        if (len <= 9014) expected.push(seq);
        seq++;
      }
      if (round % 5 === 0) {
        // txBurst commits what is reserved first, so order holds.
        const f = new Uint8Array(300);
        fill(f, 0, 300, seq);
        expected.push(seq++);
        a.txBurst([f]);
      } else {
        a.txCommit();
      }
      await sleep(3);
      drain();
    }
    const deadline = Date.now() + 2000;
    while (got.length < expected.length && Date.now() < deadline) {
      await sleep(10);
      drain();
    }
    expect(got).toEqual(expected);
    expect(a.stats.txDropped).toBe(seq - expected.length);
  } finally {
    a.close();
    b.close();
    destroyNetnsPair(p);
  }
});
