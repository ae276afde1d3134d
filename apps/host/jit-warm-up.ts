/**
 * Warming the stack's code before a measured run. V8 compiles hot functions with its optimising
 * compiler after they have run a while, and each compilation (and each deoptimisation that
 * follows a new shape) stalls the thread for up to milliseconds, or on a machine with as many
 * busy threads as cores takes a core from one of them. Measured on a busy-polling
 * `roce pingpong` over AF_XDP: the first half second of a run held most of its stalls over 1 ms
 * (88 in 0.8 s, against 13 in 1.4 s with the optimiser off), which set its p99 and p99.9.
 *
 * `warmUpPingpong` runs the operations of the measured run between two devices on an in-memory
 * link, on a virtual clock, in this process, before the real run opens its device: the requester,
 * responder, completer, decoder, ICRC and completion-queue code the run will use is optimised by
 * then. It touches no network and leaves nothing behind.
 */
import { createSimPair, type SimPair } from '../sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus } from '../../stack/work-completion';
import { Mtu } from '../../stack/mtu';
import type { Device } from '../../stack/device';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { QueuePair } from '../../stack/queue-pair';
import { internalError } from '../../base/programming-error';

const SEND_WRID = 1n;
const RECV_WRID = 2n;

export interface WarmUpResult {
  /** Round trips completed. */
  count: number;
  ms: number;
}

interface End {
  dev: Device;
  mr: MemoryRegion;
  cq: CompletionQueue;
  qp: QueuePair;
}

/** Two devices on a memory link with one connected RC QP each, a `bytes`-byte region on either side. */
function connectedPair(bytes: number, access: number, mtu: Mtu, depth: number): { sim: SimPair; a: End; b: End } {
  const sim = createSimPair({ seed: 1, latencyNs: 1000, bandwidthBps: 0 });
  const end = (dev: Device): End => {
    const pd = dev.allocPd();
    const mr = dev.regMr(pd, new Uint8Array(Math.max(1, bytes)), access);
    const cq = dev.createCq(2 * depth + 8);
    const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: depth + 1, maxRecvWr: 4 } });
    return { dev, mr, cq, qp };
  };
  const a = end(sim.a);
  const b = end(sim.b);
  const ea = endpointOf(sim.a, a.qp, 1);
  const eb = endpointOf(sim.b, b.qp, 2);
  connectQp(a.qp, ea, eb, { pathMtu: mtu, timeout: 14 });
  connectQp(b.qp, eb, ea, { pathMtu: mtu, timeout: 14 });
  return { sim, a, b };
}

function checked(e: End): ReturnType<CompletionQueue['poll']> {
  const wcs = e.cq.poll(16);
  for (const wc of wcs) if (wc.status !== WcStatus.SUCCESS) throw internalError(`JIT warm-up over the memory link: completion status ${wc.status}`);
  return wcs;
}

/** `roundTrips` SEND ping-pongs of `size` bytes (signalled, as rc_pingpong posts them). */
export function warmUpPingpong(size: number, roundTrips: number): WarmUpResult {
  const t0 = performance.now();
  const { sim, a, b } = connectedPair(size, Access.LOCAL_WRITE, Mtu.MTU_1024, 2);
  const post = (e: End): void => e.qp.postSend({ wrId: SEND_WRID, opcode: WrOpcode.SEND, sgList: [e.mr.sge(0, size)], sendFlags: SendFlags.SIGNALED });
  const recv = (e: End): void => e.qp.postRecv({ wrId: RECV_WRID, sgList: [e.mr.sge(0, Math.max(1, size))] });
  recv(a);
  recv(b);
  post(a);
  let done = 0;
  sim.clock.runWhile(() => {
    for (const e of [a, b]) {
      for (const wc of checked(e)) {
        if (wc.wrId !== RECV_WRID) continue;
        // A message arrived: post the next receive and answer (b) or count a round trip (a).
        recv(e);
        if (e === a) done++;
        if (e === b || done < roundTrips) post(e);
      }
    }
    return done < roundTrips;
  });
  for (const e of [a, b]) e.dev.destroyQp(e.qp);
  return { count: done, ms: performance.now() - t0 };
}
