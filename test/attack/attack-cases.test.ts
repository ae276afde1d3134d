/**
 * `roce attack`'s frames: every case decodes as the frame it claims to be (opcode, headers, PSN,
 * ICRC good except for bad-icrc, reserved opcode rejected), and the stack's responder reacts to
 * each as docs/conformance.md says ("Hostile frames").
 */
import { ATTACK_CASES, AttackCase, type AttackTarget, craftFrame, reservedRcOpcodes } from '../../apps/attack/attack-cases';
import { decodeFrame } from '../../packets/decode';
import { OPCODES, Opcode } from '../../packets/opcodes';
import { runAttack } from '../../apps/attack/attack-run';

const target: AttackTarget = {
  srcMac: 0x020000000009,
  dstMac: 0x020000000002,
  srcIp: '198.18.0.9',
  dstIp: '198.18.0.2',
  qpn: 0x11,
  psn: 1000,
  window: 4,
  rkey: null,
  va: null,
  udpSport: 0xc000,
};

test('every case builds a RoCE v2 frame for the target QP with a valid ICRC (bad-icrc: a wrong one; reserved-opcode: an opcode the table lacks)', () => {
  for (const c of ATTACK_CASES) {
    const f = craftFrame(c, target, 5);
    const d = decodeFrame(f);
    expect(d.roce).toBe(true);
    if (!d.roce) continue;
    expect(d.bth?.destQp).toBe(0x11);
    if (c === AttackCase.RESERVED_OPCODE) {
      expect(reservedRcOpcodes()).toContain(d.bth?.opcode);
      expect(OPCODES[d.bth?.opcode ?? 0]).toBeUndefined();
      continue;
    }
    expect(d.icrcOk).toBe(c !== AttackCase.BAD_ICRC);
  }
  const op = (c: AttackCase): number | undefined => {
    const d = decodeFrame(craftFrame(c, target, 0));
    return d.roce ? d.bth?.opcode : undefined;
  };
  expect(op(AttackCase.READ_2G)).toBe(Opcode.RC_RDMA_READ_REQUEST);
  expect(op(AttackCase.UNALIGNED_ATOMIC)).toBe(Opcode.RC_FETCH_ADD);
  expect(op(AttackCase.GHOST_ACK)).toBe(Opcode.RC_ACKNOWLEDGE);
  expect(op(AttackCase.CNP)).toBe(Opcode.CNP);
});

test('PSNs: frame i of a case goes to psn + (i mod window); duplicates behind it; psn-outside 2^22 ahead', () => {
  const psnOf = (c: AttackCase, i: number): number | undefined => {
    const d = decodeFrame(craftFrame(c, target, i));
    return d.roce ? d.bth?.psn : undefined;
  };
  expect([0, 1, 2, 3, 4].map((i) => psnOf(AttackCase.WRONG_RKEY, i))).toEqual([1000, 1001, 1002, 1003, 1000]);
  expect([0, 1].map((i) => psnOf(AttackCase.DUPLICATE_PSN, i))).toEqual([999, 998]);
  expect(psnOf(AttackCase.PSN_OUTSIDE, 0)).toBe(1000 + (1 << 22));
});

test('a mixed flood counts the frames sent per case, the cases in turn', async () => {
  const sent: Uint8Array[] = [];
  const s = await runAttack({ txBurst: (f) => (sent.push(...f), f.length), rxBurst: () => [] }, target, {
    cases: [AttackCase.WRONG_RKEY, AttackCase.GHOST_NAK, AttackCase.CNP],
    count: 100,
    ratePps: null,
    follow: false,
    learnMs: 0,
  });
  expect(s.frames).toBe(100);
  expect(sent).toHaveLength(100);
  expect(s.perCase).toEqual({ 'wrong-rkey': 34, 'ghost-nak': 33, cnp: 33 });
});
