/**
 * ACK Extended Transport Header (IBTA vol. 1 §9.3.5): Syndrome(8) MSN(24).
 *
 * Syndrome bits 6:5 give the kind (§9.7.5.1 / table 44):
 *   00 ACK      value = credit count code (0..30; 31 = invalid, no flow control)
 *   01 RNR NAK  value = RNR timer code (table 45)
 *   10 reserved
 *   11 NAK      value = NAK code: 0 PSN sequence error, 1 invalid request,
 *               2 remote access error, 3 remote operational error, 4 invalid RD request
 * Bit 7 is reserved.
 */
import { need } from './errors';
import { checkUint, getU24, setU24 } from './bytes';

export const AETH_LEN = 4;
export const OFF = Object.freeze({ SYNDROME: 0, MSN: 1 });

export const AethKind = { ACK: 'ACK', RNR_NAK: 'RNR_NAK', RESERVED: 'RESERVED', NAK: 'NAK' } as const;
export type AethKind = (typeof AethKind)[keyof typeof AethKind];

export const NakCode = {
  PSN_SEQUENCE_ERROR: 0,
  INVALID_REQUEST: 1,
  REMOTE_ACCESS_ERROR: 2,
  REMOTE_OPERATIONAL_ERROR: 3,
  INVALID_RD_REQUEST: 4,
} as const;

export const NAK_CODE_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0: 'PSN sequence error',
  1: 'invalid request',
  2: 'remote access error',
  3: 'remote operational error',
  4: 'invalid RD request',
});

/** Credit code 31: the responder does not do end-to-end flow control (an SRQ responder; rxe sends it on every ACK). */
export const CREDITS_INVALID = 31;

/** Credits for each ACK credit code (IBTA vol. 1 table 44; same values as rdmavt's credit_table). */
export const CREDIT_TABLE: readonly number[] = Object.freeze([
  0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
]);

/**
 * The credit code an ACK carries for `available` receive WQEs: the largest code whose credit count does
 * not exceed them (IBTA vol. 1 §9.7.7.2; rdmavt rvt_compute_aeth() searches credit_table the same way),
 * so a responder never advertises more than it has.
 */
export function creditCode(available: number): number {
  let lo = 0;
  let hi = CREDIT_TABLE.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if ((CREDIT_TABLE[mid] as number) <= available) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * The receive WQEs a credit code says the responder had: [least, most] (most is Infinity for code 30),
 * or null for code 31 (no end-to-end flow control).
 */
export function creditRange(code: number): readonly [number, number] | null {
  if (code === CREDITS_INVALID) return null;
  const least = CREDIT_TABLE[code] ?? 0;
  const next = CREDIT_TABLE[code + 1];
  return [least, next === undefined ? Number.POSITIVE_INFINITY : next - 1];
}

/**
 * RNR NAK timer codes in microseconds (IBTA vol. 1 table 45). Code 0 is the
 * longest (655.36 ms). rxe's table has 61410 for code 25; the spec says 61.44 ms.
 */
export const RNR_TIMER_USEC: readonly number[] = Object.freeze([
  655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920,
  122880, 163840, 245760, 327680, 491520,
]);

export interface AethHeader {
  syndrome: number;
  msn: number;
}

export interface AethSyndrome {
  kind: AethKind;
  /** Credit code (ACK), RNR timer code (RNR NAK), NAK code (NAK), or the raw 5 bits (reserved). */
  value: number;
}

const KINDS: readonly AethKind[] = [AethKind.ACK, AethKind.RNR_NAK, AethKind.RESERVED, AethKind.NAK];

/** Every syndrome's meaning, built once (the completer reads one per ACK). */
const SYNDROMES: readonly AethSyndrome[] = Object.freeze(
  Array.from({ length: 128 }, (_, s) => Object.freeze({ kind: KINDS[(s >>> 5) & 3] as AethKind, value: s & 0x1f })),
);

/** The kind and value of an AETH syndrome (IBTA vol. 1 §9.7.5.1.1); the result is shared and frozen. */
export function decodeSyndrome(syndrome: number): AethSyndrome {
  return SYNDROMES[syndrome & 0x7f] as AethSyndrome;
}

const KIND_BITS: Readonly<Record<AethKind, number>> = { ACK: 0, RNR_NAK: 1, RESERVED: 2, NAK: 3 };

export function encodeSyndrome(kind: AethKind, value: number): number {
  checkUint(value, 0x1f, 'syndrome value');
  return (KIND_BITS[kind] << 5) | value;
}

export function parseAeth(view: DataView, off: number, end: number = view.byteLength): AethHeader {
  need(end, off, AETH_LEN, 'AETH');
  return { syndrome: view.getUint8(off + OFF.SYNDROME), msn: getU24(view, off + OFF.MSN) };
}

export function emitAeth(h: AethHeader, view: DataView, off: number): number {
  checkUint(h.syndrome, 0xff, 'syndrome');
  checkUint(h.msn, 0xffffff, 'msn');
  view.setUint8(off + OFF.SYNDROME, h.syndrome);
  setU24(view, off + OFF.MSN, h.msn);
  return AETH_LEN;
}

/** A short text for the syndrome, e.g. "ACK credits=unlimited", "RNR NAK 0.64 ms", "NAK PSN sequence error". */
export function describeSyndrome(syndrome: number): string {
  const s = decodeSyndrome(syndrome);
  switch (s.kind) {
    case AethKind.ACK:
      return `ACK credits=${s.value === CREDITS_INVALID ? 'unlimited' : String(CREDIT_TABLE[s.value])}`;
    case AethKind.RNR_NAK:
      return `RNR NAK ${(RNR_TIMER_USEC[s.value] ?? 0) / 1000} ms`;
    case AethKind.NAK:
      return `NAK ${NAK_CODE_NAMES[s.value] ?? `reserved code ${s.value}`}`;
    default:
      return `reserved syndrome 0x${syndrome.toString(16)}`;
  }
}
