/**
 * Responder replay of the engine's own captures where the real responder's answers are not in the
 * order of the requests they answer: answers to duplicates (a go-back-N resend of requests the
 * responder had taken, whose answers were lost on the way back), a NAK captured after the request
 * that follows the one that drew it (both arrived in one receive burst), and a late RNR NAK the
 * network held back behind the ACK of the resend. The stack is this engine, so it must answer as
 * the captured one did: no violation, and the answers named below reproduced exactly.
 *
 * @group unit
 */
import { packetAddresses } from '../../packets/decode';
import { readCapture } from '../../packets/pcap';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { replayResponder } from '../../apps/replay/responder-replay';
import type { ReplaySummary } from '../../apps/replay/differences';
import { runCase } from '../../apps/sweep/case-run';
import { parseCase } from '../../apps/sweep/sweep-case';
import { AllocationOrder } from '../../stack/allocation-order';

/** The responder replay (captured timing, as `roce replay` and the sweep run it) of the conversation to `qpn` in a sweep case's capture. */
function replayOf(line: string, qpn: number): ReplaySummary {
  // In rxe's sequential order, as the sweep ran these cases when they showed the finding: the QPNs named here.
  const { packets } = capturedPackets(readCapture(runCase(parseCase(line), undefined, AllocationOrder.SEQUENTIAL).capture));
  const conv = findRcConversations(packets, packetAddresses).find((c) => c.responderQpn === qpn);
  if (conv === undefined) throw new Error(`no conversation to QP 0x${qpn.toString(16)}`);
  return replayResponder(conv, { timing: 'captured' });
}

const violations = (s: ReplaySummary): string[] =>
  s.differences.filter((d) => d.class === 'violation').map((d) => `${d.kind} PSN ${d.psn}: ${d.expected} / ${d.got}`);

// A READ and a WRITE sent once, their answers lost, resent after the timeout: the responder answers
// the duplicates with the MSN of both messages (IBTA §9.7.5.1.2, C9-105). The first captured MSN
// is that of the duplicates, not a count of messages the capture lost.
test.each([
  ['seed=810606 loss=0% burst=1%x2 reorder=off dup=0% mtu=1024 qps=16 mix=mix bytes=32K at=host-a', 0x1e],
  ['seed=174594 loss=5% burst=1%x8 reorder=off dup=0% mtu=1024 qps=16 mix=mix bytes=32K at=host-a', 0x1f],
])('answers to duplicates carry the MSN of their moment: %s', (line, qpn) => {
  const s = replayOf(line, qpn);
  expect(violations(s)).toEqual([]);
  expect(s.matched).toBe(s.expected);
  expect(s.expected).toBeGreaterThanOrEqual(4);
});

test('a sequence NAK captured after the in-sequence request that follows the one that drew it does not turn that request away', () => {
  // At B's NIC: SEND LAST 14151198 and SEND FIRST 14151197 arrive in one burst, the NAK for the
  // first (expected 14151197) is captured after the second, which the responder took: its next NAK
  // names 14151198.
  const s = replayOf('seed=822463 loss=10% burst=0.5%x2 reorder=5%/1 dup=0% mtu=256 qps=2 mix=mix bytes=128K at=host-b', 0x12);
  expect(violations(s)).toEqual([]);
  expect(s.qpError).toBeNull();
  expect(s.matched).toBe(s.expected);
});

test('a late RNR NAK captured after the ACK that passes its PSN does not turn the resend away', () => {
  // At A's NIC: the RNR NAK for the first resend of SEND FIRST 6839650 arrives after the ACK of
  // 6839654 that answers the second resend: the responder took the second.
  const s = replayOf('seed=712146 loss=0.1% burst=off reorder=5%/3 dup=1% mtu=512 qps=3 mix=send-rnr bytes=128K at=host-a', 0x13);
  expect(violations(s)).toEqual([]);
  const ack = s.differences.filter((d) => d.psn === 6839654);
  expect(ack).toEqual([]);
});

test('a sequence NAK drawn by a request that overtook its predecessor on the wire does not turn the predecessor away', () => {
  // As sent: WRITE 13194471 then READ 13194472; the network swapped them, so the READ drew a NAK for
  // 13194471, and the WRITE, arriving next, was taken (the ACK of 13194471 after the NAK says so).
  const s = replayOf('seed=882398 loss=5% burst=off reorder=5%/3 dup=0% mtu=2048 qps=4 mix=mix bytes=64K at=sent', 0x12);
  expect(violations(s)).toEqual([]);
  expect(s.differences.filter((d) => d.kind === 'rnr')).toEqual([]);
});
