/** The opcode table: coverage, layout against rxe's table, and internal consistency. */
import { OPCODES, OpFlag, Hdr, PayloadRule, Opcode, Transport, opcodeByName, opcodeName, opcodeInfo } from '../../packets/opcodes';

const defined = OPCODES.filter((e) => e !== undefined);

test('256 frozen entries', () => {
  expect(OPCODES).toHaveLength(256);
  expect(Object.isFrozen(OPCODES)).toBe(true);
  for (const e of defined) {
    expect(Object.isFrozen(e)).toBe(true);
    expect(OPCODES[e!.opcode]).toBe(e);
  }
});

test('every RC, UC, UD and CNP opcode, plus FLUSH and ATOMIC WRITE', () => {
  const rc = [...Array(0x15).keys(), 0x16, 0x17, 0x1c, 0x1d];
  for (const op of rc) expect(opcodeInfo(op)?.transport).toBe('RC');
  for (const op of [0x15, 0x18, 0x19, 0x1a, 0x1b, 0x1e, 0x1f]) expect(opcodeInfo(op)).toBeUndefined();
  for (let op = 0x20; op <= 0x2b; op++) expect(opcodeInfo(op)?.transport).toBe('UC');
  expect(opcodeInfo(0x2c)).toBeUndefined();
  expect(opcodeInfo(0x64)?.name).toBe('UD_SEND_ONLY');
  expect(opcodeInfo(0x65)?.name).toBe('UD_SEND_ONLY_WITH_IMMEDIATE');
  expect(opcodeInfo(0x60)).toBeUndefined();
  expect(opcodeInfo(0x81)?.name).toBe('CNP');
  expect(opcodeInfo(0x1c)?.name).toBe('RC_FLUSH');
  expect(opcodeInfo(0x1d)?.name).toBe('RC_ATOMIC_WRITE');
  expect(opcodeName(0x1f)).toBe('UNKNOWN_0x1f');
  expect(opcodeByName('rc_rdma_write_only')?.opcode).toBe(0x0a);
});

// Header lengths (BTH + extension headers) as rxe_opcode.c gives them in `.length`.
test.each([
  ['RC_SEND_FIRST', 12],
  ['RC_SEND_LAST_WITH_IMMEDIATE', 16],
  ['RC_RDMA_WRITE_FIRST', 28],
  ['RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE', 32],
  ['RC_RDMA_READ_REQUEST', 28],
  ['RC_RDMA_READ_RESPONSE_FIRST', 16],
  ['RC_RDMA_READ_RESPONSE_MIDDLE', 12],
  ['RC_ACKNOWLEDGE', 16],
  ['RC_ATOMIC_ACKNOWLEDGE', 24],
  ['RC_COMPARE_SWAP', 40],
  ['RC_SEND_ONLY_WITH_INVALIDATE', 16],
  ['RC_FLUSH', 32],
  ['RC_ATOMIC_WRITE', 28],
  ['UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE', 32],
  ['RD_SEND_ONLY', 24],
  ['RD_ACKNOWLEDGE', 20],
  ['UD_SEND_ONLY', 20],
  ['UD_SEND_ONLY_WITH_IMMEDIATE', 24],
  ['XRC_RDMA_WRITE_FIRST', 32],
  ['XRC_RDMA_READ_RESPONSE_FIRST', 16],
  ['CNP', 28],
])('%s header length %d', (name, len) => {
  expect(opcodeByName(name)?.headerLen).toBe(len);
});

