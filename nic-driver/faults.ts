/**
 * The fault model of the in-memory link: what a lossy, reordering, marking
 * network does to one direction of traffic, as plain data (`FaultConfig`) plus
 * a seeded `FaultInjector` that applies it frame by frame.
 *
 * Two kinds of fault:
 *  - random faults at configured rates (netem-like: loss, Gilbert-Elliott loss
 *    bursts, duplication, reordering, delay and jitter, corruption, ECN CE);
 *  - targeted rules in the style of Lumina's event injector, which keys each
 *    event by QP, PSN and iteration (retransmission round): "drop the second
 *    retransmission of PSN X" is `{ action: 'drop', match: { psn: X, round: 2 } }`.
 *
 * Determinism: every input frame consumes exactly `DRAWS_PER_FRAME` numbers
 * from the injector's `Rng`, whatever happens to it. So the schedule of one
 * fault kind does not move when another kind is switched on or a targeted
 * rule fires, and the same seed and the same frames always give the same
 * result. The link gives each direction its own fork of the seed.
 *
 * The injector knows nothing of time except for the reorder hold timeout; the
 * link turns `Emission.extraNs` into arrival times (see memory-link.ts).
 */
import type { Rng } from '../base/rng';
import { decodeFrame, type RocePacket } from '../packets/decode';
import { EtherType, ethernetHeaderLen, parseEthernet } from '../packets/ethernet';
import { ipv4Checksum } from '../packets/ipv4';
import { OPCODES, OpFlag } from '../packets/opcodes';
import { CmAttr } from '../packets/mad';
import { LinkConfigError } from './link-config-error';

/** A direction of the link: from end a to end b, or back. */
export type Direction = 'a->b' | 'b->a';

/**
 * What a rule does to the frames it matches. `pass` exempts them from the random faults (loss,
 * bursts, duplication, reordering, corruption, ECN): a frame no protocol would resend, such as
 * the DREQ librdmacm sends once before it destroys its ID, can stay out of a random loss.
 */
export type FaultAction = 'drop' | 'duplicate' | 'corrupt' | 'ecnCe' | 'delay' | 'pass';
const FAULT_ACTIONS: readonly FaultAction[] = ['drop', 'duplicate', 'corrupt', 'ecnCe', 'delay', 'pass'];

/** Which frames a rule hits: every field given must match. */
export interface FaultMatch {
  /** BTH destination QP. */
  qpn?: number;
  /** Opcode number, full name (`RC_SEND_FIRST`) or name without the transport prefix (`ACKNOWLEDGE`). */
  opcode?: number | string;
  psn?: number;
  /** 0 = first transmission of the PSN, 1 = first retransmission, ... */
  round?: number;
  /** Only in this direction (useful when one rule list is given to both directions). */
  direction?: Direction;
  /** Only a CM MAD (a datagram to QP 1) carrying this message: REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ, SIDR_REP, LAP, APR. */
  mad?: string;
}

/** A targeted fault in the style of Lumina: an action on the frames that match (the first `count` of them, or all). */
export interface FaultRule {
  action: FaultAction;
  match: FaultMatch;
  /** How many matching frames to hit (default: every one). Counted per injector. */
  count?: number;
  /** For `delay`: extra one-way delay of the matching frame, in ns (default 0). */
  delayNs?: number;
}

/**
 * Simplified Gilbert-Elliott loss (Gilbert 1960; netem's `loss gemodel` with
 * 1-k = 0, h = 1): a Good state that loses frames at rate `drop`, and a Bad
 * state that loses every frame. Each frame in Good enters Bad with
 * probability `enter` (that frame is the first one lost); after each frame
 * lost in Bad, the link returns to Good with probability 1 / `meanLength`, so
 * burst lengths are geometric with mean `meanLength`.
 */
export interface DropBurst {
  enter: number;
  meanLength: number;
}

/** Random reordering: a frame held back until a few later ones have passed it. */
export interface ReorderConfig {
  /** Probability that a frame is held back. */
  probability: number;
  /** It is released after 1..window later frames (uniform) have gone past it. */
  window: number;
  /** It is released anyway after this long, when traffic stops (default 10 µs). */
  maxHoldNs?: number;
}

