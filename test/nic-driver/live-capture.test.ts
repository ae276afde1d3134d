/**
 * The live capture (`--pcap` on the live commands, nic-driver/live-capture.ts) and the capture
 * driver that feeds it (nic-driver/capture-driver.ts), over the in-memory link: every frame sent
 * (txBurst and zero-copy txReserve/txCommit) and received (rxBurst and descriptor rxRun) lands in
 * a pcap that readCapture reads back, in order, with rising real-clock timestamps; the ring keeps
 * exactly the last N frames; the size limit is never passed; a bad path or bound is a typed error.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { VirtualClock } from '../../base/clock';
import { createMemoryLink, type MemoryDriver } from '../../nic-driver/memory-link';
import { hasRunReceive, hasZeroCopyTx } from '../../nic-driver/driver';
import { CaptureDriver } from '../../nic-driver/capture-driver';
import { LiveCapture, LiveCaptureError, wallClockNs } from '../../nic-driver/live-capture';
import { readCapture } from '../../packets/pcap';
import { testFrame } from './driver-suite';

let dir = '';
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-live-capture-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The sequence number testFrame puts in each frame. */
function seqOf(f: Uint8Array): number {
  return new DataView(f.buffer, f.byteOffset).getUint32(18);
}

function records(file: string): { seq: number; len: number; ns: bigint }[] {
  const r = readCapture(fs.readFileSync(file));
  expect(r.error).toBeNull();
  expect(r.nanosecond).toBe(true);
  return r.records.map((x) => ({ seq: seqOf(x.data), len: x.data.length, ns: x.timestampNs }));
}

function pair(): { a: MemoryDriver; b: MemoryDriver; clock: VirtualClock } {
  const clock = new VirtualClock();
  const link = createMemoryLink({ clock, bandwidthBps: 0 });
  return { a: link.a, b: link.b, clock };
}

test('every frame sent and received, through each transmit and receive path, in order with rising wall-clock times', () => {
  const { a, b, clock } = pair();
  const file = path.join(dir, 'both.pcap');
  const before = BigInt(Date.now()) * 1_000_000n;
  const cap = new LiveCapture({ path: file }, wallClockNs());
  const d = new CaptureDriver(a, cap);
  expect(hasZeroCopyTx(d)).toBe(true);
  expect(hasRunReceive(d)).toBe(true);
  // Sent: two by txBurst, three by zero-copy commit.
  d.txBurst([testFrame(a, b, 1, 100), testFrame(a, b, 2, 200)]);
  for (const s of [3, 4, 5]) {
    const f = testFrame(a, b, s, 60 + s);
    const off = d.txReserve!(f.length);
    d.txSpace!.buf.set(f, off);
  }
  d.txCommit!();
  clock.runUntilIdle();
  expect(b.rxBurst(16).map(seqOf)).toEqual([1, 2, 3, 4, 5]);
  // Received: b answers, first as a run read by rxRun, then as views read by rxBurst.
  for (const s of [10, 11]) {
    const f = testFrame(b, a, s, 300);
    const off = b.txReserve(f.length);
    b.txSpace.buf.set(f, off);
  }
  b.txCommit();
  clock.runUntilIdle();
  const desc = new Uint32Array(8);
  expect(d.rxRun!(4, desc)).toBe(2);
  b.txBurst([testFrame(b, a, 12, 400)]);
  clock.runUntilIdle();
  expect(d.rxBurst(4).map(seqOf)).toEqual([12]);
  cap.close();
  const after = BigInt(Date.now()) * 1_000_000n + 1_000_000n;
  const got = records(file);
  expect(got.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 10, 11, 12]);
  expect(got.map((r) => r.len)).toEqual([100, 200, 63, 64, 65, 300, 300, 400]);
  for (let i = 1; i < got.length; i++) expect(got[i]!.ns >= got[i - 1]!.ns).toBe(true);
  expect(got[0]!.ns >= before - 1_000_000n && got[got.length - 1]!.ns <= after).toBe(true);
  expect(cap.stats).toEqual({ file, frames: 8, dropped: 0, bytes: fs.statSync(file).size });
});

