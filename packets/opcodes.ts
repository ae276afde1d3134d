/**
 * The opcode table: one frozen entry per defined BTH opcode, as data.
 *
 * For every opcode it lists the extension headers present (in wire order),
 * their offsets from the start of the BTH, the total header length, what the
 * packet does (flags), and the payload rule. The requester, responder,
 * decoder and tests all read this table; nothing else knows which headers an
 * opcode carries. The layout follows IBTA vol. 1 §9.2-9.3 (tables 35-38) and
 * the way rxe lays out `rxe_opcode[]` (drivers/infiniband/sw/rxe/rxe_opcode.c),
 * including RC FLUSH (0x1C: FETH + RETH) and RC ATOMIC WRITE (0x1D: RETH + 8
 * bytes), plus XRC (annex A14), RD (decode only) and the RoCE v2 CNP (0x81).
 */
import { BTH_LEN } from './bth';
import { RETH_LEN } from './reth';
import { AETH_LEN } from './aeth';
import { ATOMIC_ETH_LEN } from './atomic-eth';
import { ATOMIC_ACK_ETH_LEN } from './atomic-ack-eth';
import { IMMDT_LEN } from './immdt';
import { IETH_LEN } from './ieth';
import { DETH_LEN } from './deth';
import { XRCETH_LEN } from './xrceth';
import { RDETH_LEN } from './rdeth';
import { FETH_LEN } from './feth';
import { CNP_RESERVED_LEN } from './cnp';

/** Extension header bits. */
export const Hdr = {
  XRCETH: 1 << 0,
  RDETH: 1 << 1,
  DETH: 1 << 2,
  FETH: 1 << 3,
  RETH: 1 << 4,
  ATOMIC_ETH: 1 << 5,
  AETH: 1 << 6,
  ATOMIC_ACK_ETH: 1 << 7,
  IMMDT: 1 << 8,
  IETH: 1 << 9,
  CNP: 1 << 10,
} as const;
export type HdrName = keyof typeof Hdr;

/** Extension headers in the order they follow the BTH on the wire, with their lengths. */
export const HDR_ORDER: readonly { name: HdrName; len: number }[] = Object.freeze([
  { name: 'XRCETH', len: XRCETH_LEN },
  { name: 'RDETH', len: RDETH_LEN },
  { name: 'DETH', len: DETH_LEN },
  { name: 'FETH', len: FETH_LEN },
  { name: 'RETH', len: RETH_LEN },
  { name: 'ATOMIC_ETH', len: ATOMIC_ETH_LEN },
  { name: 'AETH', len: AETH_LEN },
  { name: 'ATOMIC_ACK_ETH', len: ATOMIC_ACK_ETH_LEN },
  { name: 'IMMDT', len: IMMDT_LEN },
  { name: 'IETH', len: IETH_LEN },
  { name: 'CNP', len: CNP_RESERVED_LEN },
]);

/** What a packet is and does (rxe's RXE_*_MASK bits). */
export const OpFlag = {
  /** A request (sent by a requester, handled by a responder). */
  REQ: 1 << 0,
  /** A response (ACK, atomic ACK, read response), handled by a completer. */
  RESP: 1 << 1,
  /** First packet of a message. */
  START: 1 << 2,
  MIDDLE: 1 << 3,
  /** Last packet of a message. */
  END: 1 << 4,
  SEND: 1 << 5,
  WRITE: 1 << 6,
  READ: 1 << 7,
  ATOMIC: 1 << 8,
  FLUSH: 1 << 9,
  ATOMIC_WRITE: 1 << 10,
  /** Uses a receive WQE at the responder (every SEND packet, WRITE with immediate; rxe RXE_RWR_MASK). */
  RWR: 1 << 11,
  /** Completes a receive WQE at the responder. */
  COMP: 1 << 12,
  /** Carries immediate data. */
  IMM: 1 << 13,
  /** Carries an R_Key to invalidate. */
  INV: 1 << 14,
  /** Congestion notification. */
  CNP: 1 << 15,
} as const;

/** How much payload an opcode carries (IBTA vol. 1 §9.7.3.1 / C9-29..C9-31). */
export const PayloadRule = {
  /** No payload. */
  NONE: 'none',
  /** Exactly one path MTU, no pad (FIRST and MIDDLE packets). */
  FULL: 'full',
  /** 1 byte to one path MTU (LAST packets). */
  LAST: 'last',
  /** 0 bytes to one path MTU (ONLY packets). */
  ONLY: 'only',
  /** A fixed number of bytes (`fixedPayload`). */
  FIXED: 'fixed',
} as const;
export type PayloadRule = (typeof PayloadRule)[keyof typeof PayloadRule];

