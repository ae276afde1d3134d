/**
 * perftest's out-of-band messages (linux-rdma/perftest, src/perftest_communication.c
 * and .h, src/perftest_parameters.h), byte for byte:
 *
 *   - version: `char version[MAX_VERSION]` (16 bytes), the version text
 *     strncpy'd and NUL-padded (exchange_versions);
 *   - system data: `cycle_buffer` then `cache_line_size`, each a 4-byte
 *     big-endian int (hton_int), one exchange each (check_sys_data, when the
 *     peer is 5.32 or newer);
 *   - MTU: `sprintf("%d", enum ibv_mtu)`, exchanged as 2 bytes when the peer is
 *     5.31 or newer, else as sizeof(int) = 4 (check_mtu, peer 5.1 or newer);
 *   - key message (`struct pingpong_dest` as text), four variants:
 *       KEY_PRINT_FMT        "%04x:%04x:%06x:%06x:%08x:%016llx:%08x"          59 bytes
 *       KEY_PRINT_FMT_DV     ... vaddr, then "%016llx:" tail markers VA      76 bytes
 *       KEY_PRINT_FMT_GID    ... vaddr, 16 x "%02x:" GID bytes, "%08x:"     108 bytes
 *       KEY_PRINT_FMT_GID_DV ... vaddr, tail markers VA, GID, srqn          125 bytes
 *     (LID, out_reads, QPN, PSN, R_Key, VA, [tail VA], [GID], SRQN; sizes
 *     include the NUL). The GID forms are used whenever gid_index != -1,
 *     which is always the case on RoCE;
 *   - bandwidth report (xchg_bw_reports): `size` as an 8-byte big-endian
 *     unsigned long, `iters` as 8 bytes (peer 5.33 or newer) or 4, then
 *     bw_peak, bw_avg and msgRate_avg as big-endian IEEE doubles — one
 *     exchange per field.
 *
 * Every exchange is symmetric: the client writes then reads, the server
 * reads then writes (ctx_xchg_data_ethernet, ctx_hand_shake).
 */
import { OobError, OobErrorCode, malformed } from './tcp-channel';
import { checkPeerAddress } from './peer-address';
import { asciiUntilNul, printable } from './pingpong-messages';
import type { Mtu } from '../../stack/mtu';
import { internalError } from '../../base/programming-error';

export const PERFTEST_VERSION_SIZE = 16;
/**
 * The version this side announces. Any version from 5.70 (the oldest a
 * current perftest accepts) to below 6.28 makes a peer use exactly the
 * exchange implemented here; 6.28 added negotiate_params, a raw struct whose
 * size depends on the peer's build (struct ibv_device_attr, HAVE_MLX5DV), so
 * it is not announced. 6.06 is the version seen on the wire in the rxe lab.
 */
export const PERFTEST_VERSION = '6.06';
/** check_version_compatibility: older peers are refused. */
export const PERFTEST_MIN_PEER_VERSION = 5.7;
/** Peers at or above this version run negotiate_params when the other side does too. */
export const PERFTEST_NEGOTIATE_VERSION = 6.28;

/** Defaults of perftest_parameters.c: sysconf page size and L1 line size (typical values). */
export const DEFAULT_CYCLE_BUFFER = 4096;
export const DEFAULT_CACHE_LINE_SIZE = 64;

// ---------------------------------------------------------------- version

