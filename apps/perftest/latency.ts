/**
 * The measured loops of the latency tests (ib_write_lat, ib_read_lat,
 * ib_send_lat, ib_atomic_lat): one message at a time; a sample is the time
 * between two posts, halved for the ping-pong of WRITE and SEND (a round
 * trip), whole for READ and atomics.
 */
import { PerftestVerb as Verb } from '../oob/perftest-session';
import { pattern } from './verification';
import type { PerftestSide } from './perftest-side';

/** Runs this side's part of a latency test. */
export async function runLatency(side: PerftestSide): Promise<void> {
  const { verb } = side.rc;
  if (verb === Verb.WRITE) await runWriteLat(side);
  else if (verb === Verb.READ || verb === Verb.ATOMIC) await runReadLat(side);
  else await runSendLat(side);
}

/** Ends the run: latency figures from the times each message was posted. */
function finish(side: PerftestSide, posted: readonly number[]): void {
  const { verb } = side.rc;
  side.measured.takeLatency(posted, side.dev.clock.now(), verb === Verb.READ || verb === Verb.ATOMIC ? 1 : 2);
}

/** run_iter_lat_write: ping-pong by RDMA WRITE; each side watches the last byte of its buffer. The server writes first. */
async function runWriteLat(side: PerftestSide): Promise<void> {
  const { rc, waits, buf } = side;
  const { qp, sendCq: cq, layout, verifier } = side.resources();
  const pollAt = layout.targetBase(0) + rc.size - 1;
  const postAt = rc.size - 1;
  const expected = rc.verify ? pattern(0, rc.size - 1) : null;
  const clock = side.dev.clock;
  const posted: number[] = [];
  let scnt = 0;
  let ccnt = 0;
  let rcnt = 0;
  while (scnt < rc.iters || ccnt < rc.iters || rcnt < rc.iters) {
    if (rcnt < rc.iters && !(scnt < 1 && rc.role === 'server')) {
      rcnt++;
      const want = rcnt & 0xff;
      await waits.waitFor(() => buf[pollAt] === want, `the peer's WRITE #${rcnt}`);
      if (expected !== null) verifier.check(layout.targetBase(0), expected, rc.size - 1, `WRITE #${rcnt}`);
    }
    if (scnt < rc.iters) {
      posted.push(clock.now());
      buf[postAt] = ++scnt & 0xff;
      qp.postSend(side.sendWr(0, true));
    }
    if (ccnt < rc.iters) {
      for (const wc of await waits.pollSome(cq, `the completion of WRITE #${ccnt + 1}`, 1)) {
        waits.check(wc, 'RDMA WRITE');
        ccnt++;
      }
    }
  }
  finish(side, posted);
}

/**
 * run_iter_lat: the client READs (ib_read_lat) or posts atomics on the peer's first slot
 * (ib_atomic_lat), one at a time. With --verify each READ brings back the pattern, and each
 * fetch-and-add returns how many came before it (compare-and-swap of 0 with 0 returns 0).
 */
async function runReadLat(side: PerftestSide): Promise<void> {
  const { rc, waits, buf } = side;
  if (rc.role === 'server') return;
  const { qp, sendCq: cq, verifier } = side.resources();
  const atomic = rc.verb === Verb.ATOMIC;
  const name = atomic ? (rc.atomicType === 'FETCH_AND_ADD' ? 'FETCH_AND_ADD' : 'CMP_AND_SWAP') : 'READ';
  const expected = rc.verify && !atomic ? pattern(0, rc.size) : null;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.length);
  const posted: number[] = [];
  for (let k = 0; k < rc.iters; k++) {
    if (rc.verify) buf.fill(atomic ? 0xee : 0, 0, rc.size);
    posted.push(side.dev.clock.now());
    qp.postSend(side.sendWr(0, true));
    for (const wc of await waits.pollSome(cq, `the completion of ${name} #${k}`, 1)) waits.check(wc, atomic ? name : 'RDMA READ');
    if (expected !== null) verifier.check(0, expected, rc.size, `READ #${k}`);
    else if (rc.verify) verifier.checkValue(view.getBigUint64(0, true), BigInt(rc.atomicType === 'FETCH_AND_ADD' ? k : 0), `${name} #${k} returned`);
  }
  finish(side, posted);
}

/** run_iter_lat_send: SEND ping-pong, the client first; receives re-posted while more are due. */
async function runSendLat(side: PerftestSide): Promise<void> {
  const { rc, waits } = side;
  const { qp, mr, sendCq: scq, recvCq: rcq, layout, verifier } = side.resources();
  const expected = rc.verify ? pattern(0, rc.size) : null;
  const posted: number[] = [];
  let scnt = 0;
  let rcnt = 0;
  while (scnt < rc.iters || rcnt < rc.iters) {
    if (rcnt < rc.iters && !(scnt < 1 && rc.role === 'client')) {
      const [wc] = await waits.pollSome(rcq, `the peer's SEND #${rcnt + 1}`, 1);
      if (wc !== undefined) {
        waits.check(wc, 'receive');
        if (expected !== null) verifier.check(layout.recvPayload(Number(wc.wrId)), expected, wc.byteLen - layout.grh, `SEND #${rcnt + 1}`);
        rcnt++;
        if (rcnt + rc.rxDepth <= rc.iters) qp.postRecv({ wrId: wc.wrId, sgList: [mr.sge(layout.recvOffset(Number(wc.wrId)), layout.recvLength)] });
      }
    }
    if (scnt < rc.iters) {
      posted.push(side.dev.clock.now());
      scnt++;
      qp.postSend(side.sendWr(0, true));
      for (const wc of await waits.pollSome(scq, `the completion of SEND #${scnt}`, 1)) waits.check(wc, 'SEND');
    }
  }
  finish(side, posted);
}
