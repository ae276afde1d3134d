/**
 * A local ACK timer that comes due first takes what the driver has received already
 * (stack/completer.ts, QpContext.pollReceived). On a host, a process held up past the deadline (a
 * long task, a GC pause) runs its due timers before the I/O of that loop turn, so an ACK sitting in
 * the receive ring would otherwise count as a timeout, spend a retry and resend for nothing.
 *
 * The driver here holds every arrival as a stalled process would (its receive handler does not
 * run) until someone polls it: with `pollRx` the timer's poll finds the ACK; without it (a driver
 * that cannot be polled) the same run times out and resends, which shows what the poll saves.
 */
import { VirtualClock } from '../../base/clock';
import { Device } from '../../stack/device';
import { createMemoryLink } from '../../nic-driver/memory-link';
import { PassThroughDriver } from '../../nic-driver/pass-through-driver';
import type { NicDriver } from '../../nic-driver/driver';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus } from '../../stack/work-completion';
import { Mtu } from '../../stack/mtu';

/** Arrivals wait in the inner driver's ring; the stack's handler runs only when polled (or released). */
class StalledReceiver extends PassThroughDriver {
  private handler: (() => void) | null = null;
  held = 0;
  constructor(
    inner: NicDriver,
    private readonly pollable: boolean,
  ) {
    super(inner);
    if (!pollable) (this as { pollRx?: unknown }).pollRx = undefined;
  }
  override setRxHandler(fn: (() => void) | null): void {
    this.handler = fn;
    this.inner.setRxHandler(fn === null ? null : () => void this.held++);
  }
  override pollRx(): boolean {
    return this.pollable && this.release();
  }
  /** The process gets to its I/O: the handler runs on what is held. */
  release(): boolean {
    if (this.held === 0 || this.handler === null) return false;
    this.held = 0;
    this.handler();
    return true;
  }
}

function run(pollable: boolean): { status: WcStatus | undefined; timeouts: number; resent: number; at: number } {
  const clock = new VirtualClock(0);
  // 3 µs each way: the ACK is back after about 6 µs, inside the 8.2 µs local ACK timeout (exponent 1).
  const link = createMemoryLink({ clock, mtu: 4200, macA: 0x020000000001, macB: 0x020000000002, faults: { aToB: { delayNs: 3000 }, bToA: { delayNs: 3000 } } });
  const held = new StalledReceiver(link.a, pollable);
  const a = new Device({ driver: held, clock, ipv4: ['198.18.0.1'], neighbors: { '198.18.0.2': 0x020000000002 } });
  const b = new Device({ driver: link.b, clock, ipv4: ['198.18.0.2'], neighbors: { '198.18.0.1': 0x020000000001 } });
  const pdA = a.allocPd();
  const pdB = b.allocPd();
  const src = a.regMr(pdA, new Uint8Array(64).fill(5), Access.LOCAL_WRITE);
  const dst = b.regMr(pdB, new Uint8Array(64), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
  const cqA = a.createCq(16);
  const cqB = b.createCq(16);
  const qpA = a.createQp(pdA, { qpType: QpType.RC, sendCq: cqA, recvCq: cqA });
  const qpB = b.createQp(pdB, { qpType: QpType.RC, sendCq: cqB, recvCq: cqB });
  const ea = endpointOf(a, qpA, 100);
  const eb = endpointOf(b, qpB, 200);
  connectQp(qpA, ea, eb, { pathMtu: Mtu.MTU_1024, timeout: 1, retryCnt: 3 });
  connectQp(qpB, eb, ea, { pathMtu: Mtu.MTU_1024, timeout: 1, retryCnt: 3 });
  qpA.postSend({
    wrId: 1,
    opcode: WrOpcode.RDMA_WRITE,
    sgList: [src.sge(0, 64)],
    sendFlags: SendFlags.SIGNALED,
    rdma: { remoteAddr: dst.addr(0), rkey: dst.rkey },
  });
  // The process stays held up until 20 µs: then its I/O is read (if nothing polled it before).
  clock.runUntil(20_000);
  held.release();
  clock.runUntil(1_000_000);
  const wc = cqA.poll(4)[0];
  const c = a.totalCounters();
  return { status: wc?.status, timeouts: c.local_ack_timeout_err, resent: c.retransmitted_pkts, at: clock.now() };
}

test('the timer polls the driver first: the ACK held in the ring completes the WRITE, no timeout, nothing resent', () => {
  expect(run(true)).toMatchObject({ status: WcStatus.SUCCESS, timeouts: 0, resent: 0 });
});

test('a driver that cannot be polled: the same run counts a timeout and resends the WRITE', () => {
  const r = run(false);
  expect(r.status).toBe(WcStatus.SUCCESS);
  expect(r.timeouts).toBeGreaterThanOrEqual(1);
  expect(r.resent).toBeGreaterThanOrEqual(1);
});
