/**
 * The out-of-band channel of rc_pingpong and perftest: one TCP connection
 * carrying fixed-size messages, each sent with a single write (perftest's
 * reader insists on getting a whole message from one read() call) and read
 * back exactly. Every read has a timeout and every failure is an `OobError`
 * saying what was being read and how much of it arrived, so a peer that
 * closes early or stays silent never leaves the caller hanging.
 */
import { RoceError } from '../../base/roce-error';
import { ProgrammingError, ProgrammingErrorCode } from '../../base/programming-error';
import * as net from 'node:net';

export const OobErrorCode = {
  /** Nothing (or not enough) arrived in time. */
  TIMEOUT: 'ROCE_ERR_OOB_TIMEOUT',
  /** The peer closed the connection, or the socket failed, before the message was complete. */
  CLOSED: 'ROCE_ERR_OOB_CLOSED',
  /** A message arrived but a field of it is not what the format allows. */
  MALFORMED: 'ROCE_ERR_OOB_MALFORMED',
  /** The TCP connection could not be set up. */
  CONNECT: 'ROCE_ERR_OOB_CONNECT',
  /** The peer speaks a version of the exchange this side does not implement. */
  INCOMPATIBLE: 'ROCE_ERR_OOB_INCOMPATIBLE',
  /** A value handed to a message encoder does not fit its field (this side's bug or configuration, not the peer's). */
  BAD_VALUE: 'ROCE_ERR_OOB_BAD_VALUE',
} as const;
export type OobErrorCode = (typeof OobErrorCode)[keyof typeof OobErrorCode];

export class OobError extends RoceError<OobErrorCode> {
  /** The message field at fault (MALFORMED, INCOMPATIBLE, BAD_VALUE), or the message being read. */
  readonly field: string | undefined;
  constructor(code: OobErrorCode, message: string, field?: string) {
    super(code, message);
    this.field = field;
  }
}

/** A MALFORMED error naming `field` of `message`. */
export function malformed(message: string, field: string, why: string): OobError {
  return new OobError(OobErrorCode.MALFORMED, `${message}: field ${field} ${why}`, field);
}

interface PendingRead {
  n: number;
  what: string;
  resolve: (b: Uint8Array) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** One connected peer. */
export class TcpChannel {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private pending: PendingRead | null = null;
  private ended = false;
  private failure: Error | null = null;
  /** Bytes received and sent so far (for reports and tests). */
  bytesIn = 0;
  bytesOut = 0;