/** The faults of one direction: random ones at the given rates, and targeted `rules`. */
export interface FaultConfig {
  /** Independent loss probability per frame. */
  drop?: number;
  dropBurst?: DropBurst;
  /** Probability that the network delivers a second copy right after the frame. */
  duplicate?: number;
  reorder?: ReorderConfig;
  /** Fixed one-way propagation delay, in ns. */
  delayNs?: number;
  /**
   * Uniform extra delay 0..jitterNs per frame. The link keeps FIFO order, so
   * jitter only stretches gaps; frames overtake each other only by `reorder`
   * or a targeted `delay` rule.
   */
  jitterNs?: number;
  /**
   * Probability of flipping one random bit in BTH + extension headers +
   * payload + pad, never in BTH byte 4 (FECN/BECN/resv, masked by the ICRC).
   * This models corruption inside a switch, after which the Ethernet FCS is
   * recomputed: the frame arrives, and only the end-to-end ICRC can catch it.
   * Frames that are not RoCE get one bit flipped anywhere after the L2 header.
   */
  corrupt?: number;
  /**
   * Probability of setting ECN to CE (3), as a congested switch does. IPv4:
   * the TOS low bits, then the header checksum is recomputed; IPv6: the low
   * two bits of the traffic class. The ICRC stays valid: it masks those bits.
   * Marked regardless of ECT, so stacks that do not set ECT still see CE.
   */
  ecnCe?: number;
  rules?: readonly FaultRule[];
}

/** What the injector of one direction did, frame by frame. */
export interface FaultCounters {
  /** Frames offered to the injector. */
  frames: number;
  dropped: number;
  duplicated: number;
  reordered: number;
  corrupted: number;
  ecnMarked: number;
  /** Frames delayed by a targeted `delay` rule (jitter is not counted). */
  delayed: number;
}

/** One frame to deliver, `extraNs` after the end of its serialization. */
export interface Emission {
  frame: Uint8Array;
  /** Propagation delay + jitter (+ a rule's delay) in ns. */
  extraNs: number;
  /** False for frames a `delay` rule took out of FIFO order. */
  fifo: boolean;
}

/** Numbers drawn from the Rng per input frame, used or not. */
export const DRAWS_PER_FRAME = 11;
const D = {
  DROP: 0,
  BURST_ENTER: 1,
  BURST_LEAVE: 2,
  DUP: 3,
  REORDER: 4,
  REORDER_K: 5,
  JITTER: 6,
  DUP_JITTER: 7,
  CORRUPT: 8,
  CORRUPT_BIT: 9,
  ECN: 10,
} as const;

/** Round-tracking entries kept before the oldest are forgotten. */
const MAX_TRACKED_PSNS = 1 << 20;
const DEFAULT_MAX_HOLD_NS = 10_000;

interface Held {
  frame: Uint8Array;
  seq: number;
  /** Later frames still to go past it. */
  remaining: number;
  deadline: number;
  jitterNs: number;
}

interface RuleState {
  rule: FaultRule;
  /** Opcodes the rule's opcode matches, or null for any. */
  opcodes: ReadonlySet<number> | null;
  left: number;
  hits: number;
}

export function emptyCounters(): FaultCounters {
  return { frames: 0, dropped: 0, duplicated: 0, reordered: 0, corrupted: 0, ecnMarked: 0, delayed: 0 };
}

/** The opcodes a rule's `opcode` names; throws when it names none (a typo would otherwise never match). */
export function resolveOpcodes(op: number | string): Set<number> {
  const out = new Set<number>();
  if (typeof op === 'number') {
    if (!Number.isInteger(op) || op < 0 || op > 0xff) throw new LinkConfigError(`opcode ${op} is not 0..255`);
    out.add(op);
    return out;
  }
  const want = op.toUpperCase();
  for (const e of OPCODES) {
    if (e === undefined) continue;
    const bare = e.name.slice(e.name.indexOf('_') + 1);
    if (e.name === want || bare === want) out.add(e.opcode);
  }
  if (out.size === 0) throw new LinkConfigError(`opcode '${op}' names no opcode`);
  return out;
}

