/**
 * The conversations one of whose QPNs is not known yet, for the table (conversations.ts) to bind
 * a frame to by PSN: a request to a conversation seen so far only in its responses, or a response
 * to one seen so far only in its requests. Each side is kept by which QPN was unknown and by
 * direction, requester host to responder host, in the order the conversations were made (sides a,
 * then b): a frame looks only at the candidates it could join, in the order a scan of them all would
 * meet them.
 *
 * A single list, scanned whole for each new conversation's first frame and filtered again at each
 * binding, made a capture of 20 000 QPs between two hosts quadratic: 3.9 s of its 7 s
 * (docs/performance.md, "Many conversations in little memory").
 */
import type { Conversation } from './conversations';
import type { Side } from './types';

/** One side of an unbound conversation as a requester. */
export interface UnboundSide {
  c: Conversation;
  side: Side;
}

const other = (s: Side): Side => (s === 'a' ? 'b' : 'a');
const direction = (requesterIp: string, responderIp: string): string => `${requesterIp}>${responderIp}`;

/** Sides held per direction, requester host to responder host. */
type ByDirection = Map<string, UnboundSide[]>;

export class UnboundConversations {
  private readonly members = new Set<Conversation>();
  /** Sides whose requester's QPN is known and whose responder's is not (made from responses). */
  private readonly responderUnknown: ByDirection = new Map();
  /** Sides whose requester's QPN is not known (made from requests). */
  private readonly requesterUnknown: ByDirection = new Map();

  /** `c`, made with a QPN unknown. A side stays in its kind until both QPNs are known. */
  add(c: Conversation): void {
    this.members.add(c);
    for (const side of ['a', 'b'] as const) {
      const req = c.endpoint(side);
      const rsp = c.endpoint(other(side));
      const into = req.qpn === null ? this.requesterUnknown : rsp.qpn === null ? this.responderUnknown : null;
      if (into === null) continue;
      const k = direction(req.ip, rsp.ip);
      let list = into.get(k);
      if (list === undefined) into.set(k, (list = []));
      list.push({ c, side });
    }
  }

  /** `c` is no longer a candidate: both its QPNs are known, or it is over. */
  delete(c: Conversation): void {
    this.members.delete(c);
  }

  /** Sides from `requesterIp` to `responderIp` whose responder QPN was not known when made, oldest first. */
  withResponderUnknown(requesterIp: string, responderIp: string): readonly UnboundSide[] {
    return this.held(this.responderUnknown, direction(requesterIp, responderIp));
  }

  /** Sides from `requesterIp` to `responderIp` whose requester QPN was not known when made, oldest first. */
  withRequesterUnknown(requesterIp: string, responderIp: string): readonly UnboundSide[] {
    return this.held(this.requesterUnknown, direction(requesterIp, responderIp));
  }

  /** The sides of `k` whose conversations are still held (the others are dropped here). */
  private held(map: ByDirection, k: string): readonly UnboundSide[] {
    const list = map.get(k);
    if (list === undefined) return [];
    let kept = 0;
    for (const x of list) if (this.members.has(x.c)) list[kept++] = x;
    list.length = kept;
    if (kept === 0) map.delete(k);
    return list;
  }
}
