/**
 * Names a peer addresses a device by: memory keys, default region addresses and QP numbers,
 * random by default (stack/key-allocator.ts, stack/qpn-allocator.ts) and rxe's sequential order
 * when asked; starting PSNs from the injected random source. docs/security.md gives the entropy.
 */
import { ProgrammingError } from '../../base/programming-error';
import { Device } from '../../stack/device';
import { AllocationOrder } from '../../stack/allocation-order';
import { KeyAllocator, RXE_MW_INDEX_RANGES } from '../../stack/key-allocator';
import { FIRST_QPN, QpnAllocator } from '../../stack/qpn-allocator';
import { MrFault } from '../../stack/memory-region';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { VirtualClock } from '../../base/clock';
import { Rng } from '../../base/rng';
import { CryptoRandom } from '../../base/crypto-random';
import { type RandomSource, uniformBelow } from '../../base/random-source';
import { createMemoryLink } from '../../nic-driver/memory-link';

function device(o: { allocation?: AllocationOrder; random?: RandomSource; seed?: number } = {}): Device {
  const clock = new VirtualClock(0);
  const link = createMemoryLink({ clock });
  return new Device({ driver: link.a, clock, ipv4: ['198.18.0.1'], ...o });
}

const RW = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;

describe('memory keys', () => {
  test('random (the default): distinct indexes spread over 24 bits, every byte value, rxe window indexes avoided, each region found by its key', () => {
    const dev = device({ random: new CryptoRandom() });
    const pd = dev.allocPd();
    const mrs = Array.from({ length: 2000 }, () => dev.regMr(pd, new Uint8Array(64), RW));
    const indexes = mrs.map((m) => m.rkey >>> 8);
    expect(new Set(indexes).size).toBe(mrs.length);
    expect(mrs.every((m) => m.lkey === m.rkey)).toBe(true);
    expect(indexes.some((i) => i >= 1 << 23)).toBe(true);
    expect(indexes.every((i) => i >= 1 && i < 1 << 24 && RXE_MW_INDEX_RANGES.every((r) => i < r.min || i > r.max))).toBe(true);
    // Consecutive keys do not step by a constant.
    const steps = new Set(mrs.slice(1).map((m, i) => (m.rkey - (mrs[i]?.rkey ?? 0)) | 0));
    expect(steps.size).toBeGreaterThan(1990);
    expect(new Set(mrs.map((m) => m.rkey & 0xff)).size).toBeGreaterThan(200);
    const qp = {}; // the QP asking (it matters only to a type 2 memory window)
    for (const m of mrs) {
      expect(dev.mrs.checkRemote(pd, m.rkey, m.addr(8), 8, Access.REMOTE_WRITE, qp).mr).toBe(m);
      // The same index with another key byte is not the region's key.
      expect(dev.mrs.checkRemote(pd, (m.rkey ^ 1) >>> 0, m.addr(8), 8, Access.REMOTE_WRITE, qp).fault).toBe(MrFault.BAD_KEY);
    }
  });

  test('random default addresses: page-aligned, in the 47-bit user range, not one after the other', () => {
    const dev = device({ random: new CryptoRandom() });
    const pd = dev.allocPd();
    const vas = Array.from({ length: 200 }, () => dev.regMr(pd, new Uint8Array(10000), RW).iova);
    expect(vas.every((v) => v % 0x1000n === 0n && v >= 1n << 32n && v + 10000n <= 1n << 47n)).toBe(true);
    expect(new Set(vas).size).toBe(vas.length);
    const gaps = new Set(vas.slice(1).map((v, i) => v - (vas[i] ?? 0n)));
    expect(gaps.size).toBe(vas.length - 1);
  });

  test("sequential: rxe's order, index 1 upward with the key byte stepping by 0x25, addresses one after the other", () => {
    const dev = device({ allocation: AllocationOrder.SEQUENTIAL, random: new CryptoRandom() });
    const pd = dev.allocPd();
    const mrs = [0, 1, 2].map(() => dev.regMr(pd, new Uint8Array(4096), RW));
    expect(mrs.map((m) => m.rkey)).toEqual([0x136, 0x25b, 0x380]);
    expect(mrs.map((m) => m.iova)).toEqual([0x7f0000000000n, 0x7f0000002000n, 0x7f0000004000n]);
  });

  test('a key asked for (replay) is taken as it is; its index is then not handed out', () => {
    const dev = device();
    const pd = dev.allocPd();
    const mr = dev.regMr(pd, new Uint8Array(64), RW, 0x1000n, 0xabcdef12);
    expect([mr.rkey, mr.iova]).toEqual([0xabcdef12, 0x1000n]);
    expect(() => dev.regMr(pd, new Uint8Array(64), RW, undefined, 0xabcdef34)).toThrow(/key index 0xabcdef is already in use/);
  });

  test("a fast-registration region gets a random index too, and its REG_MR keeps it (only the byte is the consumer's)", () => {
    const dev = device({ random: new CryptoRandom() });
    const pd = dev.allocPd();
    const fast = [0, 1, 2, 3].map(() => dev.allocMr(pd, 1));
    expect(new Set(fast.map((m) => m.lkey >>> 8)).size).toBe(4);
    const m = fast[0]!;
    dev.mapMrSg(m, new Uint8Array(4096), 0x5000n);
    expect(dev.mrs.registerFast(pd, m, ((m.lkey & ~0xff) | 0x5a) >>> 0, RW)).toBe('');
    expect(m.rkey & 0xff).toBe(0x5a);
    const other = fast[1]!;
    dev.mapMrSg(other, new Uint8Array(4096), 0x9000n);
    expect(dev.mrs.registerFast(pd, other, (other.lkey + 0x100) >>> 0, RW)).toMatch(/must keep the region's key index/);
  });

  test('a seeded device hands out the same keys for the same seed, other keys for another', () => {
    const keys = (seed: number): number[] => {
      const dev = device({ seed });
      const pd = dev.allocPd();
      return [0, 1, 2].map(() => dev.regMr(pd, new Uint8Array(8), RW).rkey);
    };
    expect(keys(7)).toEqual(keys(7));
    expect(keys(7)).not.toEqual(keys(8));
  });

  test('a nearly full random index space still finds the free index', () => {
    // A source that always lands on index 5 forces the search past the random draws.
    const stuck: RandomSource = { u32: () => 4 };
    const keys = new KeyAllocator(AllocationOrder.RANDOM, stuck);
    const used = new Set([5, 6, 7]);
    expect((keys.key((i) => used.has(i), used.size) ?? 0) >>> 8).toBe(8);
  });

  test("the search past a taken index jumps over each of rxe's window index ranges", () => {
    // Slot s is index s + 1 below 0x10001; the slots after it skip 0x10001..0x20000 and then 0x80001..0x100000.
    const from = (slot: number, taken: number): number => {
      const keys = new KeyAllocator(AllocationOrder.RANDOM, { u32: () => slot });
      return (keys.key((i) => i === taken, 1) ?? 0) >>> 8;
    };
    expect(from(0xffff, 0x10000)).toBe(0x20001);
    expect(from(0x10000, 0)).toBe(0x20001);
    expect(from(0x80000 - 1 - 0x10000, 0x80000)).toBe(0x100001);
    expect(from(0xffffff - 1 - 0x10000 - 0x80000, 0xffffff)).toBe(1); // the last slot is index 2^24-1; the search wraps to 1
  });
});

describe('QP numbers', () => {
  test('random (the default): distinct, from 0x11 up over 24 bits, not consecutive', () => {
    const dev = device({ random: new CryptoRandom() });
    const pd = dev.allocPd();
    const cq = dev.createCq(16);
    const qpns = Array.from({ length: 500 }, () => dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq }).qpNum);
    expect(new Set(qpns).size).toBe(qpns.length);
    expect(qpns.every((q) => q >= FIRST_QPN && q <= 0xffffff)).toBe(true);
    expect(qpns.some((q) => q >= 1 << 23)).toBe(true);
    expect(qpns.slice(1).filter((q, i) => q === (qpns[i] ?? 0) + 1).length).toBeLessThan(3);
  });

  test("sequential: rxe's order from 0x11, a destroyed QP's number used again only after the wrap", () => {
    const dev = device({ allocation: AllocationOrder.SEQUENTIAL });
    const pd = dev.allocPd();
    const cq = dev.createCq(16);
    const make = () => dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const [a, b] = [make(), make()];
    expect([a.qpNum, b.qpNum]).toEqual([0x11, 0x12]);
    dev.destroyQp(a);
    expect(make().qpNum).toBe(0x13);
  });

  test('a QP number asked for is given and then skipped by the allocator', () => {
    const q = new QpnAllocator(AllocationOrder.SEQUENTIAL);
    const used = new Set([0x11, 0x12]);
    expect(q.next((n) => used.has(n), used.size)).toBe(0x13);
  });
});