function checkProb(p: number | undefined, what: string): number {
  const v = p ?? 0;
  if (!(v >= 0 && v <= 1)) throw new LinkConfigError(`${what} must be a probability in [0, 1], not ${p}`);
  return v;
}

function checkNs(v: number | undefined, what: string): number {
  const x = v ?? 0;
  if (!(Number.isFinite(x) && x >= 0)) throw new LinkConfigError(`${what} must be a non-negative number of ns, not ${v}`);
  return x;
}

/** Request / response / other: retransmission rounds are counted per PSN space. */
function psnSpace(opcode: number): string {
  const info = OPCODES[opcode];
  if (info === undefined) return 'x';
  if ((info.flags & OpFlag.REQ) !== 0) return 'q';
  if ((info.flags & OpFlag.RESP) !== 0) return 'r';
  return 'o';
}

/** Offset of the IP header and its version (4 or 6), or null for frames without IP. */
function ipOffset(frame: Uint8Array): { off: number; version: 4 | 6 } | null {
  try {
    const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
    const eth = parseEthernet(view, 0, frame.length);
    const off = ethernetHeaderLen(eth);
    if (eth.etherType === EtherType.IPv4 && frame.length >= off + 20 && frame[off]! >>> 4 === 4) return { off, version: 4 };
    if (eth.etherType === EtherType.IPv6 && frame.length >= off + 40 && frame[off]! >>> 4 === 6) return { off, version: 6 };
  } catch {
    // too short for an Ethernet header
  }
  return null;
}

/** The frame's ECN codepoint (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE), or -1 when it has no IP header. */
export function ecnCodepoint(frame: Uint8Array): number {
  const ip = ipOffset(frame);
  if (ip === null) return -1;
  return ip.version === 4 ? frame[ip.off + 1]! & 0x03 : (frame[ip.off + 1]! >>> 4) & 0x03;
}

/** Sets ECN to CE in place; false when the frame has no IP header. */
export function markEcnCe(frame: Uint8Array): boolean {
  const ip = ipOffset(frame);
  if (ip === null) return false;
  if (ip.version === 4) {
    frame[ip.off + 1] = frame[ip.off + 1]! | 0x03;
    const ihl = (frame[ip.off]! & 0x0f) * 4;
    if (frame.length < ip.off + ihl) return true;
    const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
    view.setUint16(ip.off + 10, 0);
    view.setUint16(ip.off + 10, ipv4Checksum(view, ip.off, ihl));
  } else {
    // Traffic class = low nibble of byte 0, high nibble of byte 1; ECN is its low two bits.
    frame[ip.off + 1] = frame[ip.off + 1]! | 0x30;
  }
  return true;
}

/**
 * Flips one bit chosen by `u` in [0, 1): inside [bthOff, icrcOff) minus BTH
 * byte 4 for a decoded RoCE packet, else anywhere after the L2 header.
 * Returns the byte offset flipped, or -1 when there is nothing to flip.
 */
export function flipBit(frame: Uint8Array, p: RocePacket | null, u: number): number {
  let from: number;
  let to: number;
  let skip = -1;
  if (p !== null && p.bthOff >= 0 && p.icrcOff > p.bthOff) {
    from = p.bthOff;
    to = p.icrcOff;
    skip = p.bthOff + 4;
  } else {
    from = ipOffset(frame)?.off ?? Math.min(14, frame.length);
    to = frame.length;
  }
  const bytes = to - from - (skip >= 0 ? 1 : 0);
  if (bytes <= 0) return -1;
  const bit = Math.floor(u * bytes * 8);
  let off = from + (bit >>> 3);
  if (skip >= 0 && off >= skip) off++;
  frame[off] = frame[off]! ^ (1 << (bit & 7));
  return off;
}

