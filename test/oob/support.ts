/** Helpers for the out-of-band session tests: a simulated pair whose clock runs with the event loop. */
import type { AllocationOrder } from '../../stack/allocation-order';
import * as net from 'node:net';
import { createSimPair, type SimPair } from '../../apps/sim/sim-pair';
import { pumpVirtualClock, type ClockPump } from '../../apps/host/clock-pump';

export interface PumpedPair {
  sim: SimPair;
  pump: ClockPump;
  stop(): void;
}

export function pumpedPair(seed = 3, allocation?: AllocationOrder): PumpedPair {
  const sim = createSimPair({ seed, ...(allocation !== undefined ? { allocation } : {}) });
  const pump = pumpVirtualClock(sim.clock);
  return { sim, pump, stop: () => pump.stop() };
}

/** A raw TCP peer on 127.0.0.1 that a test scripts byte by byte. */
export class ScriptPeer {
  private buf = Buffer.alloc(0);
  private waiting: { n: number; resolve: (b: Buffer) => void; reject: (e: Error) => void } | null = null;
  private ended = false;
  constructor(readonly sock: net.Socket) {
    sock.setNoDelay(true);
    sock.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.serve();
    });
    sock.on('close', () => {
      this.ended = true;
      this.serve();
    });
    sock.on('error', () => undefined);
  }
  /** Reads exactly n bytes (fails the test after 5 s or when the other side closes first). */
  read(n: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`script peer: timed out reading ${n} bytes (have ${this.buf.length})`)), 5000);
      this.waiting = {
        n,
        resolve: (b) => {
          clearTimeout(t);
          resolve(b);
        },
        reject: (e) => {
          clearTimeout(t);
          reject(e);
        },
      };
      this.serve();
    });
  }
  write(b: Uint8Array | string): void {
    this.sock.write(typeof b === 'string' ? Buffer.from(b, 'latin1') : b);
  }
  close(): void {
    this.sock.end();
  }
  private serve(): void {
    const w = this.waiting;
    if (w === null) return;
    if (this.buf.length >= w.n) {
      this.waiting = null;
      const out = this.buf.subarray(0, w.n);
      this.buf = this.buf.subarray(w.n);
      w.resolve(Buffer.from(out));
    } else if (this.ended) {
      this.waiting = null;
      w.reject(new Error(`script peer: connection closed with ${this.buf.length} of ${w.n} bytes`));
    }
  }
}

/** Listens on a free 127.0.0.1 port; `peer` is the first connection, scripted. */
export async function scriptServer(): Promise<{ port: number; peer: Promise<ScriptPeer>; close(): void }> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const peer = new Promise<ScriptPeer>((r) => server.once('connection', (s) => r(new ScriptPeer(s))));
  return { port: (server.address() as net.AddressInfo).port, peer, close: () => server.close() };
}

/** Connects a scripted client to `port`, retrying while nobody listens. */
export async function scriptClient(port: number): Promise<ScriptPeer> {
  for (let i = 0; i < 100; i++) {
    try {
      const s = await new Promise<net.Socket>((resolve, reject) => {
        const c = net.connect({ host: '127.0.0.1', port });
        c.once('connect', () => resolve(c));
        c.once('error', reject);
      });
      return new ScriptPeer(s);
    } catch {
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  throw new Error(`script client: nobody listens on ${port}`);
}

/** A free TCP port on 127.0.0.1 (closed again; tiny race, fine for tests). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** printf("%0Nx"), independent of the code under test. */
export const hx = (v: number | bigint, w: number): string => v.toString(16).padStart(w, '0');

/** KEY_PRINT_FMT_GID written out by hand. */
export function keyGid(f: { lid?: number; outReads: number; qpn: number; psn: number; rkey: number; vaddr: bigint; gid: Uint8Array; srqn?: number }): string {
  return `${hx(f.lid ?? 0, 4)}:${hx(f.outReads, 4)}:${hx(f.qpn, 6)}:${hx(f.psn, 6)}:${hx(f.rkey, 8)}:${hx(f.vaddr, 16)}:${Array.from(f.gid, (b) => `${hx(b, 2)}:`).join('')}${hx(f.srqn ?? 0, 8)}:\0`;
}

/** Parses a KEY_PRINT_FMT_GID message with a regular expression (not with the code under test). */
export function parseKeyGid(b: Buffer): { outReads: number; qpn: number; psn: number; rkey: number; vaddr: bigint; gid: number[] } {
  const m = /^0000:([0-9a-f]{4}):([0-9a-f]{6}):([0-9a-f]{6}):([0-9a-f]{8}):([0-9a-f]{16}):((?:[0-9a-f]{2}:){16})00000000:\0$/.exec(b.toString('latin1'));
  if (m === null) throw new Error(`not a KEY_PRINT_FMT_GID message: ${JSON.stringify(b.toString('latin1'))}`);
  return {
    outReads: parseInt(m[1] as string, 16),
    qpn: parseInt(m[2] as string, 16),
    psn: parseInt(m[3] as string, 16),
    rkey: parseInt(m[4] as string, 16),
    vaddr: BigInt(`0x${m[5] as string}`),
    gid: (m[6] as string)
      .split(':')
      .filter((s) => s !== '')
      .map((s) => parseInt(s, 16)),
  };
}
