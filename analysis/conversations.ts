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
 *
 * QPNs are reused: a process that creates its QPs again, or a device that
 * starts numbering again, gives a new connection the QPN of an old one. A
 * frame for a known endpoint starts a new conversation (the old one is
 * closed) when
 *  - its PSN lies more than CONNECTION_PSN_WINDOW from the PSNs of the flow
 *    it would join (a new connection starts at a random PSN), or
 *  - the flow it would join has no PSNs yet and the two hosts set up a new
 *    connection out of band after the conversation's last frame (a TCP SYN
 *    or an RDMA CM MAD between them: `outOfBand`), or
 *  - it is a response whose PSN binds it to another conversation still
 *    waiting for its requester's QPN (its requests carried that PSN).
 * A frame whose PSN continues the flow keeps the conversation (and clears
 * the out-of-band mark: the exchange was for another connection).
 */
import { CongestionTrack } from './congestion-track';
import { RequesterFlow, type FlowSinks } from './flow';
import { FrameRole, type FrameView } from './frame-view';
import { EndpointMap } from './endpoint-map';
import { UnboundConversations } from './unbound-conversations';
import { psnDiff } from '../base/psn';
import { OpFlag } from '../packets/opcodes';
import type { Side } from './types';

/**
 * How far a frame's PSN may lie from its flow's PSNs (highest sent, else highest
 * acknowledged) and still belong to the same connection. A requester has at most
 * this many PSNs in flight in practice (IBTA allows 2^23, rxe and RNICs far fewer);
 * a new connection starts at a random 24-bit PSN and lands inside the window with
 * probability (2 * 65536 + 1) / 2^24, under 1 %. Also bounds response-to-request
 * binding.
 */