/**
 * The transport an opcode belongs to: its top three bits (IBTA vol. 1 table 35). Not the verbs QP
 * type (stack/qp-type-and-state.ts `QpType`, libibverbs numbers): the wire also knows RD, XRC and CNP.
 */
export const Transport = { RC: 'RC', UC: 'UC', RD: 'RD', UD: 'UD', XRC: 'XRC', CNP: 'CNP' } as const;
export type Transport = (typeof Transport)[keyof typeof Transport];

/** One row of the opcode table (the BTH OpCode field, IBTA §9.2): the name, transport, headers and payload rule of an opcode. */
export interface OpcodeInfo {
  readonly opcode: number;
  /** e.g. `RC_RDMA_WRITE_ONLY` (the names of include/rdma/ib_pack.h without the `IB_OPCODE_` prefix). */
  readonly name: OpcodeName;
  readonly transport: Transport;
  /** Bit set of `Hdr`. */
  readonly hdrs: number;
  /** Bit set of `OpFlag`. */
  readonly flags: number;
  /** Offset of each present extension header from the start of the BTH. */
  readonly offsets: Readonly<Partial<Record<HdrName, number>>>;
  /** BTH plus extension headers: the payload starts here (from the start of the BTH). */
  readonly headerLen: number;
  readonly payload: PayloadRule;
  /** Payload bytes for `PayloadRule.FIXED`, else 0. */
  readonly fixedPayload: number;
}

const F = OpFlag;
const H = Hdr;
const P = PayloadRule;

interface SubOp {
  /** The low five bits of the opcode. */
  sub: number;
  hdrs: number;
  flags: number;
  payload: PayloadRule;
  fixed?: number;
}

const SEND_END = F.REQ | F.SEND | F.END | F.RWR | F.COMP;
const SEND_ONLY = SEND_END | F.START;

/**
 * The RC operation set by name (IBTA vol. 1 table 35, opcodes 0x00-0x1D), each operation's number
 * written once. UC, RD, UD and XRC reuse these low five bits under their own prefix.
 */
const RC_OPS = {
  SEND_FIRST: { sub: 0x00, hdrs: 0, flags: F.REQ | F.SEND | F.START | F.RWR, payload: P.FULL },
  SEND_MIDDLE: { sub: 0x01, hdrs: 0, flags: F.REQ | F.SEND | F.MIDDLE | F.RWR, payload: P.FULL },
  SEND_LAST: { sub: 0x02, hdrs: 0, flags: SEND_END, payload: P.LAST },
  SEND_LAST_WITH_IMMEDIATE: { sub: 0x03, hdrs: H.IMMDT, flags: SEND_END | F.IMM, payload: P.LAST },
  SEND_ONLY: { sub: 0x04, hdrs: 0, flags: SEND_ONLY, payload: P.ONLY },
  SEND_ONLY_WITH_IMMEDIATE: { sub: 0x05, hdrs: H.IMMDT, flags: SEND_ONLY | F.IMM, payload: P.ONLY },
  RDMA_WRITE_FIRST: { sub: 0x06, hdrs: H.RETH, flags: F.REQ | F.WRITE | F.START, payload: P.FULL },
  RDMA_WRITE_MIDDLE: { sub: 0x07, hdrs: 0, flags: F.REQ | F.WRITE | F.MIDDLE, payload: P.FULL },
  RDMA_WRITE_LAST: { sub: 0x08, hdrs: 0, flags: F.REQ | F.WRITE | F.END, payload: P.LAST },
  RDMA_WRITE_LAST_WITH_IMMEDIATE: {
    sub: 0x09,
    hdrs: H.IMMDT,
    flags: F.REQ | F.WRITE | F.END | F.RWR | F.COMP | F.IMM,
    payload: P.LAST,
  },
  RDMA_WRITE_ONLY: { sub: 0x0a, hdrs: H.RETH, flags: F.REQ | F.WRITE | F.START | F.END, payload: P.ONLY },
  RDMA_WRITE_ONLY_WITH_IMMEDIATE: {
    sub: 0x0b,
    hdrs: H.RETH | H.IMMDT,
    flags: F.REQ | F.WRITE | F.START | F.END | F.RWR | F.COMP | F.IMM,
    payload: P.ONLY,
  },
  RDMA_READ_REQUEST: { sub: 0x0c, hdrs: H.RETH, flags: F.REQ | F.READ | F.START | F.END, payload: P.NONE },
  RDMA_READ_RESPONSE_FIRST: { sub: 0x0d, hdrs: H.AETH, flags: F.RESP | F.READ | F.START, payload: P.FULL },
  RDMA_READ_RESPONSE_MIDDLE: { sub: 0x0e, hdrs: 0, flags: F.RESP | F.READ | F.MIDDLE, payload: P.FULL },
  RDMA_READ_RESPONSE_LAST: { sub: 0x0f, hdrs: H.AETH, flags: F.RESP | F.READ | F.END, payload: P.LAST },
  RDMA_READ_RESPONSE_ONLY: { sub: 0x10, hdrs: H.AETH, flags: F.RESP | F.READ | F.START | F.END, payload: P.ONLY },
  ACKNOWLEDGE: { sub: 0x11, hdrs: H.AETH, flags: F.RESP | F.START | F.END, payload: P.NONE },
  ATOMIC_ACKNOWLEDGE: {
    sub: 0x12,
    hdrs: H.AETH | H.ATOMIC_ACK_ETH,
    flags: F.RESP | F.ATOMIC | F.START | F.END,
    payload: P.NONE,
  },
  COMPARE_SWAP: { sub: 0x13, hdrs: H.ATOMIC_ETH, flags: F.REQ | F.ATOMIC | F.START | F.END, payload: P.NONE },
  FETCH_ADD: { sub: 0x14, hdrs: H.ATOMIC_ETH, flags: F.REQ | F.ATOMIC | F.START | F.END, payload: P.NONE },
  SEND_LAST_WITH_INVALIDATE: { sub: 0x16, hdrs: H.IETH, flags: SEND_END | F.INV, payload: P.LAST },
  SEND_ONLY_WITH_INVALIDATE: { sub: 0x17, hdrs: H.IETH, flags: SEND_ONLY | F.INV, payload: P.ONLY },
  FLUSH: { sub: 0x1c, hdrs: H.FETH | H.RETH, flags: F.REQ | F.FLUSH | F.START | F.END, payload: P.NONE },
  ATOMIC_WRITE: {
    sub: 0x1d,
    hdrs: H.RETH,
    flags: F.REQ | F.ATOMIC_WRITE | F.START | F.END,
    payload: P.FIXED,
    fixed: 8,
  },
} as const satisfies Record<string, SubOp>;
type RcOp = keyof typeof RC_OPS;