test('a ring of N keeps exactly the last N frames, oldest first, and counts the rest as dropped', () => {
  const { a, b } = pair();
  const file = path.join(dir, 'ring.pcap');
  const cap = new LiveCapture({ path: file, maxFrames: 10 }, wallClockNs());
  const d = new CaptureDriver(a, cap);
  for (let s = 0; s < 137; s++) d.txBurst([testFrame(a, b, s, 64 + (s % 50))]);
  expect(fs.statSync(file).size).toBe(24); // nothing but the header until close
  cap.close();
  expect(records(file).map((r) => r.seq)).toEqual([127, 128, 129, 130, 131, 132, 133, 134, 135, 136]);
  expect(cap.stats).toMatchObject({ frames: 10, dropped: 127 });
  // A ring that never filled keeps all, in order.
  const file2 = path.join(dir, 'ring-short.pcap');
  const cap2 = new LiveCapture({ path: file2, maxFrames: 10 }, wallClockNs());
  const d2 = new CaptureDriver(a, cap2);
  for (let s = 0; s < 4; s++) d2.txBurst([testFrame(a, b, s, 64)]);
  cap2.close();
  expect(records(file2).map((r) => r.seq)).toEqual([0, 1, 2, 3]);
});

test('the size limit is never passed: whole records up to it, the rest dropped; chunks past 1 MiB are all written', () => {
  const { a, b } = pair();
  const file = path.join(dir, 'size.pcap');
  const limit = 10_000;
  const cap = new LiveCapture({ path: file, maxBytes: limit }, wallClockNs());
  const d = new CaptureDriver(a, cap);
  for (let s = 0; s < 100; s++) d.txBurst([testFrame(a, b, s, 1000)]);
  cap.close();
  const size = fs.statSync(file).size;
  expect(size).toBeLessThanOrEqual(limit);
  expect(size).toBe(24 + 9 * (16 + 1000)); // 9 whole records fit in 10 000 bytes
  expect(records(file).map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  expect(cap.stats).toMatchObject({ frames: 9, dropped: 91 });
  // Streaming past several chunks: every frame is in the file after close.
  const big = path.join(dir, 'big.pcap');
  const cap2 = new LiveCapture({ path: big }, wallClockNs());
  const d2 = new CaptureDriver(a, cap2);
  for (let s = 0; s < 3000; s++) d2.txBurst([testFrame(a, b, s, 1500)]);
  cap2.close();
  const got = records(big);
  expect(got).toHaveLength(3000);
  expect(got[2999]!.seq).toBe(2999);
});

test('a snapshot length keeps the first bytes of each frame and its real length, in the ring too', () => {
  const { a, b } = pair();
  for (const ring of [undefined, 3]) {
    const file = path.join(dir, `snap-${String(ring)}.pcap`);
    const cap = new LiveCapture({ path: file, snapLen: 128, ...(ring !== undefined ? { maxFrames: ring } : {}) }, wallClockNs());
    const d = new CaptureDriver(a, cap);
    d.txBurst([testFrame(a, b, 1, 100), testFrame(a, b, 2, 1500), testFrame(a, b, 3, 4000)]);
    cap.close();
    const r = readCapture(fs.readFileSync(file));
    expect(r.error).toBeNull();
    expect(r.records.map((x) => [seqOf(x.data), x.data.length, x.origLen])).toEqual([
      [1, 100, 100],
      [2, 128, 1500],
      [3, 128, 4000],
    ]);
    expect(fs.statSync(file).size).toBe(24 + 3 * 16 + 100 + 128 + 128);
  }
});

test('a file that cannot be created, and bounds that are not positive integers, are typed errors', () => {
  expect(() => new LiveCapture({ path: path.join(dir, 'no-such-dir', 'x.pcap') }, wallClockNs())).toThrow(LiveCaptureError);
  try {
    new LiveCapture({ path: path.join(dir, 'no-such-dir', 'x.pcap') }, wallClockNs());
  } catch (e) {
    expect((e as LiveCaptureError).code).toBe('ROCE_ERR_CAPTURE_FILE');
    expect((e as Error).message).toMatch(/cannot write the capture .*no-such-dir/);
  }
  for (const bad of [{ maxFrames: 0 }, { maxFrames: 1.5 }, { maxBytes: 10 }, { snapLen: 10 }, { snapLen: 1e6 }]) {
    expect(() => new LiveCapture({ path: path.join(dir, 'bad.pcap'), ...bad }, wallClockNs())).toThrow(
      expect.objectContaining({ code: 'ROCE_ERR_CAPTURE_BOUND' }),
    );
  }
});
