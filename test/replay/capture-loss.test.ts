/**
 * Replay of captures that lost frames in a regular pattern (every k-th record, at every offset), the
 * way a capture tool under load loses them: requests, answers, resends, and the requests that drew a
 * NAK. As responder the stack cannot be judged on requests it was never given, nor on a NAK whose
 * cause the capture lost; as requester, not on requests it never sent because it waited for an
 * answer the capture lost. None of this is a violation (docs/conformance.md, Replay). And a
 * difference on what the stack was given is still one.
 */
import { packetAddresses } from '../../packets/decode';
import { readCapture } from '../../packets/pcap';
import { Opcode } from '../../packets/opcodes';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { replayResponder } from '../../apps/replay/responder-replay';
import { replayRequester } from '../../apps/replay/requester-replay';
import { DiffClass } from '../../apps/replay/differences';
import { dropRecords, roceFrames } from '../support/degrade';
import { everyKth, ownCapture } from '../support/own-capture';

function replayAll(file: Uint8Array, ignoreIcrc = false, role: 'responder' | 'requester' = 'responder'): ReturnType<typeof replayResponder>[] {
  const { packets } = capturedPackets(readCapture(file), { ignoreIcrc });
  return findRcConversations(packets, packetAddresses).map((conv) => (role === 'responder' ? replayResponder : replayRequester)(conv, { timing: 'fast' }));
}

test.each(['responder', 'requester'] as const)(
  'as %s, every k-th record lost (k 2..16, every offset up to 4): no violation, and the losses are named',
  (role) => {
    const kinds = new Map<string, number>();
    const violations: string[] = [];
    for (const seed of [1, 2, 3, 4]) {
      const whole = ownCapture(seed, role === 'responder' ? 'host-b' : 'host-a');
      const n = roceFrames(whole).length;
      for (let k = 2; k <= 16; k++) {
        for (let off = 0; off < Math.min(k, 4); off++) {
          for (const s of replayAll(dropRecords(whole, everyKth(n, k, 1 + off)), false, role)) {
            for (const d of s.differences) {
              if (d.class === DiffClass.VIOLATION)
                violations.push(`seed ${seed}, every ${k}th from ${1 + off}: ${d.kind} PSN ${d.psn}: ${d.expected} / ${d.got}`);
              if (d.class === DiffClass.UNVERIFIABLE) kinds.set(d.kind, (kinds.get(d.kind) ?? 0) + 1);
            }
          }
        }
      }
    }
    expect(violations).toEqual([]);
    // The sweep does reach each way a loss is told apart from the stack's behaviour.
    for (const kind of role === 'responder' ? ['captureGap', 'requestNotFed', 'nakCause', 'nakNotCaptured'] : ['captureGap', 'answerLost'])
      expect({ kind, seen: (kinds.get(kind) ?? 0) > 0 }).toEqual({ kind, seen: true });
  },
);

test('a request the stack was given and refuses, where the real responder took it, is still a violation', () => {
  const whole = ownCapture(1);
  // A WRITE ONLY whose RETH DMA length no longer matches its payload: the stack NAKs it as an invalid
  // request (IBTA §9.7.4.1.5: the length must match for an ONLY packet), the real responder ACKed it.
  const frames = roceFrames(whole);
  const target = frames.find((x) => x.p.bth?.opcode === Opcode.RC_RDMA_WRITE_ONLY && x.p.reth !== null && x.p.ipv4 !== null);
  expect(target).toBeDefined();
  if (target === undefined || target.p.reth === null) return;
  const records = readCapture(whole);
  const rec = records.records[target.n - 1];
  expect(rec).toBeDefined();
  if (rec === undefined) return;
  // RETH after Ethernet (14), IPv4 (20), UDP (8) and BTH (12): VA 8, R_Key 4, DMA length 4.
  new DataView(rec.data.buffer, rec.data.byteOffset).setUint32(14 + 20 + 8 + 12 + 12, target.p.reth.dmaLength + 1);
  const mutated = dropRecords(whole, new Set()); // rewritten with the changed record
  const all = replayAll(mutated, true).flatMap((s) => s.differences.filter((d) => d.class === DiffClass.VIOLATION).map((d) => d.kind));
  expect(all.length).toBeGreaterThan(0);
  expect(all).toContain('missingAck');
});

test('as requester, a stall on an answer the capture does hold is still a violation', () => {
  const whole = ownCapture(1, 'host-a');
  // An ACK turned into a NAK (remote access error, AETH syndrome 0x62): the stack's QP goes to the
  // error state and never sends the requests after it, although the capture holds every answer.
  const target = roceFrames(whole).find((x) => x.p.bth?.opcode === Opcode.RC_ACKNOWLEDGE && x.p.aeth !== null && x.p.aeth.syndrome < 0x20 && x.p.ipv4 !== null);
  expect(target).toBeDefined();
  const rec = target === undefined ? undefined : readCapture(whole).records[target.n - 1];
  expect(rec).toBeDefined();
  if (rec === undefined) return;
  rec.data[14 + 20 + 8 + 12] = 0x62; // the AETH syndrome, after Ethernet, IPv4, UDP and BTH
  const kinds = replayAll(whole, true, 'requester').flatMap((s) => s.differences.filter((d) => d.class === DiffClass.VIOLATION).map((d) => d.kind));
  expect(kinds).toContain('missingRequest');
});