describe('starting PSNs and the random source', () => {
  test('randomPsn draws from the injected source', () => {
    const words = [0xdeadbeef, 0x01234567];
    const src: RandomSource = { u32: () => words.shift() ?? 0 };
    const dev = device({ random: src, allocation: AllocationOrder.SEQUENTIAL });
    expect([dev.randomPsn(), dev.randomPsn()]).toEqual([0xadbeef, 0x234567]);
  });

  test('without a source, PSNs come from the seed as before names were random (sims keep their PSNs)', () => {
    const rng = new Rng(9);
    const dev = device({ seed: 9 });
    const pd = dev.allocPd();
    dev.regMr(pd, new Uint8Array(8), RW);
    expect(dev.randomPsn()).toBe(rng.u32() & 0xffffff);
  });

  test('uniformBelow stays below n and reaches every value; bad n is refused', () => {
    const r = new Rng(3);
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) seen.add(uniformBelow(r, 7));
    expect([...seen].sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(uniformBelow(r, 0x1_0000_0000)).toBeLessThan(0x1_0000_0000);
    expect(() => uniformBelow(r, 0)).toThrow(ProgrammingError);
  });

  test('CryptoRandom gives 32-bit words that do not repeat in a few thousand', () => {
    const c = new CryptoRandom();
    const w = Array.from({ length: 3000 }, () => c.u32());
    expect(w.every((x) => Number.isInteger(x) && x >= 0 && x <= 0xffffffff)).toBe(true);
    expect(new Set(w).size).toBeGreaterThan(2990);
  });
});