export class FaultInjector {
  readonly direction: Direction;
  readonly counters: FaultCounters = emptyCounters();
  private readonly rng: Rng;
  private readonly u = new Float64Array(DRAWS_PER_FRAME);
  private readonly drop: number;
  private readonly burst: DropBurst | null;
  private readonly duplicate: number;
  private readonly reorder: Required<ReorderConfig> | null;
  private readonly delayNs: number;
  private readonly jitterNs: number;
  private readonly corrupt: number;
  private ecnCe: number;
  private readonly rules: RuleState[];
  private inBurst = false;
  private seq = 0;
  private readonly held: Held[] = [];
  /** (space, destQp, psn) → times seen from this sender. */
  private readonly seen = new Map<string, number>();

  /** True when no fault at all is configured: frames pass with the fixed delay only. */
  private isQuiet: boolean;
  /** True when no fault but ECN marking is configured (`setEcnCe` recomputes `isQuiet` from it). */
  private readonly quietButEcn: boolean;

  constructor(direction: Direction, rng: Rng, config: FaultConfig = {}) {
    this.direction = direction;
    this.rng = rng;
    this.drop = checkProb(config.drop, 'drop');
    if (config.dropBurst !== undefined) {
      checkProb(config.dropBurst.enter, 'dropBurst.enter');
      if (!(config.dropBurst.meanLength >= 1)) throw new LinkConfigError(`dropBurst.meanLength must be >= 1, not ${config.dropBurst.meanLength}`);
      this.burst = { ...config.dropBurst };
    } else {
      this.burst = null;
    }
    this.duplicate = checkProb(config.duplicate, 'duplicate');
    if (config.reorder !== undefined && config.reorder.probability > 0) {
      const r = config.reorder;
      checkProb(r.probability, 'reorder.probability');
      if (!Number.isInteger(r.window) || r.window < 1) throw new LinkConfigError(`reorder.window must be an integer >= 1, not ${r.window}`);
      this.reorder = { probability: r.probability, window: r.window, maxHoldNs: checkNs(r.maxHoldNs ?? DEFAULT_MAX_HOLD_NS, 'reorder.maxHoldNs') };
    } else {
      this.reorder = null;
    }
    this.delayNs = checkNs(config.delayNs, 'delayNs');
    this.jitterNs = checkNs(config.jitterNs, 'jitterNs');
    this.corrupt = checkProb(config.corrupt, 'corrupt');
    this.ecnCe = checkProb(config.ecnCe, 'ecnCe');
    this.quietButEcn =
      this.drop === 0 &&
      this.burst === null &&
      this.duplicate === 0 &&
      this.reorder === null &&
      this.jitterNs === 0 &&
      this.corrupt === 0 &&
      (config.rules ?? []).length === 0;
    this.isQuiet = this.quietButEcn && this.ecnCe === 0;
    this.rules = (config.rules ?? []).map((rule) => {
      if (rule.count !== undefined && !(Number.isInteger(rule.count) && rule.count >= 0)) {
        throw new LinkConfigError(`rule count must be a non-negative integer, not ${rule.count}`);
      }
      if (!FAULT_ACTIONS.includes(rule.action))
        throw new LinkConfigError(`rule action ${JSON.stringify(rule.action)} is not one of ${FAULT_ACTIONS.join(', ')}`);
      if (rule.action === 'delay') checkNs(rule.delayNs, 'rule delayNs');
      if (rule.match.mad !== undefined && !Object.hasOwn(CmAttr, rule.match.mad))
        throw new LinkConfigError(`rule mad ${JSON.stringify(rule.match.mad)} names no CM message`);
      return {
        rule,
        opcodes: rule.match.opcode === undefined ? null : resolveOpcodes(rule.match.opcode),
        left: rule.count ?? Number.POSITIVE_INFINITY,
        hits: 0,
      };
    });
  }

  /**
   * Changes the share of frames marked CE from now on, as a switch queue that builds up or drains
   * (a congestion episode in a simulation). The same calls at the same points give the same marks.
   */
  setEcnCe(p: number): void {
    this.ecnCe = checkProb(p, 'ecnCe');
    this.isQuiet = this.quietButEcn && this.ecnCe === 0;
  }