  constructor(readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      this.bytesIn += d.length;
      this.chunks.push(d);
      this.buffered += d.length;
      this.serve();
    });
    socket.on('end', () => {
      this.ended = true;
      this.serve();
    });
    socket.on('close', () => {
      this.ended = true;
      this.serve();
    });
    socket.on('error', (e) => {
      this.failure = e;
      this.ended = true;
      this.serve();
    });
  }

  /** `host:port` of the peer. */
  get peer(): string {
    return `${this.socket.remoteAddress ?? '?'}:${this.socket.remotePort ?? '?'}`;
  }

  /**
   * Connects to a listening peer. Like a user who starts the client a little
   * before the server, it retries a refused connection until `timeoutMs` has passed.
   */
  static async connect(host: string, port: number, timeoutMs: number, retryEveryMs = 100): Promise<TcpChannel> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const sock = await connectOnce(host, port, Math.max(1, deadline - Date.now()));
        return new TcpChannel(sock);
      } catch (e) {
        // connectOnce rejects with an OobError (TIMEOUT) of its own, or with the socket's system error.
        const err = e as NodeJS.ErrnoException;
        const retryable = err.code === 'ECONNREFUSED' || err.code === 'ECONNRESET';
        if (!retryable || Date.now() + retryEveryMs >= deadline) {
          const why = e instanceof OobError || err.code === 'ETIMEDOUT' ? `no answer within ${timeoutMs} ms` : err.message;
          throw new OobError(OobErrorCode.CONNECT, `could not connect to ${host}:${port}: ${why}`);
        }
        await new Promise((r) => setTimeout(r, retryEveryMs));
      }
    }
  }

  /**
   * Listens on `port` (0 = any free port) and `host` (default every address: IPv6 and IPv4 on one
   * dual-stack socket where the host has IPv6, else every IPv4 address, as Node chooses; the
   * perftest and rc_pingpong servers accept IPv6 peers too).
   */
  static listen(port: number, host?: string): Promise<OobListener> {
    return new Promise((resolve, reject) => {
      const server = net.createServer({ pauseOnConnect: false });
      const onError = (e: NodeJS.ErrnoException): void => {
        reject(
          new OobError(
            OobErrorCode.CONNECT,
            `could not listen on ${host ?? 'any address'}, port ${port}: ${e.code === 'EADDRINUSE' ? 'address already in use' : e.message}`,
          ),
        );
      };
      server.once('error', onError);
      server.listen({ port, ...(host !== undefined ? { host } : {}), exclusive: true }, () => {
        server.off('error', onError);
        resolve(new OobListener(server));
      });
    });
  }

  /** Sends `bytes` with one write call (one segment on an idle connection, Nagle off). */
  writeExact(bytes: Uint8Array): Promise<void> {
    if (this.failure !== null || this.socket.destroyed || this.socket.writableEnded) {
      return Promise.reject(new OobError(OobErrorCode.CLOSED, `cannot send ${bytes.length} bytes: the connection to ${this.peer} is closed`));
    }
    this.bytesOut += bytes.length;
    return new Promise((resolve, reject) => {
      this.socket.write(bytes, (e) => {
        if (e) reject(new OobError(OobErrorCode.CLOSED, `sending ${bytes.length} bytes to ${this.peer} failed: ${e.message}`));
        else resolve();
      });
    });
  }

  /**
   * Reads exactly `n` bytes of `what` (a name for error messages). Data beyond
   * `n` stays buffered for the next read.
   */
  readExact(n: number, what: string, timeoutMs: number): Promise<Uint8Array> {
    if (this.pending !== null)
      return Promise.reject(new ProgrammingError(ProgrammingErrorCode.Misuse, `readExact(${what}) while a read of ${this.pending.what} is pending`));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const p = this.pending;
        this.pending = null;
        if (p !== null) {
          p.reject(
            new OobError(
              OobErrorCode.TIMEOUT,
              `timed out after ${timeoutMs} ms waiting for ${what} from ${this.peer} (${this.buffered} of ${n} bytes arrived)`,
              what,
            ),
          );
        }
      }, timeoutMs);
      this.pending = { n, what, resolve, reject, timer };
      this.serve();
    });
  }

  /** Bytes received and not yet read. */
  get available(): number {
    return this.buffered;
  }

  /** Waits until the peer closes its side (or `timeoutMs` passes); true when it did. */
  waitEnd(timeoutMs: number): Promise<boolean> {
    if (this.ended) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), timeoutMs);
      const done = (): void => {
        clearTimeout(t);
        resolve(true);
      };
      this.socket.once('close', done);
      this.socket.once('end', done);
    });
  }

  close(): void {
    if (this.pending !== null) {
      const p = this.pending;
      this.pending = null;
      clearTimeout(p.timer);
      p.reject(new OobError(OobErrorCode.CLOSED, `connection closed locally while waiting for ${p.what}`, p.what));
    }
    this.socket.end();
    this.socket.destroySoon();
  }

  private take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let off = 0;
    while (off < n) {
      const c = this.chunks[0] as Buffer;
      const k = Math.min(c.length, n - off);
      out.set(c.subarray(0, k), off);
      off += k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
    this.buffered -= n;
    return out;
  }

  private serve(): void {
    const p = this.pending;
    if (p === null) return;
    if (this.buffered >= p.n) {
      this.pending = null;
      clearTimeout(p.timer);
      p.resolve(this.take(p.n));
      return;
    }
    if (this.ended) {
      this.pending = null;
      clearTimeout(p.timer);
      const cause = this.failure !== null ? ` (${this.failure.message})` : '';
      p.reject(
        new OobError(OobErrorCode.CLOSED, `peer ${this.peer} closed the connection after ${this.buffered} of ${p.n} bytes of ${p.what}${cause}`, p.what),
      );
    }
  }
}

/** A listening socket that hands out one peer at a time. */
export class OobListener {
  private queue: net.Socket[] = [];
  private waiter: ((s: net.Socket) => void) | null = null;

  constructor(readonly server: net.Server) {
    server.on('connection', (s) => {
      if (this.waiter !== null) {
        const w = this.waiter;
        this.waiter = null;
        w(s);
      } else this.queue.push(s);
    });
  }

  get port(): number {
    const a = this.server.address();
    return typeof a === 'object' && a !== null ? a.port : 0;
  }

  /** The next peer that connects (within `timeoutMs`). */
  accept(timeoutMs: number): Promise<TcpChannel> {
    const queued = this.queue.shift();
    if (queued !== undefined) return Promise.resolve(new TcpChannel(queued));
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiter = null;
        reject(new OobError(OobErrorCode.TIMEOUT, `no client connected to port ${this.port} within ${timeoutMs} ms`, 'connection'));
      }, timeoutMs);
      this.waiter = (s) => {
        clearTimeout(t);
        resolve(new TcpChannel(s));
      };
    });
  }

  /** Stops listening (connections already accepted stay open), as the tools do after accept(). */
  close(): void {
    for (const s of this.queue) s.destroy();
    this.queue = [];
    this.server.close();
  }
}

function connectOnce(host: string, port: number, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host, port });
    const t = setTimeout(() => {
      sock.destroy();
      reject(new OobError(OobErrorCode.TIMEOUT, `no answer from ${host}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.once('connect', () => {
      clearTimeout(t);
      sock.removeAllListeners('error');
      resolve(sock);
    });
    sock.once('error', (e) => {
      clearTimeout(t);
      sock.destroy();
      reject(e);
    });
  });
}
