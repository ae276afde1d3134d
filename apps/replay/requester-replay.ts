/**
 * `roce replay --role requester`: rebuilds the work requests behind a
 * captured requester's messages (SEND data, WRITE and READ RETHs, atomic
 * operands), posts them to a stack QP configured like the captured one, feeds
 * it the real responder's answers, and compares the requests the stack sends
 * with the captured ones: segmentation, PSNs, headers, data and the AckReq
 * policy. (Where go-back-N restarts is checked by the engine's own dialogue
 * tests; in a replay it depends on timers the capture does not show.)
 */
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import type { SendWr } from '../../stack/work-request';
import { decodeFrame, type RocePacket } from '../../packets/decode';
import { OpFlag, Opcode } from '../../packets/opcodes';
import { psnAdd, psnDiff, psnMax } from '../../base/psn';
import type { CapturedPacket, RcConversation } from './conversation';
import { type Difference, DiffClass, type ReplaySummary, malformedOutput, replaySummary } from './differences';
import { type ReplayOptions, replayStack } from './replay-stack';
import { creditOf } from './credits';
import { DEFAULT_MAX_REPLAY_BYTES, replayCostProblem } from './replay-budget';
import { AethKind, CREDITS_INVALID, NakCode, decodeSyndrome } from '../../packets/aeth';
import { MAX_BRIDGE } from './resync';
import { requestSpan } from './request-span';
import { QpErrorWatch } from './qp-error';

interface Msg {
  wr: Omit<SendWr, 'sgList'>;
  data: Uint8Array;
  frames: number[];
}

/**
 * The messages of the first transmission of every request PSN, in PSN order, from the first
 * message that starts in the capture (`startPsn`). PSNs the capture lost are filled so the stack's
 * PSNs stay those of the capture: inside a message with packets of `mtu` zero bytes, between
 * messages with zero-length RDMA WRITEs (one PSN each; a message whose start was lost is replaced
 * by as many). What the stack sends at those PSNs is not compared (they are not in `first`).
 */