  /** Frames held back by `reorder` and not yet released. */
  get heldCount(): number {
    return this.held.length;
  }

  /** Earliest time a held frame must be released (`releaseExpired`), or null. */
  nextDeadline(): number | null {
    return this.held[0]?.deadline ?? null;
  }

  /** How many frames each targeted rule has hit so far, by rule index. */
  ruleHits(): number[] {
    return this.rules.map((r) => r.hits);
  }

  /** True when no fault is configured (every frame goes through after the fixed delay). */
  get quiet(): boolean {
    return this.isQuiet;
  }

  /**
   * The fast path of `process` for a direction with no fault configured: counts the frames (one
   * unless told) and returns the fixed delay they get (FIFO), or -1 when faults are configured and
   * `process` decides (nothing is counted then).
   */
  passThroughDelay(frames = 1): number {
    if (!this.isQuiet) return -1;
    this.counters.frames += frames;
    return this.delayNs;
  }

  /**
   * Runs one frame (which the injector may modify: pass a copy) through the
   * faults. Returns what to deliver now, in order: possibly nothing, the
   * frame, its duplicate, and held frames released by it.
   */
  process(frame: Uint8Array, nowNs: number): Emission[] {
    if (this.isQuiet) {
      // No fault configured: nothing random to draw, the frame goes through after the fixed delay.
      this.counters.frames++;
      return [{ frame, extraNs: this.delayNs, fifo: true }];
    }
    const u = this.u;
    for (let i = 0; i < DRAWS_PER_FRAME; i++) u[i] = this.rng.float();
    this.counters.frames++;
    const seq = ++this.seq;

    // Decode only when something needs the headers.
    let pkt: RocePacket | null = null;
    if (this.rules.length > 0 || this.corrupt > 0) {
      const d = decodeFrame(frame, undefined, { verifyIcrc: false });
      if (d.roce && d.bth !== null) pkt = d;
    }

    // Targeted rules first (Lumina-style events), then the random faults.
    let dup = false;
    let corrupt = false;
    let ecn = false;
    let ruleDelay = -1;
    let exempt = false;
    if (this.rules.length > 0) {
      const round = pkt === null || pkt.bth === null ? -1 : this.countRound(pkt.bth.opcode, pkt.bth.destQp, pkt.bth.psn);
      for (const r of this.rules) {
        if (r.left <= 0 || !this.matches(r, pkt, round)) continue;
        r.left--;
        r.hits++;
        switch (r.rule.action) {
          case 'drop':
            this.counters.dropped++;
            this.stepBurst(); // the burst chain advances with every frame
            return [];
          case 'duplicate':
            dup = true;
            break;
          case 'corrupt':
            corrupt = true;
            break;
          case 'ecnCe':
            ecn = true;
            break;
          case 'delay':
            ruleDelay = Math.max(ruleDelay, 0) + (r.rule.delayNs ?? 0);
            break;
          case 'pass':
            exempt = true;
            break;
        }
      }
    }

    // The burst chain advances and the draws are taken for every frame, exempt or not (determinism).
    const lost = this.stepBurst() || u[D.DROP]! < this.drop;
    if (lost && !exempt) {
      this.counters.dropped++;
      return [];
    }
    if (!exempt) {
      dup ||= u[D.DUP]! < this.duplicate;
      corrupt ||= u[D.CORRUPT]! < this.corrupt;
      ecn ||= u[D.ECN]! < this.ecnCe;
    }

    if (corrupt && flipBit(frame, pkt, u[D.CORRUPT_BIT]!) >= 0) this.counters.corrupted++;
    if (ecn && markEcnCe(frame)) this.counters.ecnMarked++;

    const jitter = (x: number): number => Math.floor(x * (this.jitterNs + 1));
    const out: Emission[] = [];
    if (ruleDelay >= 0) {
      this.counters.delayed++;
      out.push({ frame, extraNs: this.delayNs + jitter(u[D.JITTER]!) + ruleDelay, fifo: false });
    } else if (!exempt && this.reorder !== null && u[D.REORDER]! < this.reorder.probability) {
      this.counters.reordered++;
      const k = 1 + Math.floor(u[D.REORDER_K]! * this.reorder.window);
      this.held.push({ frame, seq, remaining: k, deadline: nowNs + this.reorder.maxHoldNs, jitterNs: jitter(u[D.JITTER]!) });
    } else {
      out.push({ frame, extraNs: this.delayNs + jitter(u[D.JITTER]!), fifo: true });
    }
    if (dup) {
      this.counters.duplicated++;
      out.push({ frame: frame.slice(), extraNs: this.delayNs + jitter(u[D.DUP_JITTER]!), fifo: true });
    }
    return this.emitAll(out, seq);
  }

