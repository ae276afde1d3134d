/**
 * Typed errors of the wire layer.
 *
 * Parsers in `packets/` throw only `WireError`. Each carries a stable `code`
 * (for programs and tests), the byte offset where the problem was found
 * (relative to the start of the frame or file being read), and a readable
 * message. Like every typed error here it is a `RoceError` (base/roce-error.ts).
 */
import { RoceError } from '../base/roce-error';

/** The codes of `WireError`, one per kind of malformed input. */
export const WireErrorCode = {
  /** The buffer ends before a header or a declared length does. */
  Truncated: 'ROCE_ERR_TRUNCATED',
  /** A length field holds a value that cannot be right (shorter than a header, beyond the frame). */
  BadLength: 'ROCE_ERR_BAD_LENGTH',
  /** A field holds a value this layer does not accept (IP version, header length, ...). */
  BadField: 'ROCE_ERR_BAD_FIELD',
  /** The BTH opcode is not in the opcode table. */
  UnknownOpcode: 'ROCE_ERR_UNKNOWN_OPCODE',
  /** The ICRC does not match the frame's contents. */
  BadIcrc: 'ROCE_ERR_BAD_ICRC',
  /** An IPv4 header checksum does not match. */
  BadChecksum: 'ROCE_ERR_BAD_CHECKSUM',
  /** A value handed to an emitter does not fit its field. */
  BadValue: 'ROCE_ERR_BAD_VALUE',
  /** A capture file (pcap / pcapng) is malformed or truncated. */
  BadCapture: 'ROCE_ERR_BAD_CAPTURE',
} as const;
export type WireErrorCode = (typeof WireErrorCode)[keyof typeof WireErrorCode];

/** Malformed bytes: a header, frame or capture that cannot be what it claims, with the byte offset of the problem. */
export class WireError extends RoceError<WireErrorCode> {
  /** Byte offset of the problem, from the start of the frame (or file, for capture errors). */
  readonly offset: number;
  /** What is wrong, without the offset (`message` is this and " (at byte N)"). */
  readonly reason: string;

  constructor(code: WireErrorCode, offset: number, message: string) {
    // No stack: the error is about the input, at `offset` (a capture of nothing but malformed
    // frames decoded at a third of tshark's rate while each of its errors captured one).
    super(code, `${message} (at byte ${offset})`, { stack: false });
    this.offset = offset;
    this.reason = message;
  }
}

/** Throws a Truncated error unless `need` bytes are available at `off` in a buffer of `len` bytes. */
export function need(len: number, off: number, count: number, what: string): void {
  if (off < 0 || off + count > len) {
    throw new WireError(WireErrorCode.Truncated, off, `${what} needs ${count} bytes but only ${Math.max(0, len - off)} remain`);
  }
}

/** What a `WireError` is made of, as it crosses to another thread (a structured clone keeps no class). */
export interface WireErrorParts {
  code: WireErrorCode;
  offset: number;
  /** `WireError.reason`: the message without the offset. */
  reason: string;
}

export function wireErrorParts(e: WireError): WireErrorParts {
  return { code: e.code, offset: e.offset, reason: e.reason };
}

/** The `WireError` that `parts` came from: the same code, offset and message. */
export function wireErrorFromParts(parts: WireErrorParts): WireError {
  return new WireError(parts.code, parts.offset, parts.reason);
}
