/**
 * Fuzz target: `roce replay`'s front end on a whole capture: the frames made whole for the stack
 * (capturedPackets), the RC conversations found in them, the CM set-up applied, the ones the stack
 * cannot play set aside, and each replayable conversation played in both roles (fast timing,
 * small regions). The replay may report differences; it must never throw, not even a typed error:
 * `roce replay` catches nothing there, so any exception ends the command as an internal error.
 * The capture is read as `roce replay` reads a file: a Buffer over memory of its own, as
 * fs.readFileSync gives (a Buffer's slice() shares its memory where a Uint8Array's copies, and a
 * replay that took one for the other once wrote a key over the captured frame's IP header), and
 * replay must leave those bytes as they were. Its seeds (fuzz/seed-corpus.ts) include the stack's own
 * conversations of legal edge cases (fuzz/edge-conversations.ts): zero-length RDMA with VA 0 and
 * R_Key 0, zero-length SENDs, PSNs that wrap, messages at path MTU boundaries.
 */
import { readCapture } from '../../packets/pcap';
import { packetAddresses } from '../../packets/decode';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { applyCmSetup, cmConnections } from '../../apps/replay/cm-setup';
import { splitReplayable } from '../../apps/replay/replayable';
import { replayResponder } from '../../apps/replay/responder-replay';
import { replayRequester } from '../../apps/replay/requester-replay';

export function fuzz(data: Uint8Array): void {
  const file = Buffer.alloc(data.length);
  file.set(data);
  const cap = readCapture(file);
  for (const ignoreIcrc of [false, true]) {
    const { packets } = capturedPackets(cap, { ignoreIcrc });
    const convs = findRcConversations(packets, packetAddresses);
    applyCmSetup(convs, cmConnections(packets));
    const { replayable } = splitReplayable(convs);
    for (const c of replayable.slice(0, 2)) {
      replayResponder(c, { timing: 'fast', maxRegionBytes: 1 << 20 });
      replayRequester(c, { timing: 'fast', maxRegionBytes: 1 << 20 });
    }
  }
  if (!file.equals(data)) throw new Error('replay changed the captured bytes it was given');
}