  /** Releases held frames whose hold timeout has passed (in the order they were held). */
  releaseExpired(nowNs: number): Emission[] {
    const out: Emission[] = [];
    while (this.held.length > 0 && this.held[0]!.deadline <= nowNs) {
      const h = this.held.shift()!;
      out.push({ frame: h.frame, extraNs: this.delayNs + h.jitterNs, fifo: true });
    }
    return out;
  }

  /** Times (space, destQp, psn) has been seen from this sender before this frame. */
  private countRound(opcode: number, destQp: number, psn: number): number {
    const key = `${psnSpace(opcode)}:${destQp}:${psn}`;
    const n = this.seen.get(key) ?? 0;
    this.seen.delete(key); // re-insert at the end: the oldest entries go first
    this.seen.set(key, n + 1);
    if (this.seen.size > MAX_TRACKED_PSNS) {
      const oldest = this.seen.keys().next();
      if (oldest.done !== true) this.seen.delete(oldest.value);
    }
    return n;
  }

  private matches(r: RuleState, pkt: RocePacket | null, round: number): boolean {
    const m = r.rule.match;
    if (m.direction !== undefined && m.direction !== this.direction) return false;
    const bth = pkt?.bth ?? null;
    if (bth === null) {
      // Only RoCE frames can match a rule that names a transport field.
      return m.qpn === undefined && m.opcode === undefined && m.psn === undefined && m.round === undefined && m.mad === undefined;
    }
    if (m.mad !== undefined && pkt?.mad?.cm?.name !== m.mad) return false;
    if (m.qpn !== undefined && bth.destQp !== m.qpn) return false;
    if (r.opcodes !== null && !r.opcodes.has(bth.opcode)) return false;
    if (m.psn !== undefined && bth.psn !== m.psn) return false;
    if (m.round !== undefined && round !== m.round) return false;
    return true;
  }

  /** Advances the Gilbert-Elliott chain by one frame; true when this frame is lost to a burst. */
  private stepBurst(): boolean {
    if (this.burst === null) return false;
    const u = this.u;
    if (!this.inBurst) {
      if (u[D.BURST_ENTER]! >= this.burst.enter) return false;
      this.inBurst = true;
    }
    if (u[D.BURST_LEAVE]! < 1 / this.burst.meanLength) this.inBurst = false;
    return true;
  }

  /**
   * Emits `list` (the emissions of frame `seq`) one by one. Each FIFO emission
   * overtakes every held frame sent before it; after each, the oldest held
   * frame whose count has run out is released, and it too overtakes the held
   * frames older than itself. So a held frame is overtaken exactly
   * `remaining` times, never more.
   */
  private emitAll(list: Emission[], seq: number): Emission[] {
    if (this.held.length === 0) return list;
    const out: Emission[] = [];
    for (const e of list) this.emit(out, e, seq);
    return out;
  }

  private emit(out: Emission[], e: Emission, seq: number): void {
    out.push(e);
    if (!e.fifo) return;
    for (const h of this.held) if (h.seq < seq) h.remaining--;
    for (;;) {
      // `held` is in send order, so the first exhausted one is the oldest.
      const i = this.held.findIndex((h) => h.remaining <= 0);
      if (i < 0) return;
      const [h] = this.held.splice(i, 1) as [Held];
      out.push({ frame: h.frame, extraNs: this.delayNs + h.jitterNs, fifo: true });
      for (const o of this.held) if (o.seq < h.seq) o.remaining--;
    }
  }
}