function messagesOf(
  reqs: readonly CapturedPacket[],
  mtu: number,
  /** Where the connection's PSNs start when the capture shows it (CM), else null. */
  connectionStart: number | null,
): { msgs: Msg[]; first: Map<number, CapturedPacket>; startPsn: number | null; filled: number; fillers: Set<number> } {
  const first = new Map<number, CapturedPacket>();
  // A READ owns the PSNs of its responses; a READ request at one of those PSNs is a retry of it, not a new message.
  const readRanges: [number, number][] = [];
  for (const c of reqs) {
    const b = c.p.bth;
    if (b === null || first.has(b.psn)) continue;
    if (readRanges.some(([lo, n]) => psnDiff(b.psn, lo) > 0 && psnDiff(b.psn, lo) < n)) continue;
    first.set(b.psn, c);
    if (c.p.reth !== null && (c.p.info?.flags ?? 0) & OpFlag.READ) readRanges.push([b.psn, requestSpan(c.p, mtu)]);
  }
  const msgs: Msg[] = [];
  let cur: {
    parts: Uint8Array[];
    wr: Omit<SendWr, 'sgList'>;
    frames: number[];
    lastPsn: number;
    psns: number[];
    firstPsn: number;
    dmaLength: number | null;
  } | null = null;
  /**
   * Ends `m`, a WRITE whose end the capture lost, at the length its RETH gives (IBTA §9.7.2: the
   * packets of a message carry exactly its DMA length): full-MTU packets of zeros and a last one
   * with the rest, `total` packets in all. Not compared. Returns the PSN after it.
   */
  const endWriteAtItsLength = (m: NonNullable<typeof cur>, dmaLength: number, total: number): number => {
    for (let i = m.parts.length; i < total; i++) {
      m.parts.push(new Uint8Array(i === total - 1 ? dmaLength - (total - 1) * mtu : mtu));
      filled++;
    }
    msgs.push({ wr: m.wr, data: concat(m.parts), frames: [] });
    return psnAdd(m.firstPsn, total);
  };
  /** PSNs of the captured packets of the messages rebuilt whole: what the stack sends there is compared. */
  const taken = new Set<number>();
  /** PSNs given to zero-length WRITEs in place of lost messages. */
  const fillers = new Set<number>();
  // First transmissions in PSN order (a resend of a PSN whose first transmission the capture lost comes later in the capture).
  const ordered = [...first.values()];
  const base = ordered.find((c) => ((c.p.info?.flags ?? 0) & OpFlag.START) !== 0)?.p.bth?.psn ?? null;
  if (base !== null) ordered.sort((x, y) => psnDiff(x.p.bth?.psn ?? 0, base) - psnDiff(y.p.bth?.psn ?? 0, base));
  /** The PSN after the last message (or packet) taken: where the next message should start. */
  let nextPsn: number | null = connectionStart;
  let filled = 0;
  for (const c of ordered) {
    const p = c.p;
    const info = p.info;
    if (info === undefined || p.bth === null) continue;
    if (base !== null && psnDiff(p.bth.psn, base) < 0) continue; // before the first message the capture shows whole
    const f = info.flags;
    const payload = c.bytes.subarray(p.payloadOff, p.payloadOff + p.payloadLength);
    // A packet past the end a WRITE's RETH gives belongs to a later message: this one's end was lost.
    if (cur !== null && cur.dmaLength !== null) {
      const total = Math.max(1, Math.ceil(cur.dmaLength / mtu));
      if (cur.parts.length <= total && psnDiff(p.bth.psn, cur.firstPsn) >= total) {
        nextPsn = endWriteAtItsLength(cur, cur.dmaLength, total);
        cur = null;
      }
    }
    if ((f & OpFlag.START) !== 0) {
      if (cur !== null) {
        // Its end was lost with the PSNs before this message: it is sent whole-MTU up to there, not compared.
        for (let i = psnDiff(p.bth.psn, cur.lastPsn) - 1; i > 0; i--) {
          cur.parts.push(new Uint8Array(mtu));
          filled++;
        }
        msgs.push({ wr: cur.wr, data: concat(cur.parts), frames: [] });
        nextPsn = p.bth.psn;
        cur = null;
      }
      if (nextPsn !== null && psnDiff(p.bth.psn, nextPsn) > 0) {
        for (let i = psnDiff(p.bth.psn, nextPsn); i > 0; i--) {
          msgs.push({ wr: { opcode: WrOpcode.RDMA_WRITE, rdma: { remoteAddr: 0n, rkey: 0 } }, data: new Uint8Array(0), frames: [] });
          fillers.add(psnAdd(p.bth.psn, -i));
          filled++;
        }
      }
      nextPsn = psnAdd(p.bth.psn, requestSpan(p, mtu));
      // FLUSH (FETH + RETH) and ATOMIC WRITE (RETH + its 8 bytes, as they lie in memory: little-endian
      // here) are work requests of their own (IBTA vol. 1 annex A19).
      if ((f & OpFlag.FLUSH) !== 0 && p.reth !== null && p.feth !== null) {
        const flush = {
          remoteAddr: p.reth.va,
          rkey: p.reth.rkey,
          length: p.reth.dmaLength,
          placementType: p.feth.placementType,
          selectivity: p.feth.selectivity,
        };
        msgs.push({ wr: { opcode: WrOpcode.FLUSH, flush }, data: new Uint8Array(0), frames: [c.frame] });
        taken.add(p.bth.psn);
        continue;
      }
      if ((f & OpFlag.ATOMIC_WRITE) !== 0 && p.reth !== null) {
        // A truncated frame's 8 bytes are not known: zeros go in their place, and that packet is not compared.
        const whole = p.payloadLength === 8 && p.payloadCaptured === 8;
        const value = whole ? new DataView(c.bytes.buffer, c.bytes.byteOffset + p.payloadOff, 8).getBigUint64(0, true) : 0n;
        msgs.push({
          wr: { opcode: WrOpcode.ATOMIC_WRITE, atomicWrite: { remoteAddr: p.reth.va, rkey: p.reth.rkey, value } },
          data: new Uint8Array(0),
          frames: [c.frame],
        });
        if (whole) taken.add(p.bth.psn);
        continue;
      }
      if ((f & OpFlag.READ) !== 0 && p.reth) {
        msgs.push({
          wr: { opcode: WrOpcode.RDMA_READ, rdma: { remoteAddr: p.reth.va, rkey: p.reth.rkey } },
          data: new Uint8Array(p.reth.dmaLength),
          frames: [c.frame],
        });
        taken.add(p.bth.psn);
        continue;
      }
      if ((f & OpFlag.ATOMIC) !== 0 && p.atomicEth) {
        const cmp = p.bth.opcode === Opcode.RC_COMPARE_SWAP; // conversations are RC (conversation.ts)
        const a = p.atomicEth;
        msgs.push({
          wr: {
            opcode: cmp ? WrOpcode.ATOMIC_CMP_AND_SWP : WrOpcode.ATOMIC_FETCH_AND_ADD,
            atomic: { remoteAddr: a.va, rkey: a.rkey, compareAdd: cmp ? a.compare : a.swapAdd, swap: a.swapAdd },
          },
          data: new Uint8Array(8),
          frames: [c.frame],
        });
        taken.add(p.bth.psn);
        continue;
      }
      const write = (f & OpFlag.WRITE) !== 0;
      cur = {
        parts: [],
        frames: [],
        wr: write && p.reth ? { opcode: WrOpcode.RDMA_WRITE, rdma: { remoteAddr: p.reth.va, rkey: p.reth.rkey } } : { opcode: WrOpcode.SEND },
        lastPsn: psnAdd(p.bth.psn, -1),
        psns: [],
        firstPsn: p.bth.psn,
        dmaLength: write && p.reth ? p.reth.dmaLength : null,
      };
    }
    if (cur === null) continue; // inside a message whose start the capture lost
    // Packets of this message the capture lost: full path-MTU packets of zeros keep its segmentation.
    for (let i = psnDiff(p.bth.psn, cur.lastPsn) - 1; i > 0; i--) {
      cur.parts.push(new Uint8Array(mtu));
      filled++;
    }
    cur.lastPsn = p.bth.psn;
    nextPsn = psnAdd(p.bth.psn, 1);
    cur.parts.push(payload);
    cur.frames.push(c.frame);
    cur.psns.push(p.bth.psn);
    if ((f & OpFlag.END) !== 0) {
      if (p.immDt !== null) {
        cur.wr.opcode = cur.wr.opcode === WrOpcode.RDMA_WRITE ? WrOpcode.RDMA_WRITE_WITH_IMM : WrOpcode.SEND_WITH_IMM;
        cur.wr.immData = p.immDt.value;
      }
      if (p.ieth !== null) {
        cur.wr.opcode = WrOpcode.SEND_WITH_INV;
        cur.wr.invalidateRkey = p.ieth.rkey;
      }
      if (p.bth.se) cur.wr.sendFlags = (cur.wr.sendFlags ?? 0) | SendFlags.SOLICITED;
      msgs.push({ wr: cur.wr, data: concat(cur.parts), frames: cur.frames });
      for (const q of cur.psns) taken.add(q);
      cur = null;
    }
  }
  for (const q of [...first.keys()]) if (!taken.has(q)) first.delete(q);
  return { msgs, first, startPsn: base, filled, fillers };
}

