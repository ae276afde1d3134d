/**
 * Where the verbs side meets the opcode table (packets/opcodes.ts): the wire transport of each QP
 * type, and which opcode each packet of a message carries.
 *
 * A request packet's opcode follows from the work request's opcode and the packet's place in its
 * message: FIRST, MIDDLE, LAST, or ONLY when one packet carries it all; immediate data and
 * invalidation ride on the LAST or ONLY packet (IBTA vol. 1 §9.4, table 35). rxe works the same
 * choice out from the previous packet's opcode and whether the rest fits in one MTU
 * (rxe_req.c next_opcode_rc / next_opcode_uc); here it is one table built from the opcode names.
 */
import { Opcode, Transport } from '../packets/opcodes';
import { QpType } from './qp-type-and-state';
import { WrOpcode } from './work-request-codes';

/** The transport of each QP type's packets. */
const QP_TRANSPORT: Readonly<Record<QpType, Transport>> = Object.freeze({ [QpType.RC]: Transport.RC, [QpType.UC]: Transport.UC, [QpType.UD]: Transport.UD });

export function transportOf(type: QpType): Transport {
  return QP_TRANSPORT[type];
}

/** A packet's place in its message, as an index: bit 0 first, bit 1 last. */
const MIDDLE = 0;
const FIRST = 1;
const LAST = 2;

/** The opcode names a work request's packets take, by place, without the transport prefix. */
type Places = readonly [middle: string, first: string, last: string, only: string];

const SEND: Places = ['SEND_MIDDLE', 'SEND_FIRST', 'SEND_LAST', 'SEND_ONLY'];
const WRITE: Places = ['RDMA_WRITE_MIDDLE', 'RDMA_WRITE_FIRST', 'RDMA_WRITE_LAST', 'RDMA_WRITE_ONLY'];
/** READ and atomic requests are one packet, whatever the length of the response. */
const single = (name: string): Places => [name, name, name, name];

const WR_PLACES: Readonly<Partial<Record<WrOpcode, Places>>> = {
  [WrOpcode.SEND]: SEND,
  [WrOpcode.SEND_WITH_IMM]: [SEND[MIDDLE], SEND[FIRST], 'SEND_LAST_WITH_IMMEDIATE', 'SEND_ONLY_WITH_IMMEDIATE'],
  [WrOpcode.SEND_WITH_INV]: [SEND[MIDDLE], SEND[FIRST], 'SEND_LAST_WITH_INVALIDATE', 'SEND_ONLY_WITH_INVALIDATE'],
  [WrOpcode.RDMA_WRITE]: WRITE,
  [WrOpcode.RDMA_WRITE_WITH_IMM]: [WRITE[MIDDLE], WRITE[FIRST], 'RDMA_WRITE_LAST_WITH_IMMEDIATE', 'RDMA_WRITE_ONLY_WITH_IMMEDIATE'],
  [WrOpcode.RDMA_READ]: single('RDMA_READ_REQUEST'),
  [WrOpcode.ATOMIC_CMP_AND_SWP]: single('COMPARE_SWAP'),
  [WrOpcode.ATOMIC_FETCH_AND_ADD]: single('FETCH_ADD'),
  // RC only (IBTA vol. 1 annex A19; rxe_req.c next_opcode_rc()): UC has no such opcode.
  [WrOpcode.FLUSH]: single('FLUSH'),
  [WrOpcode.ATOMIC_WRITE]: single('ATOMIC_WRITE'),
};

const WR_OPCODE_SLOTS = 16;
const QP_TYPE_SLOTS = 8;

/** The opcode, or -1 when the transport has none for it (e.g. UC SEND with invalidate, UD SEND FIRST). */
function opcodeNamed(transport: Transport, name: string): number {
  const byName: Readonly<Partial<Record<string, number>>> = Opcode;
  return byName[`${transport}_${name}`] ?? -1;
}

/** Request opcodes indexed by ((QP type × 16 + WR opcode) × 4 + place); -1 where none exists. */
const REQUEST_OPCODES: Int16Array = (() => {
  const table = new Int16Array(QP_TYPE_SLOTS * WR_OPCODE_SLOTS * 4).fill(-1);
  for (const type of Object.values(QpType)) {
    for (const [wr, places] of Object.entries(WR_PLACES)) {
      const ops = (places as Places).map((name) => opcodeNamed(transportOf(type), name));
      // A transport without the ONLY form cannot carry the work request at all (UC has no SEND with
      // invalidate); one with only that form sends one packet per message (UD).
      if (ops[FIRST | LAST] === -1) continue;
      table.set(ops, (type * WR_OPCODE_SLOTS + Number(wr)) << 2);
    }
  }
  return table;
})();

/**
 * The opcode of a request packet of a `wr` work request on a `type` QP: `first` and `last` say
 * whether the packet starts and ends its message (both for a one-packet message). -1 when the
 * QP type cannot carry the work request (posting refuses those).
 */
export function requestOpcode(type: QpType, wr: WrOpcode, first: boolean, last: boolean): number {
  return REQUEST_OPCODES[((type * WR_OPCODE_SLOTS + wr) << 2) | (first ? FIRST : 0) | (last ? LAST : 0)] as number;
}

/** READ response opcodes by place (MIDDLE, FIRST, LAST, ONLY); only RC carries READs. */
const READ_RESPONSE: readonly number[] = [
  Opcode.RC_RDMA_READ_RESPONSE_MIDDLE,
  Opcode.RC_RDMA_READ_RESPONSE_FIRST,
  Opcode.RC_RDMA_READ_RESPONSE_LAST,
  Opcode.RC_RDMA_READ_RESPONSE_ONLY,
];

/** The opcode of a READ response packet that starts (`first`) and/or ends (`last`) the response. */
export function readResponseOpcode(first: boolean, last: boolean): number {
  return READ_RESPONSE[(first ? FIRST : 0) | (last ? LAST : 0)] as number;
}
