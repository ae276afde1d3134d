/**
 * Message layouts as data: a table of fields in the IBTA's `Byte[Bit]` notation
 * (byte offset from the start of the message, bit 0 = the most significant bit of
 * that byte, width in bits), read and written by one pair of functions.
 *
 * The CM chapter describes every message this way (IBTA vol. 1 chapter 12,
 * tables 106-120 as the Linux kernel's include/rdma/ibta_vol1_c12.h numbers
 * them; it writes them as `CM_FIELD_BLOC(struct, byte, bit, width)`), and a
 * table here reads like those.
 * A field of up to 32 bits may straddle bytes (the REQ's 20-bit flow label);
 * 64-bit fields are bigints; byte strings (GIDs, private data) are copied.
 *
 * `readFields` throws only a Truncated `WireError`. `writeFields` clears the
 * whole message first (reserved bits go out as zeros, as the kernel's cm.c
 * sends them) and then writes each field, so it writes every byte.
 */
import { WireError, WireErrorCode, need } from './errors';
import { checkU64, checkUint } from './bytes';

/** A number of up to 32 bits at `at[bit]`, `width` bits wide. */
export interface UintField {
  readonly kind: 'uint';
  readonly at: number;
  readonly bit: number;
  readonly width: number;
}
/** One bit, read as a boolean. */
export interface FlagField {
  readonly kind: 'flag';
  readonly at: number;
  readonly bit: number;
  readonly width: 1;
}
/** A byte-aligned 64-bit number (service IDs, GUIDs). */
export interface U64Field {
  readonly kind: 'u64';
  readonly at: number;
  readonly bit: 0;
  readonly width: 64;
}
/** A byte-aligned byte string: private data, additional information. */
export interface BytesField {
  readonly kind: 'bytes';
  readonly at: number;
  readonly bit: 0;
  readonly width: number;
}
/** A 16-byte GID (an IPv6 address on RoCE v2). */
export interface GidField {
  readonly kind: 'gid';
  readonly at: number;
  readonly bit: 0;
  readonly width: 128;
}

export type Field = UintField | FlagField | U64Field | BytesField | GidField;
export type FieldTable = Readonly<Record<string, Field>>;

/** The value type of one field. */
export type FieldValue<F extends Field> = F extends UintField ? number : F extends FlagField ? boolean : F extends U64Field ? bigint : Uint8Array;

/** The values of every field of a table, by name. */
export type FieldValues<T extends FieldTable> = { -readonly [K in keyof T]: FieldValue<T[K]> };

/** `width` bits starting at bit `bit` (0 = MSB) of byte `at`; may run into the next three bytes. */
export function bits(at: number, bit: number, width: number): UintField {
  return Object.freeze({ kind: 'uint', at, bit, width });
}
export const u8 = (at: number): UintField => bits(at, 0, 8);
export const u16 = (at: number): UintField => bits(at, 0, 16);
export const u24 = (at: number): UintField => bits(at, 0, 24);
export const u32 = (at: number): UintField => bits(at, 0, 32);
export function flag(at: number, bit: number): FlagField {
  return Object.freeze({ kind: 'flag', at, bit, width: 1 });
}
export function u64(at: number): U64Field {
  return Object.freeze({ kind: 'u64', at, bit: 0, width: 64 });
}
export function bytes(at: number, len: number): BytesField {
  return Object.freeze({ kind: 'bytes', at, bit: 0, width: len * 8 });
}
export function gid(at: number): GidField {
  return Object.freeze({ kind: 'gid', at, bit: 0, width: 128 });
}

/** Bytes a sub-32-bit field touches. */
const span = (f: Field): number => Math.ceil((f.bit + f.width) / 8);

function readUint(view: DataView, off: number, f: Field): number {
  const n = span(f);
  let word = 0;
  for (let i = 0; i < n; i++) word = word * 256 + view.getUint8(off + f.at + i);
  const shift = n * 8 - f.bit - f.width;
  return Math.floor(word / 2 ** shift) % 2 ** f.width;
}

function writeUint(view: DataView, off: number, f: Field, value: number): void {
  const n = span(f);
  const shift = n * 8 - f.bit - f.width;
  // Read-modify-write over the bytes the field touches, last byte first.
  let v = value * 2 ** shift;
  let mask = (2 ** f.width - 1) * 2 ** shift;
  for (let i = n - 1; i >= 0; i--) {
    const m = mask % 256;
    const at = off + f.at + i;
    view.setUint8(at, (view.getUint8(at) & ~m & 0xff) | ((v % 256) & m));
    v = Math.floor(v / 256);
    mask = Math.floor(mask / 256);
  }
}

/** Reads every field of `table` from the `len`-byte message at `off` (the buffer ends at `end`). */
export function readFields<T extends FieldTable>(table: T, len: number, view: DataView, off: number, end: number, what: string): FieldValues<T> {
  need(end, off, len, what);
  const out: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(table)) {
    switch (f.kind) {
      case 'uint':
        out[name] = readUint(view, off, f);
        break;
      case 'flag':
        out[name] = readUint(view, off, f) === 1;
        break;
      case 'u64':
        out[name] = view.getBigUint64(off + f.at);
        break;
      default:
        out[name] = new Uint8Array(view.buffer, view.byteOffset + off + f.at, f.width / 8).slice();
    }
  }
  return out as FieldValues<T>;
}

/**
 * Writes the `len`-byte message at `off`: zeros, then every field of `table`. A byte
 * string shorter than its field is padded with zeros (private data); a longer one, or
 * a number that does not fit its width, is a BadValue error.
 */
export function writeFields<T extends FieldTable>(table: T, len: number, values: FieldValues<T>, view: DataView, off: number, what: string): number {
  const vals = values as Record<string, unknown>;
  for (const [name, f] of Object.entries(table)) {
    const v = vals[name];
    const label = `${what} ${name}`;
    if (f.kind === 'uint') checkUint(v as number, 2 ** f.width - 1, label);
    else if (f.kind === 'u64') checkU64(v as bigint, label);
    else if (f.kind === 'bytes' || f.kind === 'gid') {
      const b = v as Uint8Array;
      if (!(b instanceof Uint8Array) || b.length > f.width / 8 || (f.kind === 'gid' && b.length !== 16)) {
        throw new WireError(WireErrorCode.BadValue, 0, `${label} must be ${f.kind === 'gid' ? 'exactly' : 'at most'} ${f.width / 8} bytes`);
      }
    }
  }
  for (let i = 0; i < len; i++) view.setUint8(off + i, 0);
  for (const [name, f] of Object.entries(table)) {
    const v = vals[name];
    switch (f.kind) {
      case 'uint':
        writeUint(view, off, f, v as number);
        break;
      case 'flag':
        writeUint(view, off, f, v === true ? 1 : 0);
        break;
      case 'u64':
        view.setBigUint64(off + f.at, v as bigint);
        break;
      default: {
        const b = v as Uint8Array;
        for (let i = 0; i < b.length; i++) view.setUint8(off + f.at + i, b[i] as number);
      }
    }
  }
  return len;
}