export function encodeVersion(text: string = PERFTEST_VERSION): Uint8Array {
  if (text.length > PERFTEST_VERSION_SIZE - 1 || !/^[\x20-\x7e]*$/.test(text))
    throw new OobError(OobErrorCode.BAD_VALUE, `version text must be at most 15 printable characters: ${JSON.stringify(text)}`, 'version');
  const out = new Uint8Array(PERFTEST_VERSION_SIZE);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

export interface PerftestVersion {
  text: string;
  /** What atof() makes of it, which is how perftest compares versions. */
  value: number;
}

export function decodeVersion(bytes: Uint8Array): PerftestVersion {
  if (bytes.length !== PERFTEST_VERSION_SIZE)
    throw new OobError(OobErrorCode.MALFORMED, `perftest version message: must be ${PERFTEST_VERSION_SIZE} bytes, got ${bytes.length}`, 'version');
  const text = asciiUntilNul(bytes);
  const m = /^\s*(\d+(?:\.\d*)?)/.exec(text);
  if (m === null) throw malformed('perftest version message', 'version', `must start with a version number, got ${JSON.stringify(printable(bytes))}`);
  return { text, value: Number(m[1]) };
}

/** Throws INCOMPATIBLE for a peer older than 5.70 (perftest exits in that case too). */
export function checkPeerVersion(v: PerftestVersion): void {
  if (v.value < PERFTEST_MIN_PEER_VERSION) {
    throw new OobError(
      OobErrorCode.INCOMPATIBLE,
      `peer perftest version ${JSON.stringify(v.text)} is older than 5.70; its exchange is not implemented`,
      'version',
    );
  }
}

// ---------------------------------------------------------------- integers

export function encodeInt32BE(value: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setInt32(0, value, false);
  return out;
}

/** A 4-byte big-endian int; `field` names it in errors. Values must be positive. */
export function decodeInt32BE(bytes: Uint8Array, field: string, message = 'perftest system data'): number {
  if (bytes.length !== 4) throw new OobError(OobErrorCode.MALFORMED, `${message}: ${field} must be 4 bytes, got ${bytes.length}`, field);
  const v = new DataView(bytes.buffer, bytes.byteOffset, 4).getInt32(0, false);
  if (v <= 0) throw malformed(message, field, `must be a positive number, got ${v}`);
  return v;
}

// ---------------------------------------------------------------- MTU

/** Size of the MTU exchange, which depends on the peer's version. */
export function mtuMessageSize(peerVersion: number): 2 | 4 {
  return peerVersion >= 5.31 ? 2 : 4;
}

/** Whether the MTU is exchanged at all (check_mtu: peer 5.1 or newer). */
export function mtuExchanged(peerVersion: number): boolean {
  return peerVersion >= 5.1;
}

/** `sprintf("%d", mtu)` sent as `size` bytes (the digit and its NUL for 2). */
export function encodeMtu(mtu: Mtu, size: 2 | 4 = 2): Uint8Array {
  const out = new Uint8Array(size);
  const t = String(mtu);
  for (let i = 0; i < t.length && i < size; i++) out[i] = t.charCodeAt(i);
  return out;
}

/** The peer's MTU enum (1 = 256 ... 5 = 4096). */
export function decodeMtu(bytes: Uint8Array): Mtu {
  const text = asciiUntilNul(bytes);
  if (!/^\d+$/.test(text)) throw malformed('perftest MTU message', 'mtu', `must be a decimal ibv_mtu value and a NUL, got ${JSON.stringify(printable(bytes))}`);
  const v = Number(text);
  if (v < 1 || v > 5) throw malformed('perftest MTU message', 'mtu', `must be an ibv_mtu from 1 (256) to 5 (4096), got ${v}`);
  return v as Mtu;
}

// ---------------------------------------------------------------- key message

export interface PerftestDest {
  lid: number;
  outReads: number;
  qpn: number;
  psn: number;
  rkey: number;
  vaddr: bigint;
  /** Data-validation variants only: where the peer keeps its tail markers (0 = unused). */
  tailMarkersVaddr: bigint;
  /** Null in the variants without GID (gid_index -1, native IB only). */
  gid: Uint8Array | null;
  srqn: number;
}

export interface KeyFormat {
  gid: boolean;
  dataValidation: boolean;
}

export const KEY_MSG_SIZE = 59;
export const KEY_MSG_SIZE_DV = 76;
export const KEY_MSG_SIZE_GID = 108;
export const KEY_MSG_SIZE_GID_DV = 125;

export function keyMessageSize(f: KeyFormat): number {
  return f.gid ? (f.dataValidation ? KEY_MSG_SIZE_GID_DV : KEY_MSG_SIZE_GID) : f.dataValidation ? KEY_MSG_SIZE_DV : KEY_MSG_SIZE;
}

interface KeyField {
  name: string;
  digits: number;
}

function keyLayout(f: KeyFormat): { fields: KeyField[]; trailingColon: boolean } {
  const fields: KeyField[] = [
    { name: 'lid', digits: 4 },
    { name: 'out_reads', digits: 4 },
    { name: 'qpn', digits: 6 },
    { name: 'psn', digits: 6 },
    { name: 'rkey', digits: 8 },
    { name: 'vaddr', digits: 16 },
  ];
  if (f.dataValidation) fields.push({ name: 'tail_markers_vaddr', digits: 16 });
  if (f.gid) for (let i = 0; i < 16; i++) fields.push({ name: `gid[${i}]`, digits: 2 });
  fields.push({ name: 'srqn', digits: 8 });
  return { fields, trailingColon: f.gid };
}

function hex(value: number | bigint, digits: number, name: string): string {
  const v = BigInt(value);
  if (v < 0n || v >= 1n << BigInt(4 * digits)) throw new OobError(OobErrorCode.BAD_VALUE, `${name} ${v} does not fit in ${digits} hex digits`, name);
  return v.toString(16).padStart(digits, '0');
}

export function encodeKeyMessage(d: PerftestDest, f: KeyFormat): Uint8Array {
  const { fields, trailingColon } = keyLayout(f);
  if (f.gid && (d.gid === null || d.gid.length !== 16)) throw new OobError(OobErrorCode.BAD_VALUE, 'a key message with GID needs a 16-byte gid', 'gid');
  const values: (number | bigint)[] = [d.lid, d.outReads, d.qpn, d.psn, d.rkey, d.vaddr];
  if (f.dataValidation) values.push(d.tailMarkersVaddr);
  if (f.gid && d.gid !== null) for (const b of d.gid) values.push(b);
  values.push(d.srqn);
  const parts = fields.map((fl, i) => hex(values[i] as number | bigint, fl.digits, fl.name));
  const text = parts.join(':') + (trailingColon ? ':' : '');
  const size = keyMessageSize(f);
  if (text.length !== size - 1) throw internalError(`key message text is ${text.length} characters, expected ${size - 1}`);
  const out = new Uint8Array(size);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

export function decodeKeyMessage(bytes: Uint8Array, f: KeyFormat): PerftestDest {
  const size = keyMessageSize(f);
  const what = `perftest key message (${size} bytes${f.gid ? ', with GID' : ''}${f.dataValidation ? ', data validation' : ''})`;
  if (bytes.length !== size) throw new OobError(OobErrorCode.MALFORMED, `${what}: must be ${size} bytes, got ${bytes.length}`, 'length');
  const { fields, trailingColon } = keyLayout(f);
  let at = 0;
  const values: bigint[] = [];
  for (let i = 0; i < fields.length; i++) {
    const fl = fields[i] as KeyField;
    const text = String.fromCharCode(...bytes.subarray(at, at + fl.digits));
    if (!/^[0-9a-fA-F]+$/.test(text))
      throw malformed(what, fl.name, `must be ${fl.digits} hex digits at byte ${at}, got ${JSON.stringify(printable(bytes.subarray(at, at + fl.digits)))}`);
    values.push(BigInt(`0x${text}`));
    at += fl.digits;
    const last = i === fields.length - 1;
    if (!last || trailingColon) {
      if (bytes[at] !== 0x3a)
        throw malformed(what, fl.name, `must be followed by ':' at byte ${at}, got ${JSON.stringify(printable(bytes.subarray(at, at + 1)))}`);
      at++;
    }
  }
  if (at !== size - 1 || bytes[at] !== 0) throw malformed(what, 'terminator', `must be a NUL at byte ${size - 1}`);
  const n = (i: number): number => Number(values[i] as bigint);
  let k = 6;
  const tail = f.dataValidation ? (values[k++] as bigint) : 0n;
  let gid: Uint8Array | null = null;
  if (f.gid) {
    gid = new Uint8Array(16);
    for (let i = 0; i < 16; i++) gid[i] = n(k++);
  }
  const dest = { lid: n(0), outReads: n(1), qpn: n(2), psn: n(3), rkey: n(4), vaddr: values[5] as bigint, tailMarkersVaddr: tail, gid, srqn: n(k) };
  checkPeerAddress(what, dest);
  return dest;
}

// ---------------------------------------------------------------- bandwidth report

export interface BwReport {
  size: bigint;
  iters: bigint;
  /** In the unit of the sender's report format: MB/s (2^20 bytes) by default, Gb/s with --report_gbits. */
  bwPeak: number;
  bwAvg: number;
  /** Millions of messages per second. */
  msgRateAvg: number;
}

export type BwReportField = 'size' | 'iters' | 'bw_peak' | 'bw_avg' | 'msgRate_avg';

/** The exchanges of xchg_bw_reports in order, with their sizes for a peer of `peerVersion`. */
export function bwReportLayout(peerVersion: number): readonly { field: BwReportField; size: number }[] {
  return [
    { field: 'size', size: 8 },
    { field: 'iters', size: peerVersion >= 5.33 ? 8 : 4 },
    { field: 'bw_peak', size: 8 },
    { field: 'bw_avg', size: 8 },
    { field: 'msgRate_avg', size: 8 },
  ];
}

export function encodeBwReportField(r: BwReport, field: BwReportField, size: number): Uint8Array {
  const out = new Uint8Array(size);
  const v = new DataView(out.buffer);
  switch (field) {
    case 'size':
    case 'iters': {
      const x = field === 'size' ? r.size : r.iters;
      if (size === 8) v.setBigUint64(0, BigInt.asUintN(64, x), false);
      else v.setUint32(0, Number(BigInt.asUintN(32, x)), false);
      break;
    }
    case 'bw_peak':
      v.setFloat64(0, r.bwPeak, false);
      break;
    case 'bw_avg':
      v.setFloat64(0, r.bwAvg, false);
      break;
    case 'msgRate_avg':
      v.setFloat64(0, r.msgRateAvg, false);
      break;
  }
  return out;
}

/**
 * Stores one received field into `r`. Values are not range-checked: a perftest
 * server answers with a report it never filled in (an uninitialised struct),
 * so only the side that uses a report may judge it (see `checkBwReport`).
 */
export function decodeBwReportField(r: BwReport, field: BwReportField, bytes: Uint8Array): void {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const want = field === 'iters' ? [4, 8] : [8];
  if (!want.includes(bytes.length))
    throw new OobError(OobErrorCode.MALFORMED, `perftest bandwidth report: ${field} must be ${want.join(' or ')} bytes, got ${bytes.length}`, field);
  switch (field) {
    case 'size':
      r.size = v.getBigUint64(0, false);
      break;
    case 'iters':
      r.iters = bytes.length === 8 ? v.getBigUint64(0, false) : BigInt(v.getUint32(0, false));
      break;
    case 'bw_peak':
      r.bwPeak = v.getFloat64(0, false);
      break;
    case 'bw_avg':
      r.bwAvg = v.getFloat64(0, false);
      break;
    case 'msgRate_avg':
      r.msgRateAvg = v.getFloat64(0, false);
      break;
  }
}

export function emptyBwReport(): BwReport {
  return { size: 0n, iters: 0n, bwPeak: 0, bwAvg: 0, msgRateAvg: 0 };
}

/** Checks a report the caller is about to use (the client's report, read by a server). */
/** Checks a peer's bandwidth report against the test; without `iters` (duration mode) any count is accepted. */
export function checkBwReport(r: BwReport, expect: { size: number; iters?: number }): void {
  const what = 'perftest bandwidth report';
  if (r.size !== BigInt(expect.size)) throw malformed(what, 'size', `is ${r.size}, but the test ran with ${expect.size}-byte messages`);
  if (expect.iters !== undefined && r.iters !== BigInt(expect.iters))
    throw malformed(what, 'iters', `is ${r.iters}, but the test ran ${expect.iters} iterations`);
  // Duration mode: any count the client completed, but one it could have counted (a negative count sent as unsigned is 2^64 - n).
  if (r.iters < 1n || r.iters > BigInt(Number.MAX_SAFE_INTEGER))
    throw malformed(what, 'iters', `is ${r.iters}, not a count of messages a run can complete (1..2^53-1)`);
  for (const [k, x] of [
    ['bw_peak', r.bwPeak],
    ['bw_avg', r.bwAvg],
    ['msgRate_avg', r.msgRateAvg],
  ] as const) {
    if (!Number.isFinite(x) || x < 0) throw malformed(what, k, `must be a finite non-negative number, got ${x}`);
  }
}