export const CONNECTION_PSN_WINDOW = 0x10000;

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
  /** Set when a later conversation took over one of its endpoints (a QPN reused by a new connection). */
  closedBy: number | null = null;
  /** Established by an RDMA CM exchange the capture holds (QPNs and first PSNs from its REQ and REP). */
  cmEstablished = false;
  /** The CM connection (analysis/cm-connections.ts) that set it up, or null. */
  cmConnection: number | null = null;
  /** Ended by the CM: the frame of the DREP (or REJ) of its connection, after which its QPNs start a new conversation; or null. */
  cmEndedFrame: number | null = null;
  /** Time of an out-of-band connection set-up between the two hosts after this conversation's last frame, or null. */
  outOfBandNs: number | null = null;
  readonly flows: { a: RequesterFlow | null; b: RequesterFlow | null } = { a: null, b: null };
  /** ECN marks and CNPs per requester side, from the first one seen (analysis/congestion-track.ts). */
  readonly congestion: { a: CongestionTrack | null; b: CongestionTrack | null } = { a: null, b: null };

  constructor(
    readonly id: number,
    /** 'RC' | 'UC' | 'UD' | 'XRC' | 'RD'. */
    readonly type: string,
    readonly a: Endpoint,
    readonly b: Endpoint,
    private readonly sinks: FlowSinks,
  ) {}

  /** The congestion track of requester `side`, started at `timeNs` when `start` (its first CE mark or CNP). */
  congestionOf(side: Side, timeNs: number, start: boolean): CongestionTrack | null {
    const t = this.congestion[side];
    if (t !== null || !start) return t;
    return (this.congestion[side] = new CongestionTrack(timeNs));
  }

  /** The flow in which `side` is the requester (created on first use). */
  flow(side: Side): RequesterFlow {
    const have = this.flows[side];
    if (have !== null) return have;
    const reliable = this.type === 'RC' || this.type === 'XRC';
    const f = new RequesterFlow(this.id, side, reliable, this.type === 'UD', this.sinks, this.endpoint(side).ip);
    this.flows[side] = f;
    return f;
  }

  endpoint(side: Side): Endpoint {
    return side === 'a' ? this.a : this.b;
  }

  /** The UDP source port each sender's last frame carried (a QP keeps its port; rxe derives it from the QPN). */
  readonly sportBySender = new Map<string, number>();

  touch(v: FrameView): void {
    if (v.sport >= 0) this.sportBySender.set(v.src, v.sport);
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

const pairKey = (x: string, y: string): string => (x < y ? `${x}|${y}` : `${y}|${x}`);

/** Whether a frame continues the flow it would join: by its PSN, or unknown (the flow has no PSNs yet). */
const Fit = { SAME: 0, NEW: 1, UNKNOWN: 2 } as const;
type Fit = (typeof Fit)[keyof typeof Fit];

export class ConversationTable {
  readonly list: Conversation[] = [];
  private readonly byEndpoint = new EndpointMap<Conversation>();
  private readonly ud = new Map<string, Conversation>();
  /** Conversations one of whose QPNs is not known yet. */
  private readonly unbound = new UnboundConversations();
  /** Open RC/UC/XRC conversations per pair of hosts (for out-of-band marks). */
  private readonly byHosts = new Map<string, Set<Conversation>>();

  /** The first frame that would have started a conversation past `limit`, or null. */
  refusedFrame: number | null = null;

  /** At most `limit` conversations are started from frames (`route`); past it frames belong to none. */
  constructor(
    private readonly sinks: FlowSinks,
    readonly limit = Number.POSITIVE_INFINITY,
  ) {}

  /** Whether frame `v` may start a conversation; records the first it may not. */
  private mayStart(v: FrameView): boolean {
    if (this.list.length < this.limit) return true;
    this.refusedFrame ??= v.frame;
    return false;
  }

  private create(type: string, a: Endpoint, b: Endpoint): Conversation {
    const c = new Conversation(this.list.length + 1, type, a, b, this.sinks);
    this.list.push(c);
    for (const ep of [a, b]) {
      if (ep.qpn === null) continue;
      const old = this.byEndpoint.get(ep.ip, ep.qpn);
      if (old !== undefined && old !== c) this.close(old, c);
      this.byEndpoint.set(ep.ip, ep.qpn, c);
    }
    if (a.qpn === null || b.qpn === null) this.unbound.add(c);
    const pk = pairKey(a.ip, b.ip);
    let set = this.byHosts.get(pk);
    if (set === undefined) this.byHosts.set(pk, (set = new Set()));
    set.add(c);
    return c;
  }

  /** `c` is over: a new connection (`by`) took over one of its endpoints. */
  private close(c: Conversation, by: Conversation): void {
    if (c.closedBy !== null) return;
    c.closedBy = by.id;
    for (const ep of [c.a, c.b]) {
      if (ep.qpn === null) continue;
      this.byEndpoint.deleteIf(ep.ip, ep.qpn, c);
    }
    this.unbound.delete(c);
    this.byHosts.get(pairKey(c.a.ip, c.b.ip))?.delete(c);
  }

  /**
   * An out-of-band connection set-up between hosts `x` and `y` (a TCP SYN, an RDMA CM MAD):
   * the next frame of each of their conversations that cannot show by its PSN that it
   * continues that conversation starts a new one.
   */
  outOfBand(x: string, y: string, timeNs: number): void {
    const set = this.byHosts.get(pairKey(x, y));
    if (set === undefined) return;
    for (const c of set) if (c.outOfBandNs === null) c.outOfBandNs = timeNs;
  }

  /** Does `v` continue the flow of `c` in which `requester` is the requester? */
  private fit(c: Conversation, requester: Side, v: FrameView): Fit {
    const f = c.flows[requester];
    const ref = f === null ? null : (f.coverHigh ?? f.respHigh);
    if (ref !== null) {
      const d = psnDiff(v.psn, ref);
      if (d >= -CONNECTION_PSN_WINDOW && d <= CONNECTION_PSN_WINDOW) {
        // The hosts set a connection up out of band since this conversation's last frame, and the
        // frame comes from another UDP source port on a PSN that neither repeats nor continues the
        // flow: a new connection whose start PSN happens to lie near the old one's (rc_pingpong seeds
        // its PSNs from pid and time; a fresh clone's rxe lab run had two back to back 63 409 apart).
        const port = c.sportBySender.get(v.src);
        if (c.outOfBandNs !== null && port !== undefined && v.sport >= 0 && v.sport !== port && d !== 0 && d !== 1) return Fit.NEW;
        c.outOfBandNs = null;
        return Fit.SAME;
      }
      return Fit.NEW;
    }
    return c.outOfBandNs !== null ? Fit.NEW : Fit.UNKNOWN;
  }

  private sideOf(c: Conversation, ip: string, qpn: number): Side | null {
    if (c.a.ip === ip && c.a.qpn === qpn) return 'a';
    if (c.b.ip === ip && c.b.qpn === qpn) return 'b';
    return null;
  }

  /** The conversation and direction of a frame; null for frames that belong to none (a CNP to an unknown QP, a new conversation past the limit). */
  route(v: FrameView): Routed | null {
    if (v.role === FrameRole.CNP) {
      const c = this.byEndpoint.get(v.dst, v.destQp);
      if (c === undefined) return null;
      const to = this.sideOf(c, v.dst, v.destQp) ?? 'a';
      return { conv: c, from: other(to), requester: to };
    }
    if (v.srcQp >= 0 && v.transport === 'UD') return this.routeUd(v);
    if (v.role === FrameRole.REQUEST) {
      const c = this.byEndpoint.get(v.dst, v.destQp);
      if (c !== undefined) {
        const to = this.sideOf(c, v.dst, v.destQp) as Side;
        if (c.endpoint(other(to)).ip === v.src && this.fit(c, other(to), v) !== Fit.NEW) return { conv: c, from: other(to), requester: other(to) };
      }
      const joined = this.bindResponder(v);
      if (joined !== null) return joined;
      if (!this.mayStart(v)) return null;
      const n = this.create(v.transport, { ip: v.src, qpn: null }, { ip: v.dst, qpn: v.destQp });
      return { conv: n, from: 'a', requester: 'a' };
    }
    // A response: its DestQP is the requester's QP.
    const c = this.byEndpoint.get(v.dst, v.destQp);
    if (c !== undefined) {
      const to = this.sideOf(c, v.dst, v.destQp) as Side;
      const fit = c.endpoint(other(to)).ip === v.src ? this.fit(c, to, v) : Fit.NEW;
      if (fit === Fit.SAME) return { conv: c, from: other(to), requester: to };
      // Not shown to continue `c`: the requests of a conversation waiting for its requester's QPN may claim it.
      const cand = this.bindCandidate(v);
      if (cand !== null) {
        this.close(c, cand.c);
        return this.applyBind(v, cand.c, cand.side);
      }
      if (fit === Fit.UNKNOWN) return { conv: c, from: other(to), requester: to };
      // Fit.NEW: binding or creating below takes the endpoint over and closes `c`.
    }
    const bound = this.bind(v);
    if (bound !== null) return bound;
    if (!this.mayStart(v)) return null;
    const n = this.create(
      v.transport === 'UC' ? 'UC' : v.transport === 'XRC' ? 'XRC' : v.transport === 'RD' ? 'RD' : 'RC',
      { ip: v.dst, qpn: v.destQp },
      { ip: v.src, qpn: null },
    );
    return { conv: n, from: 'b', requester: 'a' };
  }

  /**
   * A request for a conversation that began, in this capture, with responses (the capture started
   * mid-conversation): the requester's QPN is known from them, the responder's is not. The request
   * joins it when its PSN continues the PSNs those responses carried.
   */
  private bindResponder(v: FrameView): Routed | null {
    for (const { c, side } of this.unbound.withResponderUnknown(v.src, v.dst)) {
      const req = c.endpoint(side);
      const rsp = c.endpoint(other(side));
      if (req.qpn === null || rsp.qpn !== null) continue;
      const f = c.flows[side];
      const ref = f === null ? null : (f.coverHigh ?? f.respHigh);
      if (ref === null) continue;
      const d = psnDiff(v.psn, ref);
      if (d < -CONNECTION_PSN_WINDOW || d > CONNECTION_PSN_WINDOW) continue;
      rsp.qpn = v.destQp;
      const old = this.byEndpoint.get(rsp.ip, v.destQp);
      if (old !== undefined && old !== c) this.close(old, c);
      this.byEndpoint.set(rsp.ip, v.destQp, c);
      this.unbound.delete(c);
      return { conv: c, from: side, requester: side };
    }
    return null;
  }

  /**
   * An RC connection the capture shows RDMA CM establish (a REQ and the REP answering it): the
   * conversation starts with both QPNs known and each side's first PSN as the REP and REQ give it
   * (a conversation on either endpoint before it is over).
   */
  cmEstablished(active: { ip: string; qpn: number; psn: number }, passive: { ip: string; qpn: number; psn: number }): Conversation {
    const c = this.create('RC', { ip: active.ip, qpn: active.qpn }, { ip: passive.ip, qpn: passive.qpn });
    // A message's Starting PSN is the first PSN its sender's receive queue expects (ib_cm with
    // rdma_cm: cma.c rdma_init_qp_attr() sets rq_psn to the PSN the ID sent; cm.c gives each side the
    // peer's as sq_psn): the active side sends from the REP's, the passive side from the REQ's.
    c.flow('a').seedStart(passive.psn, passive.qpn);
    c.flow('b').seedStart(active.psn, active.qpn);
    c.cmEstablished = true;
    return c;
  }

  /**
   * The CM ended conversation `id` (the DREP or a REJ of the connection that set it up, at `frame`): its
   * endpoints are let go, so a later frame on the same QPNs starts a new conversation.
   */
  cmEnded(id: number, frame: number): void {
    const c = this.list[id - 1];
    if (c === undefined || c.cmEndedFrame !== null) return;
    c.cmEndedFrame = frame;
    for (const ep of [c.a, c.b]) {
      if (ep.qpn === null) continue;
      this.byEndpoint.deleteIf(ep.ip, ep.qpn, c);
    }
    this.unbound.delete(c);
    this.byHosts.get(pairKey(c.a.ip, c.b.ip))?.delete(c);
  }

  /** Binds a response to a conversation whose requester QPN is unknown, by PSN. */
  private bind(v: FrameView): Routed | null {
    const cand = this.bindCandidate(v);
    return cand === null ? null : this.applyBind(v, cand.c, cand.side);
  }

  /** The conversation (and requester side) whose requests carried the PSN of response `v`, its requester QPN unknown. */
  private bindCandidate(v: FrameView): { c: Conversation; side: Side } | null {
    let best: { c: Conversation; side: Side; dist: number } | null = null;
    for (const { c, side } of this.unbound.withRequesterUnknown(v.dst, v.src)) {
      if (c.endpoint(side).qpn !== null) continue;
      const f = c.flows[side];
      if (f === null || f.coverHigh === null) continue;
      // A response carries a PSN the requester sent (a NAK: up to one past it); a READ response
      // any PSN of the READ's response range, which runs past the request's own PSN.
      const top = (v.opFlags & OpFlag.READ) !== 0 && f.reachHigh !== null && psnDiff(f.reachHigh, f.coverHigh) > 0 ? f.reachHigh : f.coverHigh;
      if (psnDiff(top, v.psn) < -1 || psnDiff(f.coverHigh, v.psn) > CONNECTION_PSN_WINDOW) continue;
      const dist = Math.max(0, psnDiff(f.coverHigh, v.psn));
      if (best === null || dist < best.dist) best = { c, side, dist };
    }
    return best === null ? null : { c: best.c, side: best.side };
  }

  private applyBind(v: FrameView, c: Conversation, side: Side): Routed {
    const ep = c.endpoint(side);
    ep.qpn = v.destQp;
    c.outOfBandNs = null;
    const old = this.byEndpoint.get(ep.ip, v.destQp);
    if (old !== undefined && old !== c) this.close(old, c);
    this.byEndpoint.set(ep.ip, v.destQp, c);
    if (c.a.qpn !== null && c.b.qpn !== null) this.unbound.delete(c);
    return { conv: c, from: other(side), requester: side };
  }

  private routeUd(v: FrameView): Routed | null {
    const ks = key(v.src, v.srcQp);
    const kd = key(v.dst, v.destQp);
    const k = ks < kd ? `${ks}|${kd}` : `${kd}|${ks}`;
    let c = this.ud.get(k);
    if (c === undefined) {
      if (!this.mayStart(v)) return null;
      c = new Conversation(this.list.length + 1, 'UD', { ip: v.src, qpn: v.srcQp }, { ip: v.dst, qpn: v.destQp }, this.sinks);
      this.list.push(c);
      this.ud.set(k, c);
    }
    const from: Side = c.a.ip === v.src && c.a.qpn === v.srcQp ? 'a' : 'b';
    return { conv: c, from, requester: from };
  }
}
