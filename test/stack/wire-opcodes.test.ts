/** The opcode each request and READ response packet carries, checked against the opcode table. */
import { OPCODES, OpFlag } from '../../packets/opcodes';
import { QpType } from '../../stack/qp-type-and-state';
import { WrOpcode } from '../../stack/work-request-codes';
import { readResponseOpcode, requestOpcode, transportOf } from '../../stack/wire-opcodes';

const PLACES = [
  { first: true, last: false },
  { first: false, last: false },
  { first: false, last: true },
  { first: true, last: true },
] as const;

/** [WR opcode, FIRST, MIDDLE, LAST, ONLY] on an RC QP (IBTA vol. 1 table 35). */
const RC_EXPECTED: readonly (readonly [number, number, number, number, number])[] = [
  [WrOpcode.SEND, 0x00, 0x01, 0x02, 0x04],
  [WrOpcode.SEND_WITH_IMM, 0x00, 0x01, 0x03, 0x05],
  [WrOpcode.SEND_WITH_INV, 0x00, 0x01, 0x16, 0x17],
  [WrOpcode.RDMA_WRITE, 0x06, 0x07, 0x08, 0x0a],
  [WrOpcode.RDMA_WRITE_WITH_IMM, 0x06, 0x07, 0x09, 0x0b],
  [WrOpcode.RDMA_READ, 0x0c, 0x0c, 0x0c, 0x0c],
  [WrOpcode.ATOMIC_CMP_AND_SWP, 0x13, 0x13, 0x13, 0x13],
  [WrOpcode.ATOMIC_FETCH_AND_ADD, 0x14, 0x14, 0x14, 0x14],
];

test.each(RC_EXPECTED)('RC work request %i: FIRST, MIDDLE, LAST, ONLY', (wr, ...want) => {
  expect(PLACES.map((p) => requestOpcode(QpType.RC, wr as WrOpcode, p.first, p.last))).toEqual(want);
});

test('UC takes the RC numbers plus 0x20 for SEND and WRITE, and has no invalidate, READ or atomics', () => {
  for (const [wr, ...rc] of RC_EXPECTED) {
    const uc = PLACES.map((p) => requestOpcode(QpType.UC, wr as WrOpcode, p.first, p.last));
    const carried = wr === WrOpcode.SEND || wr === WrOpcode.SEND_WITH_IMM || wr === WrOpcode.RDMA_WRITE || wr === WrOpcode.RDMA_WRITE_WITH_IMM;
    expect(uc).toEqual(carried ? rc.map((o) => o | 0x20) : [-1, -1, -1, -1]);
  }
});

test('UD sends one packet per message: SEND ONLY, with or without immediate', () => {
  expect(requestOpcode(QpType.UD, WrOpcode.SEND, true, true)).toBe(0x64);
  expect(requestOpcode(QpType.UD, WrOpcode.SEND_WITH_IMM, true, true)).toBe(0x65);
  expect(requestOpcode(QpType.UD, WrOpcode.SEND, true, false)).toBe(-1);
  expect(requestOpcode(QpType.UD, WrOpcode.RDMA_WRITE, true, true)).toBe(-1);
});

test('every opcode chosen is a request of the QP type`s transport that starts and ends where the packet does', () => {
  for (const type of Object.values(QpType)) {
    for (const wr of Object.values(WrOpcode)) {
      for (const p of PLACES) {
        const op = requestOpcode(type, wr, p.first, p.last);
        if (op < 0) continue;
        const info = OPCODES[op]!;
        expect(info.transport).toBe(transportOf(type));
        expect(info.flags & OpFlag.REQ).toBe(OpFlag.REQ);
        if ((info.flags & (OpFlag.SEND | OpFlag.WRITE)) !== 0) {
          expect((info.flags & OpFlag.START) !== 0).toBe(p.first);
          expect((info.flags & OpFlag.END) !== 0).toBe(p.last);
        }
      }
    }
  }
});

test('READ responses: FIRST, MIDDLE, LAST, ONLY', () => {
  expect(PLACES.map((p) => readResponseOpcode(p.first, p.last))).toEqual([0x0d, 0x0e, 0x0f, 0x10]);
});
