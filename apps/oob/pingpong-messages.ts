/**
 * ibv_rc_pingpong's out-of-band messages (rdma-core
 * libibverbs/examples/rc_pingpong.c and pingpong.c), byte for byte:
 *
 *   - the address message: `"%04x:%06x:%06x:%s"` of LID, QPN, PSN and the
 *     "wire GID" (the 16 GID bytes as four big-endian 32-bit words, each
 *     `%08x`: 32 lowercase hex digits in network order), then a NUL — always
 *     52 bytes, the size of the template string the tool sizes its buffer with;
 *   - `"done"` with its NUL (5 bytes), the client's last word.
 *
 * The C tool parses with sscanf and is lenient; this decoder checks every
 * separator and digit and names the field at fault.
 */
import { OobError, OobErrorCode, malformed } from './tcp-channel';
import { checkPeerAddress } from './peer-address';

export const PINGPONG_MSG_SIZE = 52;
export const PINGPONG_DONE_SIZE = 5;
/** TCP port both pingpong and perftest use by default. */
export const PINGPONG_DEFAULT_PORT = 18515;

export interface PingpongDest {
  lid: number;
  qpn: number;
  psn: number;
  /** 16 raw GID bytes (all zero when the tool runs without -g). */
  gid: Uint8Array;
}

const WHAT = 'rc_pingpong address message';

/** The 32-hex-digit wire form of a GID (gid_to_wire_gid). */
export function gidToWire(gid: Uint8Array): string {
  if (gid.length !== 16) throw new OobError(OobErrorCode.BAD_VALUE, `a GID has 16 bytes, not ${gid.length}`, 'gid');
  let s = '';
  for (const b of gid) s += b.toString(16).padStart(2, '0');
  return s;
}

/** The GID a 32-hex-digit wire string stands for (wire_gid_to_gid). */
export function gidFromWire(text: string, message = WHAT): Uint8Array {
  if (!/^[0-9a-fA-F]{32}$/.test(text)) throw malformed(message, 'gid', `must be 32 hex digits, got ${JSON.stringify(text)}`);
  const g = new Uint8Array(16);
  for (let i = 0; i < 16; i++) g[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return g;
}

function hexField(value: number, digits: number, name: string): string {
  if (!Number.isInteger(value) || value < 0 || value >= 16 ** digits)
    throw new OobError(OobErrorCode.BAD_VALUE, `${name} ${value} does not fit in ${digits} hex digits`, name);
  return value.toString(16).padStart(digits, '0');
}

/** The 52-byte message for `d`. */
export function encodePingpongDest(d: PingpongDest): Uint8Array {
  const text = `${hexField(d.lid, 4, 'lid')}:${hexField(d.qpn, 6, 'qpn')}:${hexField(d.psn, 6, 'psn')}:${gidToWire(d.gid)}`;
  const out = new Uint8Array(PINGPONG_MSG_SIZE);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out; // byte 51 stays 0: the NUL
}

/** Parses a 52-byte message; an `OobError` (MALFORMED) names the first bad field. */
export function decodePingpongDest(bytes: Uint8Array): PingpongDest {
  if (bytes.length !== PINGPONG_MSG_SIZE) {
    throw new OobError(OobErrorCode.MALFORMED, `${WHAT}: must be ${PINGPONG_MSG_SIZE} bytes, got ${bytes.length}`, 'length');
  }
  const text = asciiUntilNul(bytes);
  const fields: [string, number, number][] = [
    ['lid', 0, 4],
    ['qpn', 5, 6],
    ['psn', 12, 6],
  ];
  const value: number[] = [];
  for (const [name, at, len] of fields) {
    const f = text.slice(at, at + len);
    if (!/^[0-9a-fA-F]+$/.test(f) || f.length !== len) throw malformed(WHAT, name, `must be ${len} hex digits at byte ${at}, got ${JSON.stringify(f)}`);
    const sep = text[at + len];
    if (sep !== ':') throw malformed(WHAT, name, `must be followed by ':' at byte ${at + len}, got ${JSON.stringify(sep ?? 'end of text')}`);
    value.push(parseInt(f, 16));
  }
  const gidText = text.slice(19);
  if (gidText.length !== 32)
    throw malformed(WHAT, 'gid', `must be 32 hex digits then a NUL at byte 51, got ${gidText.length} characters ${JSON.stringify(gidText)}`);
  const gid = gidFromWire(gidText);
  if (bytes[51] !== 0) throw malformed(WHAT, 'terminator', 'must be a NUL at byte 51');
  const dest = { lid: value[0] as number, qpn: value[1] as number, psn: value[2] as number, gid };
  checkPeerAddress(WHAT, dest);
  return dest;
}

/** `"done"` and its NUL. */
export function encodeDone(): Uint8Array {
  return Uint8Array.of(0x64, 0x6f, 0x6e, 0x65, 0);
}

/** Checks the client's closing message. */
export function checkDone(bytes: Uint8Array): void {
  const ok = bytes.length === PINGPONG_DONE_SIZE && asciiUntilNul(bytes) === 'done' && bytes[4] === 0;
  if (!ok)
    throw new OobError(
      OobErrorCode.MALFORMED,
      `rc_pingpong closing message: must be "done" and a NUL (5 bytes), got ${JSON.stringify(printable(bytes))}`,
      'done',
    );
}

/** Text up to the first NUL (or the end), bytes as Latin-1. */
export function asciiUntilNul(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) {
    if (b === 0) break;
    s += String.fromCharCode(b);
  }
  return s;
}

/** Bytes as text with non-printable bytes escaped, for error messages. */
export function printable(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`;
  return s;
}
