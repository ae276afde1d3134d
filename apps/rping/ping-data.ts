/**
 * What rping's client puts in its start buffer for ping `n` (rping_test_client()): the text
 * "rdma-ping-<n>: " (RPING_MSG_FMT), then letters counting up from `start` and wrapping from
 * 'z' (122) back to 'A' (65), the last byte NUL. `start` begins at 'A' and moves on by one per
 * ping, wrapping the same way. rping prints the buffer with printf("%s"), up to its first NUL.
 */
const RPING_MSG_PREFIX = 'rdma-ping-';
const FIRST = 65;
const LAST = 122;

/** rping's smallest -S: sizeof(stringify(INT_MAX)) + sizeof(RPING_MSG_FMT) = 11 + 15. */
export const RPING_MIN_BUFSIZE = 26;
/** rping's largest -S: RPING_BUFSIZE - 1. */
export const RPING_MAX_BUFSIZE = 64 * 1024 - 1;

/** The first letter after the prefix of ping `n`. */
export function pingStartLetter(n: number): number {
  return FIRST + (n % (LAST - FIRST + 1));
}

/** Fills `buf` as rping's client does for ping `n` (snprintf is cut to the buffer, NUL included). */
export function fillPingData(buf: Uint8Array, n: number): void {
  const size = buf.length;
  const text = `${RPING_MSG_PREFIX}${n}: `;
  // snprintf(buf, size, ...) writes at most size - 1 characters and a NUL; cc is the untruncated length.
  const cc = text.length;
  for (let i = 0; i < Math.min(cc, size - 1); i++) buf[i] = text.charCodeAt(i);
  let c = pingStartLetter(n);
  for (let i = cc; i < size; i++) {
    buf[i] = c;
    c = c === LAST ? FIRST : c + 1;
  }
  if (size > 0) buf[size - 1] = 0;
}

/** The buffer as printf("%s") shows it: bytes up to the first NUL, as Latin-1 text. */
export function cString(buf: Uint8Array): string {
  const end = buf.indexOf(0);
  const b = end < 0 ? buf : buf.subarray(0, end);
  let s = '';
  for (let i = 0; i < b.length; i += 4096) s += String.fromCharCode(...b.subarray(i, i + 4096));
  return s;
}

/** strlen(buf) + 1, capped at the buffer's length: what the server writes back. */
export function cStringBytes(buf: Uint8Array): number {
  const end = buf.indexOf(0);
  return end < 0 ? buf.length : end + 1;
}
