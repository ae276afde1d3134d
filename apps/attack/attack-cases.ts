/**
 * The frames `roce attack` sends: RoCE v2 frames with a valid ICRC (except the bad-ICRC case)
 * aimed at one live QP, one kind per case. Each case names what IBTA expects the target to do
 * with it and what rxe does; docs/conformance.md ("Hostile frames") has the same table with the
 * stack's own reaction. Frames are built with packets/build.ts and the named opcodes; the
 * reserved opcode is found in the opcode table (a number it has no entry for), never written out.
 *
 * PSNs: `psn` is the PSN the target's responder expects next (or, for the ghost responses, the
 * oldest PSN its requester waits on), and frame `i` of a case goes to `psn + (i mod window)`,
 * so a flood covers a window of PSNs around the expected one as the connection moves on.
 */
import { buildRoceV2Frame, type RoceV2Spec, type TransportSpec } from '../../packets/build';
import { OPCODES, Opcode } from '../../packets/opcodes';
import { CREDITS_INVALID, NakCode, encodeSyndrome } from '../../packets/aeth';
import { psnAdd } from '../../base/psn';
import { icrcV2, writeIcrc } from '../../packets/icrc';
import { ETH_LEN } from '../../packets/ethernet';
import { ICRC_LEN } from '../../packets/decode';

export const AttackCase = {
  WRONG_RKEY: 'wrong-rkey',
  BAD_VA: 'bad-va',
  OVERSIZE: 'oversize',
  READ_2G: 'read-2g',
  UNALIGNED_ATOMIC: 'unaligned-atomic',
  PSN_OUTSIDE: 'psn-outside',
  DUPLICATE_PSN: 'duplicate-psn',
  RESERVED_OPCODE: 'reserved-opcode',
  BAD_ICRC: 'bad-icrc',
  GHOST_ACK: 'ghost-ack',
  GHOST_NAK: 'ghost-nak',
  CNP: 'cnp',
} as const;
export type AttackCase = (typeof AttackCase)[keyof typeof AttackCase];

export const ATTACK_CASES: readonly AttackCase[] = Object.values(AttackCase);

/** One line per case: what the frame is and what IBTA expects (the help text and the JSON summary). */
export const ATTACK_CASE_HELP: Readonly<Record<AttackCase, string>> = {
  'wrong-rkey': 'RDMA WRITE ONLY with an R_Key the target never gave: NAK Remote Access Error, responder QP to ERR (C9-88, §9.9.3 class C)',
  'bad-va': 'RDMA WRITE ONLY at a VA outside every region (with --rkey, the real R_Key): NAK Remote Access Error, QP to ERR (C9-88)',
  oversize: 'RDMA WRITE ONLY whose RETH asks for 2 GiB while carrying 64 bytes: NAK Invalid Request, QP to ERR (rxe check_length)',
  'read-2g':
    'RDMA READ request of 2^31 bytes (RXE_MAX_MSG_SIZE, allowed): the R_Key/range check fails, NAK Remote Access Error, QP to ERR (C9-88; rxe check_rkey)',
  'unaligned-atomic': 'FETCH_ADD at an address that is not 8-byte aligned: NAK Invalid Request, QP to ERR (rxe RESPST_ERR_MISALIGNED_ATOMIC)',
  'psn-outside': 'SEND ONLY 2^22 PSNs ahead of the expected one: one NAK PSN Sequence Error per gap, then silent drops (§9.7.5.1, class B)',
  'duplicate-psn': 'RDMA WRITE ONLY behind the expected PSN: a duplicate, re-ACKed, nothing executed (C9-105)',
  'reserved-opcode': 'a valid frame whose BTH opcode is reserved in the RC group: silently dropped (rxe hdr_check: no opcode mask)',
  'bad-icrc': 'RDMA WRITE ONLY with a wrong ICRC: silently dropped before the transport sees it (rxe_icrc_check)',
  'ghost-ack': 'ACKNOWLEDGE for a PSN the target did not send (or did): a ghost is dropped (§9.7.5.1.2; rxe check_psn), an in-range one completes requests',
  'ghost-nak': "NAKs (sequence, invalid request, remote access, remote operational) cycling: in range they end the requester's WQE and QP (§9.7.5.2)",
  cnp: 'RoCE v2 CNP (annex A17.9.2) to the QP: congestion feedback only, no transport state (rxe ignores it)',
};

export interface AttackTarget {
  srcMac: number;
  dstMac: number;
  srcIp: string;
  dstIp: string;
  /** The target QP. */
  qpn: number;
  /** The PSN the target expects next (see the file comment). */
  psn: number;
  /** Frames of a case spread over this many PSNs from `psn` (at least 1). */
  window: number;
  /** The target's R_Key and a VA of its region, when known (bad-va, unaligned-atomic); otherwise made up. */
  rkey: number | null;
  va: bigint | null;
  /** The UDP source port (rxe takes it from the QP numbers; any value reaches the QP). */
  udpSport: number;
}

/** 2^31: the READ length rxe refuses (RXE_MAX_MSG_SIZE) and the RETH length of the oversize WRITE. */
const TWO_GIB = 0x8000_0000;
/** How far ahead of the expected PSN the psn-outside frames go: well inside the 2^23 "ahead" half. */
const PSN_AHEAD = 1 << 22;
/** A VA no region covers (the top page of the address space). */
const FAR_VA = 0xffff_ffff_ffff_f000n;
const PAYLOAD = new Uint8Array(64).fill(0xa5);

