/**
 * Warming the stack's code before a latency run. V8 compiles hot functions with its optimising
 * compiler after they have run a while, and each compilation (and each deoptimisation that
 * follows a new shape) stalls the thread for up to milliseconds. Measured on a busy-polling
 * `roce pingpong` over AF_XDP: the first half second of a run held most of its stalls over 1 ms
 * (88 in 0.8 s, against 13 in 1.4 s with the optimiser off), which set its p99 and p99.9.
 *
 * `warmUpStack` runs SEND ping-pongs of the run's message size between two devices on an
 * in-memory link, on a virtual clock, in this process, before the real run opens its device: the
 * requester, responder, completer, decoder, ICRC and completion-queue code the run will use is
 * optimised by then. It touches no network and leaves nothing behind.
 */
import { createSimPair } from '../sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { Access, Mtu, QpType, SendFlags, WcStatus, WrOpcode } from '../../stack/types';
import { internalError } from '../../base/programming-error';

const SEND_WRID = 1n;
const RECV_WRID = 2n;

export interface WarmUpResult {
  roundTrips: number;
  ms: number;
}

/** `roundTrips` SEND ping-pongs of `size` bytes (with AckReq, signalled, as rc_pingpong posts them). */
export function warmUpStack(size: number, roundTrips: number): WarmUpResult {
  const t0 = performance.now();
  const sim = createSimPair({ seed: 1, latencyNs: 1000, bandwidthBps: 0 });
  const acc = Access.LOCAL_WRITE;
  const ends = [sim.a, sim.b].map((dev) => {
    const pd = dev.allocPd();
    const buf = new Uint8Array(Math.max(1, size));
    const mr = dev.regMr(pd, buf, acc);
    const cq = dev.createCq(64);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: 4, maxRecvWr: 4 } });
    return { dev, mr, cq, qp };
  });
  const [a, b] = ends as [NonNullable<(typeof ends)[0]>, NonNullable<(typeof ends)[1]>];
  const ea = endpointOf(sim.a, a.qp, 1);
  const eb = endpointOf(sim.b, b.qp, 2);
  connectQp(a.qp, ea, eb, { pathMtu: Mtu.MTU_1024, timeout: 14 });
  connectQp(b.qp, eb, ea, { pathMtu: Mtu.MTU_1024, timeout: 14 });
  const post = (e: typeof a): void => e.qp.postSend({ wrId: SEND_WRID, opcode: WrOpcode.SEND, sgList: [e.mr.sge(0, size)], sendFlags: SendFlags.SIGNALED });
  const recv = (e: typeof a): void => e.qp.postRecv({ wrId: RECV_WRID, sgList: [e.mr.sge(0, Math.max(1, size))] });
  recv(a);
  recv(b);
  post(a);
  let done = 0;
  sim.clock.runWhile(() => {
    for (const e of ends) {
      for (const wc of e.cq.poll(4)) {
        if (wc.status !== WcStatus.SUCCESS) throw internalError(`JIT warm-up over the memory link: completion status ${wc.status}`);
        if (wc.wrId !== RECV_WRID) continue;
        // A message arrived: post the next receive and answer (b) or count a round trip (a).
        recv(e);
        if (e === a) done++;
        if (e === b || done < roundTrips) post(e);
      }
    }
    return done < roundTrips;
  });
  for (const e of ends) e.dev.destroyQp(e.qp);
  return { roundTrips: done, ms: performance.now() - t0 };
}
