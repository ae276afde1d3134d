/**
 * Finding RC conversations in a capture for replay: the requests one side
 * sent to a QP and the responses the other side sent back, paired by
 * addresses and PSN overlap, with the path MTU inferred from the payloads.
 *
 * QPNs are reused across connections (a process that creates its QPs again
 * gets the same QPN; rxe numbers from 0x11 after every module load). The
 * packets to one (address, QPN) are split into one stream per connection
 * where the PSN jumps more than CONNECTION_PSN_WINDOW away from the stream's
 * PSNs so far (a new connection starts at a random PSN), the rule `roce
 * analyze` uses too (docs/analysis.md, "Conversations and flows").
 */
import type { RocePacket } from '../../packets/decode';
import { OpFlag, Transport } from '../../packets/opcodes';
import { CONNECTION_PSN_WINDOW } from '../../analysis/conversations';
import { psnDiff } from '../../base/psn';

export interface CapturedPacket {
  /** 1-based frame number in the capture. */
  frame: number;
  timeNs: number;
  p: RocePacket;
  bytes: Uint8Array;
}

export interface RcConversation {
  requesterQpn: number;
  responderQpn: number;
  requesterIp: string;
  responderIp: string;
  requesterMac: number;
  responderMac: number;
  requests: CapturedPacket[];
  responses: CapturedPacket[];
  /** PSN of the first request seen (the responder's starting ePSN for the replay). */
  firstRequestPsn: number;
  /** Path MTU inferred from the payloads (the largest FIRST/MIDDLE payload, else the smallest MTU that fits), or the CM REQ's. */
  pathMtuBytes: number;
  /** Set when the capture holds the CM REQ and REP that established the connection (cm-setup.ts). */
  cm?: { startPsn: number; frames: [number, number] };
}

interface Stream {
  src: string;
  dst: string;
  destQp: number;
  srcMac: number;
  dstMac: number;
  /** UDP source port of the stream's first packet. */
  sport: number | null;
  packets: CapturedPacket[];
  psns: Set<number>;
  /** Highest PSN so far. */
  high: number;
  /** The request PSNs as offsets from the first one, sorted (built when responses are paired). */
  sorted: Int32Array | null;
}

function key(src: string, dst: string, qp: number): string {
  return `${src}>${dst}#${qp}`;
}

/** Groups the RC packets of a capture into conversations (one per requester -> responder direction). */
export function findRcConversations(packets: readonly CapturedPacket[], addr: (p: RocePacket) => { src: string; dst: string }): RcConversation[] {
  // The current stream per (source, destination, QPN) and every stream made, in order.
  const reqOpen = new Map<string, Stream>();
  const respOpen = new Map<string, Stream>();
  const reqs: Stream[] = [];
  const resps: Stream[] = [];
  for (const c of packets) {
    const b = c.p.bth;
    const info = c.p.info;
    if (b === null || info === undefined || info.transport !== Transport.RC) continue;
    const { src, dst } = addr(c.p);
    const isReq = (info.flags & OpFlag.REQ) !== 0;
    if (!isReq && (info.flags & OpFlag.RESP) === 0) continue;
    const open = isReq ? reqOpen : respOpen;
    const k = key(src, dst, b.destQp);
    let s = open.get(k);
    const sport = c.p.udp?.srcPort ?? null;
    if (s !== undefined) {
      const d = psnDiff(b.psn, s.high);
      if (Math.abs(d) > CONNECTION_PSN_WINDOW)
        s = undefined; // a new connection on a reused QPN
      // A QP keeps its UDP source port (rxe derives it from the QPN pair when the QP connects), so
      // a new port on a PSN that neither repeats nor continues the stream is a new connection whose
      // start PSN happens to lie near the old one's.
      else if (sport !== null && s.sport !== null && sport !== s.sport && d !== 0 && d !== 1) s = undefined;
    }
    if (s === undefined) {
      s = { src, dst, destQp: b.destQp, srcMac: c.p.eth?.src ?? 0, dstMac: c.p.eth?.dst ?? 0, sport, packets: [], psns: new Set(), high: b.psn, sorted: null };
      open.set(k, s);
      (isReq ? reqs : resps).push(s);
    }
    s.packets.push(c);
    s.psns.add(b.psn);
    if (psnDiff(b.psn, s.high) > 0) s.high = b.psn;
  }
  // Each response belongs to one request stream (ownerOf): a response stream can hold two
  // connections when a reused QPN's new start PSN falls near the old one (rc_pingpong seeds its
  // PSNs from pid and time, so back-to-back runs start close).
  const owned = new Map<Stream, Map<Stream, CapturedPacket[]>>();
  for (const s of resps) {
    const candidates = reqs.filter((q) => q.src === s.dst && q.dst === s.src);
    for (const c of s.packets) {
      const o = ownerOf(c, candidates);
      if (o === null) continue;
      let byStream = owned.get(o);
      if (byStream === undefined) owned.set(o, (byStream = new Map()));
      let list = byStream.get(s);
      if (list === undefined) byStream.set(s, (list = []));
      list.push(c);
    }
  }
  const out: RcConversation[] = [];
  for (const r of reqs) {
    // The responses come back the other way; of those streams, take the one that answers most of these requests.
    let best: Stream | null = null;
    let responses: CapturedPacket[] = [];
    for (const [s, list] of owned.get(r) ?? []) {
      if (list.length > responses.length) {
        best = s;
        responses = list;
      }
    }
    const first = r.packets[0];
    if (first === undefined || first.p.bth === null) continue;
    out.push({
      requesterQpn: best?.destQp ?? 0,
      responderQpn: r.destQp,
      requesterIp: r.src,
      responderIp: r.dst,
      requesterMac: r.srcMac,
      responderMac: r.dstMac,
      requests: r.packets,
      responses,
      firstRequestPsn: first.p.bth.psn,
      pathMtuBytes: inferMtu([...r.packets, ...responses]),
    });
  }
  return out;
}

