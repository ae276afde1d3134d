/**
 * Keeping a responder replay in step with a capture that lost requests: where the capture lost
 * requests the real responder got (it did not NAK them with a PSN sequence error), the stack is
 * brought past the missing PSNs with zero-length RDMA WRITEs (IBTA §9.7.4.1.2: a zero-length
 * WRITE moves no data; it takes one PSN and counts as one message), starting again at a message
 * boundary. What the stack says about those PSNs is not compared, and its MSN count is set against
 * the real responder's at the first acknowledgement after each such point (the gap hid messages).
 */
import { buildRoceV2Frame } from '../../packets/build';
import { OpFlag, Opcode } from '../../packets/opcodes';
import { AethKind, NakCode, decodeSyndrome } from '../../packets/aeth';
import { packetAddresses } from '../../packets/decode';
import { psnAdd, psnDiff, psnMax } from '../../base/psn';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CapturedPacket } from './conversation';
import type { CapturedIndex } from './captured-index';
import { type Difference, DiffClass } from './differences';

/** Most PSNs bridged at once; a longer gap ends the replay of the conversation there. */
export const MAX_BRIDGE = 1 << 16;

/** A response as the comparison sees it: its kind, PSN and MSN (when it carries an AETH), and its frame. */
interface MsnCarrier {
  kind: string;
  psn: number;
  msn: number | null;
  /** A captured answer: its frame; one of the stack's: the frame of the captured request fed last before it. */
  frame: number;
}

/**
 * Through which PSN the real responder got the requests from `psn` on, which the capture does not
 * show after frame `after`: the highest PSN a response acknowledges (an ACK, READ response or
 * atomic ACK at it; a NAK or RNR NAK before it) before the capture shows `psn` sent again. Null
 * when none does.
 *
 * A PSN sequence error or RNR NAK says the responder waited at its PSN. When the capture shows the
 * requester sending that PSN again, the search ends there: what the responder acknowledges later
 * answers those resends, which replay feeds in their turn. When the capture lost the resend too,
 * later answers still tell how far the responder got.
 */
export function responderGotThrough(responses: CapturedIndex, requests: CapturedIndex, psn: number, after: number): number | null {
  const again = requests.next(psn, after)?.frame ?? Number.MAX_SAFE_INTEGER;
  let high: number | null = null;
  for (const r of responses.between(after, again)) {
    const b = r.p.bth;
    if (b === null) continue;
    const d = psnDiff(b.psn, psn);
    if (d < 0 || d > MAX_BRIDGE) continue;
    let through = b.psn;
    if (r.p.aeth !== null && ((r.p.info?.flags ?? 0) & (OpFlag.READ | OpFlag.ATOMIC)) === 0) {
      const s = decodeSyndrome(r.p.aeth.syndrome);
      const waits = s.kind === AethKind.RNR_NAK || (s.kind === AethKind.NAK && s.value === NakCode.PSN_SEQUENCE_ERROR);
      if (waits) {
        const before = psnAdd(b.psn, -1);
        if (requests.next(b.psn, r.frame) !== undefined) return d === 0 ? null : psnMax(high, before);
        if (d === 0) continue;
        through = before;
      }
    }
    if (high === null || psnDiff(through, high) > 0) high = through;
  }
  return high;
}

/** The message the stack is in the middle of (its FIRST fed, its LAST not yet). */
export interface OpenMessage {
  send: boolean;
  /** A WRITE: bytes still to come (RETH DMA length less what was fed). */
  resid: number;
}

/** The packets that bridge `n` PSNs (see CaptureGaps.bridge), or null. */
function planBridge(n: number, open: OpenMessage | null, continues: boolean, mtu: number): { opcode: number; payload: number }[] | null {
  const out: { opcode: number; payload: number }[] = [];
  const middle = open?.send === true ? Opcode.RC_SEND_MIDDLE : Opcode.RC_RDMA_WRITE_MIDDLE;
  if (open !== null && continues) {
    for (let i = 0; i < n; i++) out.push({ opcode: middle, payload: mtu });
    return out;
  }
  if (open !== null) {
    // End the open message: a SEND with one byte, a WRITE with exactly what it still owes.
    const k = open.send ? 1 : Math.max(1, Math.ceil(open.resid / mtu));
    if (k > n || (!open.send && open.resid <= 0)) return null;
    for (let i = 0; i < k - 1; i++) out.push({ opcode: middle, payload: mtu });
    out.push(open.send ? { opcode: Opcode.RC_SEND_LAST, payload: 1 } : { opcode: Opcode.RC_RDMA_WRITE_LAST, payload: open.resid - (k - 1) * mtu });
  } else if (continues) {
    return null;
  }
  while (out.length < n) out.push({ opcode: Opcode.RC_RDMA_WRITE_ONLY, payload: 0 });
  return out;
}

interface Gap {
  from: number;
  to: number;
  /** The captured requests not fed (inside a message whose start was lost) and the one after the gap. */
  frames: number[];
  /** The PSN the stack resumed at. */
  at: number;
}

export class CaptureGaps {
  private readonly list: Gap[] = [];

