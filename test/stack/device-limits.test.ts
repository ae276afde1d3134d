/**
 * Device limits ("memory under attack"): live QPs and memory regions stop at max_qp and
 * max_mr with `ROCE_ERR_LIMIT` and a message naming the limit; freeing one makes room again; and
 * register/deregister cycles never run out of key indexes (before, the 2^20th registration failed
 * even with one region live, since indexes were never used again).
 */
import { Device } from '../../stack/device';
import { VerbsError } from '../../stack/errors';
import { RXE_DEVICE_LIMITS } from '../../stack/device-limits';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { VirtualClock } from '../../base/clock';
import { createMemoryLink } from '../../nic-driver/memory-link';

function device(limits?: { maxQp?: number; maxMr?: number }): Device {
  const clock = new VirtualClock(0);
  const link = createMemoryLink({ clock });
  return new Device({ driver: link.a, clock, ipv4: ['198.18.0.1'], ...(limits !== undefined ? { limits } : {}) });
}

function code(f: () => unknown): string | null {
  try {
    f();
    return null;
  } catch (e) {
    return e instanceof VerbsError ? `${e.code}: ${e.message}` : `not a VerbsError: ${String(e)}`;
  }
}

test("the defaults are rxe's", () => {
  expect(device().limits).toEqual(RXE_DEVICE_LIMITS);
  expect(RXE_DEVICE_LIMITS).toEqual({ maxQp: 1048561, maxMr: 524288, maxMw: 524288 });
});

test('max_qp: the next createQp fails with ROCE_ERR_LIMIT; a destroyed QP makes room', () => {
  const dev = device({ maxQp: 5 });
  const pd = dev.allocPd();
  const cq = dev.createCq(16);
  const qps = Array.from({ length: 5 }, () => dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq }));
  expect(code(() => dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq }))).toBe(
    'ROCE_ERR_LIMIT: createQp: the device already has 5 QPs, its limit (max_qp); destroy one first',
  );
  dev.destroyQp(qps[2]!);
  expect(code(() => dev.createQp(pd, { qpType: QpType.UD, sendCq: cq, recvCq: cq }))).toBeNull();
});

test('max_mr: the next regMr fails with ROCE_ERR_LIMIT; a deregistered region makes room', () => {
  const dev = device({ maxMr: 3 });
  const pd = dev.allocPd();
  const mrs = [1, 2, 3].map(() => dev.regMr(pd, new Uint8Array(64), Access.LOCAL_WRITE));
  expect(code(() => dev.regMr(pd, new Uint8Array(64), Access.LOCAL_WRITE))).toBe(
    'ROCE_ERR_LIMIT: regMr: the device already has 3 memory regions, its limit (max_mr); deregister one first',
  );
  dev.deregMr(mrs[0]!);
  expect(code(() => dev.regMr(pd, new Uint8Array(64), Access.LOCAL_WRITE))).toBeNull();
});

test('1.1 M register/deregister cycles (more than the 2^20 key indexes) all succeed, keys stay distinct among live regions', () => {
  const dev = device();
  const pd = dev.allocPd();
  const buf = new Uint8Array(16);
  const keep = dev.regMr(pd, buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
  let last = 0;
  for (let i = 0; i < 1_100_000; i++) {
    const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE);
    if (mr.lkey >>> 8 === keep.lkey >>> 8) throw new Error(`cycle ${i}: index of a live region handed out again`);
    last = mr.lkey;
    dev.deregMr(mr);
  }
  expect(last >>> 8).toBeGreaterThan(0);
  expect(keep.valid).toBe(true);
}, 60_000);

test('100 000 QP create/destroy cycles, as a peer repeating the rc_pingpong exchange would cause, all succeed', () => {
  const dev = device({ maxQp: 4 });
  const pd = dev.allocPd();
  const cq = dev.createCq(16);
  for (let i = 0; i < 100_000; i++) dev.destroyQp(dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq }));
  expect(code(() => dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq }))).toBeNull();
}, 60_000);