/**
 * The request stream a response answers. Streams to the same (address, QPN) follow one another in
 * time (each is one connection on a reused QPN), so of those only the latest that started before
 * the response and reaches its PSN may own it: an older connection on the QPN is over. Between
 * streams to different QPNs the PSN decides: the one holding the response's PSN, else the one with
 * a request closest below it (READ responses and NAKs carry PSNs past the requests'), within
 * RESPONSE_PSN_REACH; a tie goes to the one that started last.
 *
 * Before the first rule, a READ response of a later connection whose PSNs happened to fall inside
 * an earlier connection's range on the same QPN went to the earlier one, whose request held that
 * very PSN (a fresh clone's rxe interop run, 2026-11-26: start PSNs 6 400 apart on QPN 0x11).
 */
function ownerOf(c: CapturedPacket, candidates: readonly Stream[]): Stream | null {
  const psn = c.p.bth?.psn;
  if (psn === undefined) return null;
  // Per (address, QPN): the latest stream that started before the response and reaches its PSN.
  const current = new Map<string, { r: Stream; d: number; start: number; fresh: boolean }>();
  for (const r of candidates) {
    const start = r.packets[0]?.timeNs ?? Infinity;
    if (start > c.timeNs) continue;
    const k = key(r.src, r.dst, r.destQp);
    const held = current.get(k);
    if (held !== undefined && held.start > start) continue;
    const d = distanceBelow(r, psn);
    if (d === Infinity) continue;
    const end = r.packets[r.packets.length - 1]?.timeNs ?? start;
    current.set(k, { r, d, start, fresh: c.timeNs - end <= STALE_STREAM_NS });
  }
  // A stream that was still sending around the response's time wins over one long over: two
  // connections of one address pair may use the same PSNs (perftest seeds its start PSN from its
  // pid and the time, so runs in one guest boot can start close), and a READ response's PSN lies
  // past its request's, where an older WRITE stream may have sent that very PSN.
  let best: Stream | null = null;
  let bestD = Infinity;
  let bestStart = -Infinity;
  let bestFresh = false;
  for (const { r, d, start, fresh } of current.values()) {
    if ((fresh && !bestFresh) || (fresh === bestFresh && (d < bestD || (d === bestD && start >= bestStart)))) {
      best = r;
      bestD = d;
      bestStart = start;
      bestFresh = fresh;
    }
  }
  return best;
}

/**
 * How long after a request stream's last packet a response may still be its own: far beyond any
 * responder's processing and round trip (an RNR wait is at most 655 ms, and a requester that waits
 * for its answer longer resends, which extends the stream).
 */
const STALE_STREAM_NS = 5e9;

/** READ responses carry PSNs after their request's own: how far past a request a response PSN may lie. */
const RESPONSE_PSN_REACH = 4096;

/**
 * How far `psn` is past the closest request PSN at or below it (0 for a request's own PSN; Infinity
 * beyond RESPONSE_PSN_REACH). A binary search over the stream's PSNs as offsets from its first one
 * (they lie within CONNECTION_PSN_WINDOW of each other, so the offsets keep their order across the
 * 24-bit wrap): logarithmic per response, where a scan made large READ captures quadratic.
 */
function distanceBelow(r: Stream, psn: number): number {
  if (r.psns.has(psn)) return 0;
  const first = r.packets[0]?.p.bth?.psn ?? 0;
  let sorted = r.sorted;
  if (sorted === null) {
    sorted = Int32Array.from(r.psns, (q) => psnDiff(q, first)).sort();
    r.sorted = sorted;
  }
  const rel = psnDiff(psn, first);
  // The last offset at or below rel.
  let lo = 0;
  let hi = sorted.length - 1;
  let at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) <= rel) {
      at = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  if (at < 0) return Infinity;
  const d = rel - (sorted[at] as number);
  return d < RESPONSE_PSN_REACH ? d : Infinity;
}

export function inferMtu(packets: readonly CapturedPacket[]): number {
  let full = 0;
  let largest = 0;
  for (const c of packets) {
    const info = c.p.info;
    if (info === undefined) continue;
    largest = Math.max(largest, c.p.payloadLength);
    if (info.payload === 'full') full = Math.max(full, c.p.payloadLength);
  }
  if (full > 0) return full;
  for (const m of [256, 512, 1024, 2048, 4096]) if (largest <= m) return m;
  return 4096;
}