  /**
   * Brings the stack from its ePSN `ePsn` to `psn`, where the captured request `next` goes on,
   * through `send`, with frames addressed like `next`: the message the stack is inside (`open`) is
   * carried on with MIDDLE packets of `mtu` zero bytes, and ended with a LAST unless `next`
   * continues it; every other missing PSN gets a zero-length WRITE. False when that cannot be done
   * (too long a gap, too few PSNs to end a WRITE of known length, no Ethernet addresses).
   */
  bridge(
    ePsn: number,
    psn: number,
    open: OpenMessage | null,
    skipped: readonly CapturedPacket[],
    next: CapturedPacket,
    mr: MemoryRegion,
    destQp: number,
    mtu: number,
    send: (frame: Uint8Array) => void,
  ): boolean {
    const n = psnDiff(psn, ePsn);
    const p = next.p;
    if (n <= 0 || n > MAX_BRIDGE || p.eth === null) return false;
    const plan = planBridge(n, open, ((p.info?.flags ?? 0) & OpFlag.START) === 0, mtu);
    if (plan === null) return false;
    const { src, dst } = packetAddresses(p);
    const ip = p.ipv4 !== null ? { version: 4 as const, src, dst } : { version: 6 as const, src, dst };
    plan.forEach((x, i) => {
      send(
        buildRoceV2Frame({
          eth: { src: p.eth?.src ?? 0, dst: p.eth?.dst ?? 0 },
          ip,
          udp: { srcPort: p.udp?.srcPort ?? 0xc000 },
          bth: { opcode: x.opcode, destQp, psn: psnAdd(ePsn, i), ackReq: false },
          ...(x.opcode === Opcode.RC_RDMA_WRITE_ONLY ? { reth: { va: mr.addr(0), rkey: mr.rkey, dmaLength: 0 } } : {}),
          payload: new Uint8Array(x.payload),
        }),
      );
    });
    this.list.push({ from: ePsn, to: psnAdd(psn, -1), frames: [...skipped.map((c) => c.frame), next.frame], at: psn });
    return true;
  }

  /** Is `psn` one the capture lost (or the replay skipped to reach a message boundary)? */
  covers(psn: number): boolean {
    return this.list.some((g) => psnDiff(psn, g.from) >= 0 && psnDiff(psn, g.to) <= 0);
  }

  /** Where the stack resumed after each gap: its MSN count is set against the real one from there. */
  segments(): { psn: number; learn: boolean }[] {
    return this.list.map((g) => ({ psn: g.at, learn: true }));
  }

  differences(): Difference[] {
    return this.list.map((g) => ({
      class: DiffClass.UNVERIFIABLE,
      kind: 'captureGap',
      psn: g.from,
      lastPsn: g.to,
      count: psnDiff(g.to, g.from) + 1,
      frames: g.frames,
      expected: `requests PSN ${g.from}..${g.to}`,
      got: 'not in the capture, although the real responder got them (it did not NAK them): the stack was brought past them, and answers for those PSNs are not compared',
      rule: 'a capture gap is the capture tool’s, not the stack’s',
    }));
  }
}

/**
 * Whether the first MSN the real responder sent counts messages the capture does not show: more
 * than the messages whose last request (or READ / atomic request) the capture holds up to its PSN
 * before that answer. Where the request at that PSN was sent more than once before the answer, the
 * answer may be to a duplicate, which carries the MSN of every message completed by then (IBTA
 * §9.7.5.1.2, C9-105; rxe `rxe_resp.c` duplicate_request() answers with the current MSN): messages
 * at later PSNs captured before it count too.
 */
export function firstMsnCountsUnseen(expected: readonly MsnCarrier[], requests: readonly CapturedPacket[]): boolean {
  const e = expected.find((x) => x.msn !== null);
  if (e === undefined || e.msn === null) return false;
  let copies = 0;
  for (const c of requests) if (c.frame < e.frame && c.p.bth?.psn === e.psn) copies++;
  const ends = new Set<number>();
  for (const c of requests) {
    const b = c.p.bth;
    const f = c.p.info?.flags ?? 0;
    if (b !== null && (f & OpFlag.END) !== 0 && (psnDiff(b.psn, e.psn) <= 0 || (copies > 1 && c.frame < e.frame))) ends.add(b.psn);
  }
  return e.msn > ends.size;
}

/**
 * Sets the stack's MSNs (`got`) against the real responder's (`expected`) in each segment that
 * asks for it: the offset at the first acknowledgement both sent for the same PSN is applied to
 * every stack response of the segment (a segment runs from its PSN to the next one's).
 */
export function alignMsns(expected: readonly MsnCarrier[], got: MsnCarrier[], segments: readonly { psn: number; learn: boolean }[]): void {
  const segOf = (psn: number): number => {
    let k = -1;
    for (let i = 0; i < segments.length; i++) if (psnDiff(psn, (segments[i] as { psn: number }).psn) >= 0) k = i;
    return k;
  };
  segments.forEach((s, i) => {
    if (!s.learn) return;
    for (const e of expected) {
      if (e.msn === null || segOf(e.psn) !== i) continue;
      const g = got.find((x) => x.kind === e.kind && x.psn === e.psn && x.msn !== null);
      if (g === undefined || g.msn === null) continue;
      const off = (e.msn - g.msn) & 0xffffff;
      for (const x of got) if (x.msn !== null && segOf(x.psn) === i) x.msn = (x.msn + off) & 0xffffff;
      return;
    }
  });
}
