/**
 * Issue 15 finding 4: every RoCE v2 frame the stack drops for its form is counted, once, as
 * `rcvd_malformed` (or `rcvd_icrc_err` when the ICRC caught the damage), and gets no answer.
 * Before, a broken IPv4 header (IHL below 5, a total length shorter than the header) made the
 * frame "not RoCE" and uncounted.
 */
import { scriptedPeer, op, pattern, type ScriptedPeer } from '../support/scripted-peer';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { writeIcrc, icrcV2 } from '../../packets/icrc';

const ETH = 14;
const IP = ETH;
const UDP = ETH + 20;
const BTH = UDP + 8;

function dropped(h: ScriptedPeer): number {
  const c = h.dev.totalCounters();
  return c.rcvd_malformed + c.rcvd_icrc_err;
}

/** `f` with bytes changed and the ICRC made valid again (so only the change is wrong). */
function edit(f: Uint8Array, change: (g: Uint8Array) => void, icrc = true): Uint8Array {
  const g = f.slice();
  change(g);
  if (icrc) writeIcrc(g, g.length - 4, icrcV2(g, ETH, g.length - 4));
  return g;
}
const set16 = (g: Uint8Array, at: number, v: number): void => {
  g[at] = v >> 8;
  g[at + 1] = v & 0xff;
};

type Case = [string, (h: ScriptedPeer, f: Uint8Array) => Uint8Array];
const CASES: Case[] = [
  ['an IPv4 IHL of 4', (_h, f) => edit(f, (g) => (g[IP] = 0x44), false)],
  ['an IPv4 IHL of 0', (_h, f) => edit(f, (g) => (g[IP] = 0x40), false)],
  ['an IPv4 total length shorter than its header', (_h, f) => edit(f, (g) => set16(g, IP + 2, 12), false)],
  ['a UDP length below 8', (_h, f) => edit(f, (g) => set16(g, UDP + 4, 4), false)],
  ['a UDP length past the IP packet', (_h, f) => edit(f, (g) => set16(g, UDP + 4, f.length), false)],
  ['a frame cut after its UDP header', (_h, f) => f.slice(0, BTH)],
  ['a frame cut inside its BTH', (_h, f) => f.slice(0, BTH + 6)],
  ['a frame cut before its ICRC ends', (_h, f) => f.slice(0, f.length - 3)],
  ['a reserved opcode (0x1f, RC)', (_h, f) => edit(f, (g) => (g[BTH] = 0x1f))],
  ['a transport header version of 1 (rxe hdr_check drops TVer != 0)', (_h, f) => edit(f, (g) => (g[BTH + 1] = ((g[BTH + 1] ?? 0) & 0xf0) | 1))],
  [
    'a pad count larger than the payload',
    (h) => edit(h.frame({ bth: { opcode: op('RC_SEND_ONLY'), psn: h.rqPsn, ackReq: true } }), (g) => (g[BTH + 1] = ((g[BTH + 1] ?? 0) & 0xcf) | 0x30)),
  ],
  ['a UC opcode on an RC QP', (h) => h.frame({ bth: { opcode: op('UC_SEND_ONLY'), psn: h.rqPsn, ackReq: true }, payload: pattern(4) })],
  ['a bad ICRC', (_h, f) => edit(f, (g) => (g[g.length - 1] = (g[g.length - 1] ?? 0) ^ 1), false)],
  ['a payload bit flipped in flight', (_h, f) => edit(f, (g) => (g[BTH + 14] = (g[BTH + 14] ?? 0) ^ 0x40), false)],
];

describe('every RoCE frame dropped for its form is counted once and answered by nothing', () => {
  test.each(CASES)('%s', (_name, make) => {
    const h = scriptedPeer();
    h.postRecv(1, 0, 64);
    const f = h.frame({ bth: { opcode: op('RC_SEND_ONLY'), psn: h.rqPsn, ackReq: true }, payload: pattern(16) });
    const bad = make(h, f);
    const before = dropped(h);
    expect(() => h.injectFrames(bad)).not.toThrow();
    expect(dropped(h) - before).toBe(1);
    expect(h.sent()).toEqual([]);
    expect(h.completions()).toEqual([]);
    expect(h.qp.state).toBe(QpState.RTS);
    // The QP still takes the good frame after it.
    h.injectFrames(f);
    expect(h.sent().map((s) => s.op)).toEqual(['RC_ACKNOWLEDGE']);
    expect(dropped(h) - before).toBe(1);
  });

  test('on a UD QP: RC and UC opcodes are dropped and counted (rxe check_type_state)', () => {
    const h = scriptedPeer({ qpType: QpType.UD });
    h.postRecv(1, 0, 256);
    const before = dropped(h);
    h.inject(
      { bth: { opcode: op('RC_SEND_ONLY'), psn: 0, ackReq: true }, payload: pattern(4) },
      { bth: { opcode: op('UC_SEND_ONLY'), psn: 0 }, payload: pattern(4) },
    );
    expect(dropped(h) - before).toBe(2);
    expect(h.sent()).toEqual([]);
    expect(h.completions()).toEqual([]);
  });
});