const NAK_CYCLE: readonly number[] = [NakCode.PSN_SEQUENCE_ERROR, NakCode.INVALID_REQUEST, NakCode.REMOTE_ACCESS_ERROR, NakCode.REMOTE_OPERATIONAL_ERROR];

/** The reserved opcodes of the RC group: numbers in the group the opcode table has no entry for. */
export function reservedRcOpcodes(): number[] {
  const group = Opcode.RC_SEND_FIRST;
  const out: number[] = [];
  // The RC group is the 32 opcodes from RC_SEND_FIRST on (IBTA vol. 1 table 35: the top 3 bits name the transport).
  for (let n = group; n < group + 32; n++) if (OPCODES[n] === undefined) out.push(n);
  return out;
}

/** An R_Key the target did not hand out: its own with every bit flipped, or a fixed made-up one. */
function wrongRkey(t: AttackTarget, i: number): number {
  return t.rkey !== null ? ~t.rkey >>> 0 : (0xbad0_0000 | (i & 0xffff)) >>> 0;
}

function frame(t: AttackTarget, transport: TransportSpec): Uint8Array {
  const spec: RoceV2Spec = {
    ...transport,
    eth: { src: t.srcMac, dst: t.dstMac },
    ip: { version: 4, src: t.srcIp, dst: t.dstIp },
    udp: { srcPort: t.udpSport },
  };
  return buildRoceV2Frame(spec);
}

/** Frame `i` of case `c` toward `t`. */
export function craftFrame(c: AttackCase, t: AttackTarget, i: number): Uint8Array {
  const w = Math.max(1, t.window);
  const psn = psnAdd(t.psn, i % w);
  const destQp = t.qpn;
  const write = (reth: { va: bigint; rkey: number; dmaLength: number }, p = psn): TransportSpec => ({
    bth: { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp, psn: p, ackReq: true },
    reth,
    payload: PAYLOAD,
  });
  switch (c) {
    case AttackCase.WRONG_RKEY:
      return frame(t, write({ va: t.va ?? 0x1000n, rkey: wrongRkey(t, i), dmaLength: PAYLOAD.length }));
    case AttackCase.BAD_VA:
      return frame(t, write({ va: FAR_VA, rkey: t.rkey ?? wrongRkey(t, i), dmaLength: PAYLOAD.length }));
    case AttackCase.OVERSIZE:
      return frame(t, write({ va: t.va ?? 0x1000n, rkey: t.rkey ?? wrongRkey(t, i), dmaLength: TWO_GIB >>> 0 }));
    case AttackCase.READ_2G:
      return frame(t, {
        bth: { opcode: Opcode.RC_RDMA_READ_REQUEST, destQp, psn, ackReq: true },
        reth: { va: t.va ?? 0x1000n, rkey: t.rkey ?? wrongRkey(t, i), dmaLength: TWO_GIB >>> 0 },
      });
    case AttackCase.UNALIGNED_ATOMIC:
      return frame(t, {
        bth: { opcode: Opcode.RC_FETCH_ADD, destQp, psn, ackReq: true },
        atomicEth: { va: (t.va ?? 0x1000n) | 3n, rkey: t.rkey ?? wrongRkey(t, i), swapAdd: 1n, compare: 0n },
      });
    case AttackCase.PSN_OUTSIDE:
      return frame(t, { bth: { opcode: Opcode.RC_SEND_ONLY, destQp, psn: psnAdd(psn, PSN_AHEAD), ackReq: true }, payload: PAYLOAD });
    case AttackCase.DUPLICATE_PSN:
      return frame(t, write({ va: t.va ?? 0x1000n, rkey: wrongRkey(t, i), dmaLength: PAYLOAD.length }, psnAdd(t.psn, -1 - (i % w))));
    case AttackCase.RESERVED_OPCODE: {
      const f = frame(t, { bth: { opcode: Opcode.RC_SEND_ONLY, destQp, psn, ackReq: true }, payload: PAYLOAD });
      const reserved = reservedRcOpcodes();
      const ipOff = ETH_LEN;
      const bthOff = ipOff + 20 + 8;
      f[bthOff] = reserved[i % reserved.length] as number;
      // The ICRC covers the BTH opcode: sealed again, so only the opcode is wrong.
      writeIcrc(f, f.length - ICRC_LEN, icrcV2(f, ipOff, f.length - ICRC_LEN));
      return f;
    }
    case AttackCase.BAD_ICRC: {
      const f = frame(t, write({ va: t.va ?? 0x1000n, rkey: wrongRkey(t, i), dmaLength: PAYLOAD.length }));
      const at = f.length - ICRC_LEN;
      f[at] = (f[at] as number) ^ 0xff;
      return f;
    }
    case AttackCase.GHOST_ACK:
      return frame(t, { bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp, psn }, aeth: { syndrome: encodeSyndrome('ACK', CREDITS_INVALID), msn: i & 0xffffff } });
    case AttackCase.GHOST_NAK:
      return frame(t, {
        bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp, psn },
        aeth: { syndrome: encodeSyndrome('NAK', NAK_CYCLE[i % NAK_CYCLE.length] as number), msn: i & 0xffffff },
      });
    case AttackCase.CNP:
      return frame(t, { bth: { opcode: Opcode.CNP, destQp, psn: 0, becn: true }, cnp: new Uint8Array(16) });
  }
}

/** True when `c` is answered by the target's responder (a request), false for responses and CNPs. */
export function isRequestCase(c: AttackCase): boolean {
  return c !== AttackCase.GHOST_ACK && c !== AttackCase.GHOST_NAK && c !== AttackCase.CNP;
}