/** The top three bits of each transport's opcodes (IBTA vol. 1 table 35). */
const TRANSPORT_BASE = { RC: 0x00, UC: 0x20, RD: 0x40, UD: 0x60, CNP: 0x80, XRC: 0xa0 } as const;
/** UC carries SEND and RDMA WRITE: the RC operations up to RDMA_WRITE_ONLY_WITH_IMMEDIATE. */
const UC_LAST_SUB = RC_OPS.RDMA_WRITE_ONLY_WITH_IMMEDIATE.sub;
/** RD carries the RC operations up to FETCH_ADD (decode only). */
const RD_LAST_SUB = RC_OPS.FETCH_ADD.sub;
/** XRC carries the RC operations up to SEND_ONLY_WITH_INVALIDATE (annex A14). */
const XRC_LAST_SUB = RC_OPS.SEND_ONLY_WITH_INVALIDATE.sub;
/** The CNP's operation within its group (RoCE v2 annex A17.9.2: opcode 0x81). */
const CNP_SUB = 0x01;
/** RD's own operation (IBTA vol. 1 table 35). */
const RD_RESYNC_SUB = 0x15;

/** 0 | 1 | ... | N, for the operation subsets below. */
type UpTo<N extends number, Acc extends number[] = []> = Acc['length'] extends N ? Acc[number] | N : UpTo<N, [...Acc, Acc['length']]>;
/** The RC operations whose low five bits are at most N. */
type OpsUpTo<N extends number> = { [K in RcOp]: (typeof RC_OPS)[K]['sub'] extends UpTo<N> ? K : never }[RcOp];

/** Every opcode name the table defines. */
export type OpcodeName =
  | `RC_${RcOp}`
  | `UC_${OpsUpTo<typeof UC_LAST_SUB>}`
  | `RD_${OpsUpTo<typeof RD_LAST_SUB>}`
  | 'RD_RESYNC'
  | 'UD_SEND_ONLY'
  | 'UD_SEND_ONLY_WITH_IMMEDIATE'
  | 'CNP'
  | `XRC_${OpsUpTo<typeof XRC_LAST_SUB>}`;

function entry(opcode: number, name: OpcodeName, transport: Transport, hdrs: number, flags: number, payload: PayloadRule, fixed = 0): OpcodeInfo {
  const offsets: Partial<Record<HdrName, number>> = {};
  let off = BTH_LEN;
  for (const h of HDR_ORDER) {
    if ((hdrs & Hdr[h.name]) !== 0) {
      offsets[h.name] = off;
      off += h.len;
    }
  }
  return Object.freeze({ opcode, name, transport, hdrs, flags, offsets: Object.freeze(offsets), headerLen: off, payload, fixedPayload: fixed });
}

