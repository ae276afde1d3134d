/**
 * A capture at the responder's host that starts with a reordered pair in one receive burst: the
 * request after the expected one arrives first and draws a PSN sequence error NAK naming the
 * expected PSN (IBTA §9.7.5.2.2), but the expected request is captured before that NAK and the
 * real responder answers it. Replay starts at that copy, the one the real responder took, and
 * finds no capture gap: the capture lost nothing. Removing every copy of a later request does
 * make one. The same pair inside the conversation: the real responder's later answers past the
 * expected PSN show it took the copy captured before the NAK, since the request captured after
 * that copy is behind another only because the network reordered it (its first copy), not because
 * the requester went back.
 *
 * @group unit
 */
import { packetAddresses } from '../../packets/decode';
import { readCapture } from '../../packets/pcap';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations, type RcConversation } from '../../apps/replay/conversation';
import { replayResponder } from '../../apps/replay/responder-replay';
import { DiffClass } from '../../apps/replay/differences';
import { runCase } from '../../apps/sweep/case-run';
import { parseCase } from '../../apps/sweep/sweep-case';
import { dropRecords } from '../support/degrade';

// Sweep case 40 of seed 1: one of its QPs' capture starts with PSN n+1 before PSN n.
const CASE = 'seed=29015 loss=1% burst=off reorder=5%/2 dup=0% mtu=256 qps=6 mix=atomic bytes=32K at=host-b';

function conversations(file: Uint8Array): RcConversation[] {
  return findRcConversations(capturedPackets(readCapture(file)).packets, packetAddresses);
}

/** The conversation whose first two captured requests are out of order, with the first answer a sequence error NAK. */
function burstAtStart(convs: readonly RcConversation[]): RcConversation | undefined {
  return convs.find((c) => {
    const [a, b] = c.requests;
    const r = c.responses[0];
    return (
      a?.p.bth != null &&
      b?.p.bth != null &&
      r?.p.bth != null &&
      b.p.bth.psn === ((a.p.bth.psn - 1) & 0xffffff) &&
      r.p.bth.psn === b.p.bth.psn &&
      r.frame > b.frame
    );
  });
}

const gaps = (conv: RcConversation): { psn: number | null; lastPsn?: number }[] =>
  replayResponder(conv, { timing: 'fast' }).differences.filter((d) => d.kind === 'captureGap');

test('a capture starting with the expected request and a reordered one in one burst has no capture gap; a request removed from it does', () => {
  const file = runCase(parseCase(CASE)).capture;
  const conv = burstAtStart(conversations(file));
  expect(conv).toBeDefined();
  if (conv === undefined) return;
  expect(gaps(conv)).toEqual([]);
  expect(replayResponder(conv, { timing: 'fast' }).differences.filter((d) => d.class === DiffClass.VIOLATION)).toEqual([]);

  // Every copy of the third PSN of the conversation removed: the real responder's answers show it
  // got that request, the capture no longer holds it.
  const start = conv.requests[1]?.p.bth?.psn ?? -1;
  const lost = (start + 2) & 0xffffff;
  const frames = new Set(conv.requests.filter((c) => c.p.bth?.psn === lost).map((c) => c.frame));
  expect(frames.size).toBeGreaterThan(0);
  const cut = burstAtStart(conversations(dropRecords(file, frames)));
  expect(cut).toBeDefined();
  if (cut === undefined) return;
  const found = gaps(cut);
  expect(found.some((g) => g.psn === lost)).toBe(true);
});

// Sweep case 13914 of seed 1: PSN n+1 (a SEND MIDDLE) then n (its FIRST) in one burst, mid-conversation.
const MID = 'seed=212984 loss=0.5% burst=0.2%x4 reorder=5%/4 dup=0% mtu=512 qps=1 mix=mix bytes=32K at=host-b';

test('the same pair inside a conversation, then another reordered pair: no capture gap and no violation; a request removed makes a gap', () => {
  const file = runCase(parseCase(MID)).capture;
  const convs = conversations(file);
  const all = convs.flatMap((c) => replayResponder(c, { timing: 'fast' }).differences);
  expect(all.filter((d) => d.kind === 'captureGap' || d.class === DiffClass.VIOLATION)).toEqual([]);

  // Every copy of a PSN after the pair removed: still a capture gap that covers it.
  const conv = convs.find((c) => c.requests.some((x, i) => x.p.bth != null && c.requests[i + 1]?.p.bth?.psn === ((x.p.bth.psn - 1) & 0xffffff)));
  expect(conv).toBeDefined();
  if (conv === undefined) return;
  const i = conv.requests.findIndex((x, k) => x.p.bth != null && conv.requests[k + 1]?.p.bth?.psn === ((x.p.bth.psn - 1) & 0xffffff));
  const lost = ((conv.requests[i]?.p.bth?.psn ?? 0) + 3) & 0xffffff;
  const frames = new Set(conv.requests.filter((c) => c.p.bth?.psn === lost).map((c) => c.frame));
  expect(frames.size).toBeGreaterThan(0);
  const cut = conversations(dropRecords(file, frames)).flatMap((c) => gaps(c));
  expect(cut.some((g) => g.psn !== null && ((lost - g.psn) & 0xffffff) <= (g.lastPsn ?? g.psn) - g.psn && ((lost - g.psn) & 0xffffff) < 0x800000)).toBe(true);
});