test('offsets follow the wire order', () => {
  expect(opcodeByName('RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE')?.offsets).toEqual({ RETH: 12, IMMDT: 28 });
  expect(opcodeByName('RC_FLUSH')?.offsets).toEqual({ FETH: 12, RETH: 16 });
  expect(opcodeByName('RC_ATOMIC_ACKNOWLEDGE')?.offsets).toEqual({ AETH: 12, ATOMIC_ACK_ETH: 16 });
  expect(opcodeByName('UD_SEND_ONLY_WITH_IMMEDIATE')?.offsets).toEqual({ DETH: 12, IMMDT: 20 });
  expect(opcodeByName('XRC_SEND_ONLY_WITH_INVALIDATE')?.offsets).toEqual({ XRCETH: 12, IETH: 16 });
  expect(opcodeByName('RD_COMPARE_SWAP')?.offsets).toEqual({ RDETH: 12, DETH: 16, ATOMIC_ETH: 24 });
});

test('flags are consistent with names and payload rules', () => {
  for (const e of defined) {
    if (e === undefined) continue;
    const f = e.flags;
    const kinds = [f & OpFlag.REQ, f & OpFlag.RESP, f & OpFlag.CNP].filter((x) => x !== 0);
    expect(kinds).toHaveLength(1);
    if (e.name.endsWith('_FIRST')) expect(e.payload).toBe(PayloadRule.FULL);
    if (e.name.endsWith('_MIDDLE')) expect(e.payload).toBe(PayloadRule.FULL);
    if (/_LAST(_|$)/.test(e.name)) expect(e.payload).toBe(PayloadRule.LAST);
    if (e.payload === PayloadRule.ONLY) expect(f & (OpFlag.START | OpFlag.END)).toBe(OpFlag.START | OpFlag.END);
    if (e.name.includes('IMMEDIATE')) expect(e.hdrs & Hdr.IMMDT).toBe(Hdr.IMMDT);
    if (e.name.includes('INVALIDATE')) expect(e.hdrs & Hdr.IETH).toBe(Hdr.IETH);
    if ((f & OpFlag.COMP) !== 0) expect(f & OpFlag.RWR).toBe(OpFlag.RWR);
    if (e.transport === 'UD') expect(e.hdrs & Hdr.DETH).toBe(Hdr.DETH);
    if (e.transport === 'XRC' && (f & OpFlag.REQ) !== 0) expect(e.hdrs & Hdr.XRCETH).toBe(Hdr.XRCETH);
  }
  expect(opcodeByName('RC_ATOMIC_WRITE')?.fixedPayload).toBe(8);
});

test('Opcode names every table entry with its number, and nothing else', () => {
  expect(Object.isFrozen(Opcode)).toBe(true);
  expect(Object.keys(Opcode)).toHaveLength(defined.length);
  for (const e of defined) expect(Opcode[e!.name]).toBe(e!.opcode);
  // Numbers from IBTA vol. 1 table 35 and annexes A14 / A17.
  expect(Opcode.RC_SEND_FIRST).toBe(0x00);
  expect(Opcode.RC_ACKNOWLEDGE).toBe(0x11);
  expect(Opcode.RC_COMPARE_SWAP).toBe(0x13);
  expect(Opcode.RC_SEND_ONLY_WITH_INVALIDATE).toBe(0x17);
  expect(Opcode.RC_ATOMIC_WRITE).toBe(0x1d);
  expect(Opcode.UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE).toBe(0x2b);
  expect(Opcode.RD_RESYNC).toBe(0x55);
  expect(Opcode.UD_SEND_ONLY).toBe(0x64);
  expect(Opcode.CNP).toBe(0x81);
  expect(Opcode.XRC_SEND_ONLY_WITH_INVALIDATE).toBe(0xb7);
});

test('each opcode belongs to the transport its top three bits name', () => {
  const byBase: Record<number, string> = {
    0x00: Transport.RC,
    0x20: Transport.UC,
    0x40: Transport.RD,
    0x60: Transport.UD,
    0x80: Transport.CNP,
    0xa0: Transport.XRC,
  };
  for (const e of defined) {
    expect(e!.transport).toBe(byBase[e!.opcode & 0xe0]);
    expect(e!.name.startsWith(e!.transport)).toBe(true);
  }
});
