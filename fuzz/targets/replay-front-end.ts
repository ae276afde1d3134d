/**
 * Fuzz target: `roce replay`'s front end on a whole capture: the frames made whole for the stack
 * (capturedPackets), the RC conversations found in them, the CM set-up applied, the ones the stack
 * cannot play set aside, and each replayable conversation played in both roles (fast timing,
 * small regions). The replay may report differences; it must never throw anything untyped.
 */
import { readCapture } from '../../packets/pcap';
import { packetAddresses } from '../../packets/decode';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { applyCmSetup, cmConnections } from '../../apps/replay/cm-setup';
import { splitReplayable } from '../../apps/replay/replayable';
import { replayResponder } from '../../apps/replay/responder-replay';
import { replayRequester } from '../../apps/replay/requester-replay';
import { typedErrorsOnly } from '../typed-errors';

export function fuzz(data: Uint8Array): void {
  const cap = readCapture(data);
  for (const ignoreIcrc of [false, true]) {
    const { packets } = capturedPackets(cap, { ignoreIcrc });
    const convs = findRcConversations(packets, packetAddresses);
    applyCmSetup(convs, cmConnections(packets));
    const { replayable } = splitReplayable(convs);
    for (const c of replayable.slice(0, 2)) {
      typedErrorsOnly(() => void replayResponder(c, { timing: 'fast', maxRegionBytes: 1 << 20 }));
      typedErrorsOnly(() => void replayRequester(c, { timing: 'fast', maxRegionBytes: 1 << 20 }));
    }
  }
}
