/**
 * A capture at the responder's host that starts with a reordered pair in one receive burst: the
 * request after the expected one arrives first and draws a PSN sequence error NAK naming the
 * expected PSN (IBTA §9.7.5.2.2), but the expected request is captured before that NAK and the
 * real responder answers it. Replay starts at that copy, the one the real responder took, and
 * finds no capture gap: the capture lost nothing. Removing every copy of a later request does
 * make one.
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
