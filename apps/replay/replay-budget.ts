/**
 * What replaying a conversation costs, known before anything is built: the requester replay fills
 * every request PSN the capture lost (a zero-length WRITE between messages, a path-MTU packet of
 * zeros inside one) and gives each READ a local buffer of its DMA length. A damaged or hostile
 * capture (two requests 2^23 PSNs apart, a READ of 2^31 bytes) would make that millions of work
 * requests or gigabytes of memory: found by fuzzing the replay front end (a 14 KB capture took
 * seconds). Past these limits the conversation is reported as not replayable, with the figures.
 */
import { psnDiff } from '../../base/psn';
import { OpFlag } from '../../packets/opcodes';
import type { RcConversation } from './conversation';

/** Request PSNs the replay may fill in for one conversation (capture loss of more is not replayed). */
export const MAX_FILLED_PSNS = 1 << 16;
/** Bytes of messages, fillers and READ buffers the replay may build (the responder's regions use the same default). */
export const DEFAULT_MAX_REPLAY_BYTES = 64 * 1024 * 1024;

export interface ReplayCost {
  /** Request PSNs between the first and the last captured request (or the CM's Starting PSN) that no captured request covers. */
  filledPsns: number;
  /** Bytes the requester replay would allocate: message payloads, fillers, READ buffers. */
  bytes: number;
}

export function replayCost(conv: RcConversation): ReplayCost {
  const mtu = conv.pathMtuBytes;
  const seen = new Set<number>();
  const psns: number[] = [];
  let bytes = 0;
  /** PSNs a READ's responses take (they are not requests, so not lost). */
  let readPsns = 0;
  for (const c of conv.requests) {
    const b = c.p.bth;
    if (b === null || seen.has(b.psn)) continue;
    seen.add(b.psn);
    psns.push(b.psn);
    bytes += c.p.payloadLength;
    if (c.p.reth !== null && ((c.p.info?.flags ?? 0) & OpFlag.READ) !== 0) {
      bytes += c.p.reth.dmaLength;
      readPsns += Math.max(1, Math.ceil(c.p.reth.dmaLength / mtu)) - 1;
    }
  }
  if (psns.length === 0) return { filledPsns: 0, bytes };
  const base = psns[0] as number;
  let lo = 0;
  let hi = 0;
  // A conversation the capture's CM exchange set up starts at the REP's or REQ's Starting PSN: the
  // PSNs from there to the first captured request are filled too (a REQ or REP whose PSN is far from
  // the requests would otherwise ask for millions of fillers).
  for (const p of conv.cm === undefined ? psns : [...psns, conv.cm.startPsn]) {
    const d = psnDiff(p, base);
    lo = Math.min(lo, d);
    hi = Math.max(hi, d);
  }
  const filledPsns = Math.max(0, hi - lo + 1 - psns.length - readPsns);
  return { filledPsns, bytes: bytes + filledPsns * mtu };
}

/** Why `conv` is too costly to replay, or null. */
export function replayCostProblem(conv: RcConversation, maxBytes: number = DEFAULT_MAX_REPLAY_BYTES): string | null {
  const c = replayCost(conv);
  if (c.filledPsns > MAX_FILLED_PSNS)
    return `the capture lost ${c.filledPsns} request PSNs between its first and last request; replay fills at most ${MAX_FILLED_PSNS}`;
  if (c.bytes > maxBytes) return `replaying it would build ${c.bytes} bytes of messages, fillers and READ buffers; the limit is ${maxBytes}`;
  return null;
}