function buildTable(): readonly (OpcodeInfo | undefined)[] {
  const table: (OpcodeInfo | undefined)[] = new Array<OpcodeInfo | undefined>(256).fill(undefined);
  const put = (e: OpcodeInfo): void => {
    table[e.opcode] = e;
  };
  const ops = Object.entries(RC_OPS) as [RcOp, SubOp][];
  const T = TRANSPORT_BASE;
  // RC (0x00-0x1F): IBTA vol. 1 table 35.
  for (const [op, s] of ops) put(entry(T.RC | s.sub, `RC_${op}`, Transport.RC, s.hdrs, s.flags, s.payload, s.fixed));
  // UC (0x20-0x3F): SEND and RDMA WRITE only.
  for (const [op, s] of ops) {
    if (s.sub <= UC_LAST_SUB) put(entry(T.UC | s.sub, `UC_${op}` as OpcodeName, Transport.UC, s.hdrs, s.flags, s.payload));
  }
  // RD (0x40-0x5F): RDETH on every packet, DETH on requests; plus RESYNC. Decode only.
  for (const [op, s] of ops) {
    if (s.sub > RD_LAST_SUB) continue;
    const hdrs = s.hdrs | H.RDETH | ((s.flags & F.REQ) !== 0 ? H.DETH : 0);
    put(entry(T.RD | s.sub, `RD_${op}` as OpcodeName, Transport.RD, hdrs, s.flags, s.payload));
  }
  put(entry(T.RD | RD_RESYNC_SUB, 'RD_RESYNC', Transport.RD, H.RDETH | H.DETH, F.REQ | F.START | F.END, P.NONE));
  // UD (0x60-0x7F): SEND ONLY with DETH, one packet per message.
  const so = RC_OPS.SEND_ONLY;
  const soi = RC_OPS.SEND_ONLY_WITH_IMMEDIATE;
  put(entry(T.UD | so.sub, 'UD_SEND_ONLY', Transport.UD, so.hdrs | H.DETH, so.flags, so.payload));
  put(entry(T.UD | soi.sub, 'UD_SEND_ONLY_WITH_IMMEDIATE', Transport.UD, soi.hdrs | H.DETH, soi.flags, soi.payload));
  // CNP (0x81): RoCE v2 annex A17.9.2, the only opcode of the CNP group's one operation.
  put(entry(T.CNP | CNP_SUB, 'CNP', Transport.CNP, H.CNP, F.CNP | F.START | F.END, P.NONE));
  // XRC (0xA0-0xBF): annex A14; XRCETH on requests, responses as RC.
  for (const [op, s] of ops) {
    if (s.sub > XRC_LAST_SUB) continue;
    const hdrs = s.hdrs | ((s.flags & F.REQ) !== 0 ? H.XRCETH : 0);
    put(entry(T.XRC | s.sub, `XRC_${op}` as OpcodeName, Transport.XRC, hdrs, s.flags, s.payload));
  }
  return Object.freeze(table);
}

/** 256 entries indexed by opcode; `undefined` for reserved or unknown opcodes. */
export const OPCODES: readonly (OpcodeInfo | undefined)[] = buildTable();

/**
 * Opcode numbers by name, from the table: `Opcode.RC_SEND_FIRST` (0x00), `Opcode.UC_RDMA_WRITE_ONLY`
 * (0x2A), `Opcode.CNP` (0x81) ... Code outside this file names opcodes through these, never by number.
 */
export const Opcode: Readonly<Record<OpcodeName, number>> = Object.freeze(
  Object.fromEntries(OPCODES.flatMap((e) => (e === undefined ? [] : [[e.name, e.opcode] as const]))) as Record<OpcodeName, number>,
);

/** The table entry for `opcode`, or undefined. */
export function opcodeInfo(opcode: number): OpcodeInfo | undefined {
  return OPCODES[opcode & 0xff];
}

/** Looks an opcode up by name (`RC_SEND_ONLY`) or number. */
export function opcodeByName(name: string): OpcodeInfo | undefined {
  const upper = name.toUpperCase();
  return OPCODES.find((e) => e !== undefined && e.name === upper);
}

/** The opcode's name, or `UNKNOWN_0xNN`. */
export function opcodeName(opcode: number): string {
  return OPCODES[opcode & 0xff]?.name ?? `UNKNOWN_0x${opcode.toString(16).padStart(2, '0')}`;
}
