/**
 * Conversations: the two endpoints (IP address, QPN) of an RC, UC or XRC QP
 * pair, or of a UD exchange, rebuilt from the frames.
 *
 * A request names only its destination QP (BTH DestQP); the requester's own
 * QPN shows up as the DestQP of the responses sent back. So a conversation
 * starts from its first request with the requester's QPN unknown, and is
 * bound when a response to that requester arrives whose PSN falls inside the
 * PSNs the requests carried (PSNs start at random 24-bit values, so this
 * tells QP pairs between the same two hosts apart). UD frames carry both
 * QPNs (DETH SrcQP). A CNP is addressed to the QP whose traffic was marked.
 */
import { RequesterFlow, type FlowSinks } from './flow';
import { FrameRole, type FrameView } from './frame-view';
import { psnDiff } from './psn';
import type { Side } from './types';

export interface Endpoint {
  ip: string;
  /** Null until the capture shows it. */
  qpn: number | null;
}

export class Conversation {
  frames = 0;
  firstFrame = 0;
  lastFrame = 0;
  firstNs = 0;
  lastNs = 0;
  cnps = 0;
  readonly flows: { a: RequesterFlow | null; b: RequesterFlow | null } = { a: null, b: null };

  constructor(
    readonly id: number,
    /** 'RC' | 'UC' | 'UD' | 'XRC' | 'RD'. */
    readonly type: string,
    readonly a: Endpoint,
    readonly b: Endpoint,
    private readonly sinks: FlowSinks,
  ) {}

  /** The flow in which `side` is the requester (created on first use). */
  flow(side: Side): RequesterFlow {
    const have = this.flows[side];
    if (have !== null) return have;
    const reliable = this.type === 'RC' || this.type === 'XRC';
    const f = new RequesterFlow(this.id, side, reliable, this.type === 'UD', this.sinks);
    this.flows[side] = f;
    return f;
  }

  endpoint(side: Side): Endpoint {
    return side === 'a' ? this.a : this.b;
  }

  touch(v: FrameView): void {
    if (this.frames === 0) {
      this.firstFrame = v.frame;
      this.firstNs = v.timeNs;
    }
    this.frames++;
    this.lastFrame = v.frame;
    this.lastNs = v.timeNs;
  }
}

export interface Routed {
  conv: Conversation;
  /** Side that sent the frame. */
  from: Side;
  /** Side that is the requester of the flow the frame belongs to. */
  requester: Side;
}

const other = (s: Side): Side => (s === 'a' ? 'b' : 'a');
const key = (ip: string, qpn: number): string => `${ip}#${qpn}`;

export class ConversationTable {
  readonly list: Conversation[] = [];
  private readonly byEndpoint = new Map<string, Conversation>();
  private readonly ud = new Map<string, Conversation>();
  /** Conversations whose requester QPN is not known yet. */
  private unbound: Conversation[] = [];

  constructor(private readonly sinks: FlowSinks) {}

  private create(type: string, a: Endpoint, b: Endpoint): Conversation {
    const c = new Conversation(this.list.length + 1, type, a, b, this.sinks);
    this.list.push(c);
    if (a.qpn !== null) this.byEndpoint.set(key(a.ip, a.qpn), c);
    if (b.qpn !== null) this.byEndpoint.set(key(b.ip, b.qpn), c);
    if (a.qpn === null || b.qpn === null) this.unbound.push(c);
    return c;
  }

  private sideOf(c: Conversation, ip: string, qpn: number): Side | null {
    if (c.a.ip === ip && c.a.qpn === qpn) return 'a';
    if (c.b.ip === ip && c.b.qpn === qpn) return 'b';
    return null;
  }

  /** The conversation and direction of a frame; null for frames that belong to none (a CNP to an unknown QP). */
  route(v: FrameView): Routed | null {
    if (v.role === FrameRole.CNP) {
      const c = this.byEndpoint.get(key(v.dst, v.destQp));
      if (c === undefined) return null;
      const to = this.sideOf(c, v.dst, v.destQp) ?? 'a';
      return { conv: c, from: other(to), requester: to };
    }
    if (v.srcQp >= 0 && v.qpType === 'UD') return this.routeUd(v);
    if (v.role === FrameRole.REQUEST) {
      const c = this.byEndpoint.get(key(v.dst, v.destQp));
      if (c !== undefined) {
        const to = this.sideOf(c, v.dst, v.destQp) as Side;
        if (c.endpoint(other(to)).ip === v.src) return { conv: c, from: other(to), requester: other(to) };
      }
      const n = this.create(v.qpType, { ip: v.src, qpn: null }, { ip: v.dst, qpn: v.destQp });
      return { conv: n, from: 'a', requester: 'a' };
    }
    // A response: its DestQP is the requester's QP.
    const c = this.byEndpoint.get(key(v.dst, v.destQp));
    if (c !== undefined) {
      const to = this.sideOf(c, v.dst, v.destQp) as Side;
      return { conv: c, from: other(to), requester: to };
    }
    const bound = this.bind(v);
    if (bound !== null) return bound;
    const n = this.create(v.qpType === 'UC' ? 'UC' : v.qpType === 'XRC' ? 'XRC' : v.qpType === 'RD' ? 'RD' : 'RC', { ip: v.dst, qpn: v.destQp }, { ip: v.src, qpn: null });
    return { conv: n, from: 'b', requester: 'a' };
  }

  /** Binds a response to a conversation whose requester QPN is unknown, by PSN. */
  private bind(v: FrameView): Routed | null {
    let best: { c: Conversation; side: Side; dist: number } | null = null;
    for (const c of this.unbound) {
      for (const side of ['a', 'b'] as const) {
        const ep = c.endpoint(side);
        const peer = c.endpoint(other(side));
        if (ep.qpn !== null || ep.ip !== v.dst || peer.ip !== v.src) continue;
        const f = c.flows[side];
        if (f === null || f.coverHigh === null) continue;
        const dist = psnDiff(f.coverHigh, v.psn);
        // A response carries a PSN the requester sent (a NAK: up to one past it).
        if (dist < -1 || dist > 0x10000) continue;
        if (best === null || dist < best.dist) best = { c, side, dist };
      }
    }
    if (best === null) return null;
    const ep = best.c.endpoint(best.side);
    ep.qpn = v.destQp;
    this.byEndpoint.set(key(ep.ip, v.destQp), best.c);
    this.unbound = this.unbound.filter((c) => c.a.qpn === null || c.b.qpn === null);
    return { conv: best.c, from: other(best.side), requester: best.side };
  }

  private routeUd(v: FrameView): Routed {
    const ks = key(v.src, v.srcQp);
    const kd = key(v.dst, v.destQp);
    const k = ks < kd ? `${ks}|${kd}` : `${kd}|${ks}`;
    let c = this.ud.get(k);
    if (c === undefined) {
      c = new Conversation(this.list.length + 1, 'UD', { ip: v.src, qpn: v.srcQp }, { ip: v.dst, qpn: v.destQp }, this.sinks);
      this.list.push(c);
      this.ud.set(k, c);
    }
    const from: Side = c.a.ip === v.src && c.a.qpn === v.srcQp ? 'a' : 'b';
    return { conv: c, from, requester: from };
  }
}