/**
 * Whether the capture lacks the answer a requester waiting at `psn` needs: the READ responses from
 * `psn` to the end of the READ it falls in (a READ retried from the middle asks for the rest), the
 * atomic ACK of an atomic there, or for anything else an acknowledgement at or past it and before
 * `sentEnd`, the PSN after the last the stack sent (an ACK; or a READ response or atomic ACK, its own
 * for a FLUSH or ATOMIC WRITE, which are answered by a READ response (IBTA annex A19), or a later
 * request's, which acknowledges it too). Replay hands the stack an answer only once it has sent
 * what the answer is for, so one past `sentEnd` never reaches a stack blocked at its window.
 */
function answerLost(conv: RcConversation, psn: number, sentEnd: number, mtu: number): boolean {
  const req = conv.requests.find((c) => c.p.bth !== null && psnDiff(psn, c.p.bth.psn) >= 0 && psnDiff(psn, c.p.bth.psn) < requestSpan(c.p, mtu));
  // A request the capture lost is taken as what replay sent in its place: a WRITE, answered by an ACK.
  const f = req?.p.info?.flags ?? 0;
  const answered = (ok: (r: CapturedPacket, d: number) => boolean): boolean =>
    conv.responses.some((r) => {
      const b = r.p.bth;
      if (b === null) return false;
      const d = psnDiff(b.psn, psn);
      return d >= 0 && d <= MAX_BRIDGE && ok(r, d);
    });
  const kind = (r: CapturedPacket): number => (r.p.info?.flags ?? 0) & (OpFlag.READ | OpFlag.ATOMIC);
  if (req?.p.bth != null && (f & OpFlag.READ) !== 0) {
    const rest = requestSpan(req.p, mtu) - psnDiff(psn, req.p.bth.psn);
    for (let i = 0; i < rest; i++) if (!answered((r, d) => d === i && kind(r) === OpFlag.READ)) return true;
    return false;
  }
  if ((f & OpFlag.ATOMIC) !== 0) return !answered((r, d) => d === 0 && kind(r) === OpFlag.ATOMIC);
  const reach = psnDiff(sentEnd, psn);
  return !answered((r, d) => d < reach && ((r.p.aeth !== null && kind(r) === 0 && decodeSyndrome(r.p.aeth.syndrome).kind === AethKind.ACK) || kind(r) !== 0));
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const data = new Uint8Array(parts.reduce((s, x) => s + x.length, 0));
  let o = 0;
  for (const x of parts) {
    data.set(x, o);
    o += x.length;
  }
  return data;
}

