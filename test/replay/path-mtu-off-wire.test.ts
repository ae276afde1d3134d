/**
 * A responder that refused a FIRST packet with NAK invalid request had another path MTU than its
 * requester (C9-29: a FIRST or MIDDLE packet carries exactly the requester's), which the capture
 * does not show: replay, which gives the stack the requester's path MTU, reports it unverifiable.
 * A refusal of an ONLY packet stays the stack's to match.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { Opcode } from '../../packets/opcodes';
import { type Step, Syn, ack, capture, req } from '../analysis/frames';
import type { ReplaySummary } from '../../apps/replay/differences';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-pmtu-replay-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function replayResponder(name: string, steps: readonly Step[]): Promise<{ violations: number; kinds: string[] }> {
  const file = path.join(dir, name);
  fs.writeFileSync(file, capture(steps));
  const t = memoryOutput();
  await run(['replay', file, '--role', 'responder', '--json'], t);
  const json = JSON.parse(t.out) as { violations: number; conversations: ReplaySummary[] };
  return { violations: json.violations, kinds: json.conversations.flatMap((c) => c.differences.map((d) => `${d.class} ${d.kind}`)) };
}

test('a 1024-byte SEND_FIRST refused with NAK invalid request (ibv_rc_pingpong at 1024 against an end at 4096): unverifiable pathMtuOffWire, no violation', async () => {
  const r = await replayResponder('first-refused.pcap', [req(0, Opcode.RC_SEND_FIRST, 100, { len: 1024, ackReq: false }), ack(5, 100, Syn.NAK_INV)]);
  expect(r).toEqual({ violations: 0, kinds: ['unverifiable pathMtuOffWire'] });
});

test('the same NAK to a SEND_ONLY the stack takes is still a missing NAK', async () => {
  const r = await replayResponder('only-refused.pcap', [req(0, Opcode.RC_SEND_ONLY, 100, { len: 512 }), ack(5, 100, Syn.NAK_INV)]);
  expect(r.violations).toBe(1);
  expect(r.kinds).toContain('violation missingNak');
});