const headerText = (p: RocePacket): string =>
  [
    p.info?.name ?? '?',
    p.feth ? `FETH sel=${p.feth.selectivity} plt=${p.feth.placementType}` : '',
    p.reth ? `RETH va=0x${p.reth.va.toString(16)} rkey=0x${p.reth.rkey.toString(16)} len=${p.reth.dmaLength}` : '',
    p.atomicEth ? `AtomicETH va=0x${p.atomicEth.va.toString(16)} swapAdd=0x${p.atomicEth.swapAdd.toString(16)} cmp=0x${p.atomicEth.compare.toString(16)}` : '',
    p.immDt ? `imm=0x${p.immDt.value.toString(16)}` : '',
    p.ieth ? `inv=0x${p.ieth.rkey.toString(16)}` : '',
    `payload ${p.payloadLength}`,
  ]
    .filter((x) => x !== '')
    .join(' ');

export function replayRequester(conv: RcConversation, o: ReplayOptions = {}): ReplaySummary {
  const diffs: Difference[] = [];
  // Nothing is built for a conversation whose replay would cost too much (replay-budget.ts).
  const tooCostly = replayCostProblem(conv, o.maxRegionBytes ?? DEFAULT_MAX_REPLAY_BYTES);
  if (tooCostly !== null) {
    diffs.push({
      class: DiffClass.UNVERIFIABLE,
      kind: 'replayTooCostly',
      psn: null,
      frames: [],
      expected: 'a conversation replay can rebuild',
      got: tooCostly,
      rule: 'replay builds the messages in RAM',
    });
    return replaySummary('requester', conv, { pathMtu: conv.pathMtuBytes, framesIn: 0, framesOut: 0, matched: 0, expected: 0 }, diffs);
  }
  const { clock, driver, dev, mtuBytes, pathMtu, peer } = replayStack(conv, 'requester', o);
  const pd = dev.allocPd();
  const cq = dev.createCq(1 << 16);
  const { msgs, first, startPsn, filled, fillers } = messagesOf(conv.requests, mtuBytes, conv.cm?.startPsn ?? null);
  const sqPsn = conv.cm?.startPsn ?? startPsn ?? conv.firstRequestPsn;
  const total = msgs.reduce((s, m) => s + m.data.length + 8, 0);
  const buf = new Uint8Array(Math.max(8, total));
  const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE);
  const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq, cap: { maxSendWr: msgs.length + 16, maxSendSge: 1 } }, conv.requesterQpn || 0x11);
  qp.modify({
    qpState: QpState.INIT,
    pkeyIndex: 0,
    portNum: 1,
    qpAccessFlags: Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC,
  });
  qp.modify({
    qpState: QpState.RTR,
    ahAttr: peer,
    pathMtu,
    destQpNum: conv.responderQpn,
    rqPsn: 0,
    maxDestRdAtomic: 16,
    minRnrTimer: 12,
  });
  qp.modify({ qpState: QpState.RTS, sqPsn, timeout: 14, retryCnt: 7, rnrRetry: 7, maxRdAtomic: 16 });
  // End-to-end credits (IBTA vol. 1 §9.7.7.2): the stack's requester starts where the captured one
  // stood. A responder whose first count is code 31 (or that sends none) sets no limit; otherwise the
  // messages the capture shows before the first count went on credits the capture does not show (an
  // earlier ACK, or the one message a requester may send without credits): the limit lets them go.
  const firstCredited = conv.responses.find((r) => creditOf(r.p) !== null);
  const firstCode = firstCredited === undefined ? null : creditOf(firstCredited.p);
  if (firstCredited === undefined || firstCode === CREDITS_INVALID) qp.req.unlimitedCredit = true;
  else {
    const startsBefore = (c: CapturedPacket): boolean =>
      c.frame < firstCredited.frame && first.get(c.p.bth?.psn ?? -1) === c && ((c.p.info?.flags ?? 0) & OpFlag.START) !== 0;
    const before = conv.requests.filter(startsBefore).length;
    if (before > 1) qp.req.lsn = psnAdd(qp.req.lsn, before - 1);
  }
  /** Messages the stack was let past its credit limit to stay in step with the capture, and where. */
  const overrun: { psn: number; frame: number }[] = [];
  let off = 0;
  const wrs: SendWr[] = msgs.map((m, i) => {
    buf.set(m.data, off);
    // FLUSH and ATOMIC WRITE take no SGE (their data is in the work request, or there is none).
    const local = m.wr.opcode === WrOpcode.FLUSH || m.wr.opcode === WrOpcode.ATOMIC_WRITE ? [] : [mr.sge(off, m.data.length)];
    const wr: SendWr = { ...m.wr, wrId: i, sendFlags: (m.wr.sendFlags ?? 0) | SendFlags.SIGNALED, sgList: local };
    off += m.data.length + 8;
    return wr;
  });
  // With the captured timing each work request is posted when the captured requester first sent
  // it (posting them all at once would leave later messages waiting for responses that come at
  // their captured times, and the stack's retransmission timer would fire: a replay artifact).
  const t0 = conv.requests[0]?.timeNs ?? 0;
  const frameTime = new Map(conv.requests.map((c) => [c.frame, c.timeNs - t0]));
  const dueNs = msgs.map((m) => (o.timing === 'fast' ? 0 : (frameTime.get(m.frames[0] ?? -1) ?? 0)));
  let nextWr = 0;
  const postDue = (): void => {
    const batch: SendWr[] = [];
    while (nextWr < wrs.length && (dueNs[nextWr] ?? 0) <= clock.now()) batch.push(wrs[nextWr++] as SendWr);
    if (batch.length > 0) qp.postSend(batch);
  };
  /** Runs the clock to `tNs`, posting each work request at its time. */
  const advanceTo = (tNs: number): void => {
    while (nextWr < wrs.length && (dueNs[nextWr] ?? 0) <= tNs) {
      clock.runUntil(Math.max(clock.now(), dueNs[nextWr] ?? 0));
      postDue();
      clock.runUntil(clock.now());
      collect();
    }
    clock.runUntil(Math.max(clock.now(), tNs));
  };

  // Run: send what the stack sends, then hand it each captured response once it has sent what that response answers.
  /** The stack's first transmission of each PSN (a resend of it is not compared). */
  const stackFirst = new Map<number, { p: RocePacket; bytes: Uint8Array }>();
  let framesOut = 0;
  /** Requests the stack sent, resends included. */
  let sentCount = 0;
  /** The highest PSN the stack has sent (a READ request's last response PSN), kept as frames go out: a scan of all sent made replay quadratic. */
  let highestSent: number | null = null;
  /** The captured answer last handed to the stack: where an error of its QP is reported. */
  let handed: CapturedPacket | null = null;
  const watch = new QpErrorWatch(dev, qp, cq, () => ({ frame: handed?.frame ?? null, psn: handed?.p.bth?.psn ?? null }));
  const collect = (): void => {
    watch.drain();
    for (const f of driver.takeSent()) {
      framesOut++;
      const d = decodeFrame(f);
      if (!d.roce || d.error !== null || d.bth === null) {
        diffs.push(malformedOutput(d));
        continue;
      }
      sentCount++;
      const b = d.bth;
      if (!stackFirst.has(b.psn)) stackFirst.set(b.psn, { p: d, bytes: f });
      highestSent = psnMax(highestSent, psnAdd(b.psn, requestSpan(d, mtuBytes) - 1));
    }
  };
  advanceTo(0);
  collect();
  for (const r of conv.responses) {
    const psn = r.p.bth?.psn ?? 0;
    if (psnDiff(psn, sqPsn) < 0) continue; // answers a request from before the capture's first message
    // A READ response or atomic ACK for a lost READ or atomic, whose PSN the stack sent a WRITE at.
    if (fillers.has(psn) && ((r.p.info?.flags ?? 0) & (OpFlag.READ | OpFlag.ATOMIC)) !== 0) continue;
    for (let guard = 0; guard < 10_000; guard++) {
      if (highestSent !== null && psnDiff(highestSent, psn) >= 0) break;
      if (qp.req.creditWait) {
        // The stack waits for credits, but the capture's next answer is for a request it has not sent:
        // the captured requester went past the limit the captured counts set. Let the stack go on.
        overrun.push({ psn, frame: r.frame });
        qp.req.lsn = qp.req.ssn;
        qp.req.creditWait = false;
        qp.runRequester();
        clock.runUntil(clock.now());
        collect();
        continue;
      }
      const next = clock.nextAt();
      const due = nextWr < wrs.length ? (dueNs[nextWr] ?? 0) : null;
      if (next === null && due === null) break;
      if (due !== null && (next === null || due <= next)) advanceTo(due);
      else clock.step();
      collect();
    }
    if (o.timing !== 'fast') advanceTo(r.timeNs - t0);
    collect();
    handed = r;
    driver.inject([r.bytes]);
    clock.runUntil(clock.now());
    collect();
  }
  advanceTo(dueNs[dueNs.length - 1] ?? 0);
  clock.runUntilIdle(200_000);
  collect();

  // Compare first transmissions PSN by PSN.
  let matched = 0;
  // Where the stack stopped short of the captured requests, waiting at its oldest unacknowledged PSN
  // for an answer the capture does not hold, the capture lost that answer: the requests after it are
  // not the stack's to answer for.
  const unsent = [...first.keys()].some((psn) => !stackFirst.has(psn));
  const stalledAt = unsent && answerLost(conv, qp.comp.psn, qp.req.psn, mtuBytes) ? qp.comp.psn : null;
  let stalled: Difference | null = null;
  for (const [psn, c] of first) {
    const s = stackFirst.get(psn);
    const e = c.p;
    if (s === undefined && stalledAt !== null && psnDiff(psn, stalledAt) >= 0) {
      if (stalled === null) {
        stalled = {
          class: DiffClass.UNVERIFIABLE,
          kind: 'answerLost',
          psn,
          lastPsn: psn,
          count: 0,
          frames: [],
          expected: headerText(e),
          got: 'nothing',
          rule: `the stack waited at PSN ${stalledAt} for an answer the capture lost (a READ response or atomic ACK is answered by nothing else, IBTA §9.7.5.1), so it never sent the requests after it`,
        };
        diffs.push(stalled);
      }
      stalled.count = (stalled.count ?? 0) + 1;
      stalled.lastPsn = psn;
      stalled.got = `nothing for ${stalled.count} captured request PSN(s) up to ${psn}`;
      if (stalled.frames.length < 16) stalled.frames.push(c.frame);
      continue;
    }
    if (s === undefined) {
      diffs.push({
        class: DiffClass.VIOLATION,
        kind: 'missingRequest',
        psn,
        frames: [c.frame],
        expected: headerText(e),
        got: 'nothing',
        rule: 'the same work requests produce the same request PSNs',
      });
      continue;
    }
    // Only the payload the capture holds is compared (a truncated frame's rest is not known).
    const ep = c.bytes.subarray(e.payloadOff, e.payloadOff + e.payloadCaptured);
    const g = s.p;
    const gp = s.bytes.subarray(g.payloadOff, g.payloadOff + Math.min(g.payloadLength, e.payloadCaptured));
    if (headerText(e) !== headerText(g)) {
      diffs.push({
        class: DiffClass.VIOLATION,
        kind: 'segmentation',
        psn,
        frames: [c.frame],
        expected: headerText(e),
        got: headerText(g),
        rule: `IBTA §9.7.2: messages are segmented by the path MTU (${mtuBytes}) with FIRST/MIDDLE/LAST/ONLY opcodes and their headers`,
      });
    } else if (Buffer.compare(ep, gp) !== 0) {
      diffs.push({
        class: DiffClass.VIOLATION,
        kind: 'payload',
        psn,
        frames: [c.frame],
        expected: `${ep.length} bytes`,
        got: 'different bytes',
        rule: 'the payload is the message data at its offset',
      });
    } else {
      matched++;
      if (e.bth?.ackReq !== g.bth?.ackReq) {
        diffs.push({
          class: DiffClass.POLICY,
          kind: 'ackReq',
          psn,
          frames: [c.frame],
          expected: `AckReq ${e.bth?.ackReq ? 1 : 0}`,
          got: `AckReq ${g.bth?.ackReq ? 1 : 0}`,
          rule: "IBTA §9.7.3.1: when to ask for an ACK inside a message is the requester's choice",
        });
      }
    }
  }
  if (filled > 0 || (startPsn !== null && startPsn !== sqPsn)) {
    diffs.push({
      class: DiffClass.UNVERIFIABLE,
      kind: 'captureGap',
      psn: startPsn,
      count: filled,
      frames: [],
      expected: 'every request of the conversation',
      got: `${filled} request PSN(s) the capture lost were filled (zero-length WRITEs, or zero bytes inside a message)${startPsn !== sqPsn ? `, and the replay starts at the first whole message (PSN ${startPsn})` : ''}: what the stack sent there is not compared`,
      rule: 'only what the capture shows can be checked',
    });
  }
  if (overrun.length > 0) {
    diffs.push({
      class: DiffClass.UNVERIFIABLE,
      kind: 'creditLimit',
      psn: overrun[0]?.psn ?? null,
      count: overrun.length,
      frames: overrun.slice(0, 16).map((x) => x.frame),
      expected: 'requests within the limit the captured credit counts set (MSN + credits, and one message more)',
      got: `${overrun.length} time(s) the captured requester sent past it; replay let the stack go on`,
      rule: "IBTA §9.7.7.2: a requester honours end-to-end credits; the capture may have lost the ACK that raised the limit, or its requester ignores credits (rxe's does)",
    });
  }
  // Retransmissions: the captured packets beyond the first transmission of each PSN.
  const eRetx = conv.requests.length - first.size;
  const gRetx = sentCount - stackFirst.size;
  if (eRetx !== gRetx) {
    diffs.push({
      class: DiffClass.POLICY,
      kind: 'retransmissions',
      psn: null,
      frames: [],
      expected: `${eRetx} retransmitted packets`,
      got: `${gRetx}`,
      rule: 'timeouts and how far each go-back-N resends depend on timers and windows',
    });
  }
  // The captured requester ended the same way when the answer that put the stack's QP in error is a NAK that ends a QP (not a PSN sequence error).
  const errFrame = watch.position?.frame ?? null;
  const errAnswer = errFrame === null ? undefined : conv.responses.find((r) => r.frame === errFrame);
  const errSyndrome =
    errAnswer?.p.aeth != null && ((errAnswer.p.info?.flags ?? 0) & (OpFlag.READ | OpFlag.ATOMIC)) === 0 ? decodeSyndrome(errAnswer.p.aeth.syndrome) : null;
  const qpError = watch.report(errSyndrome !== null && errSyndrome.kind === AethKind.NAK && errSyndrome.value !== NakCode.PSN_SEQUENCE_ERROR);
  return replaySummary('requester', conv, { pathMtu: mtuBytes, framesIn: conv.responses.length, framesOut, matched, expected: first.size }, diffs, qpError);
}
