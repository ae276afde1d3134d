/**
 * Helpers of the reopen tests (af-xdp-reopen, af-packet-reopen): carry a frame each way between
 * two drivers and wait for it, name the round in an open's error, and run a child process that
 * holds a socket until it is killed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { NicDriver } from '../../nic-driver/driver';
import type { NetnsPair } from '../support/netns';
import { testFrame, udpBetween } from './driver-suite';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until `d` receives a frame equal to `want` (other frames are skipped), polling every
 * millisecond; throws after `timeoutMs`, a bound far above what a veth needs.
 */
export async function awaitFrame(d: NicDriver, want: Uint8Array, what: string, timeoutMs = 5000): Promise<void> {
  const wanted = Buffer.from(want);
  const until = Date.now() + timeoutMs;
  let seen = 0;
  for (;;) {
    for (const f of d.rxBurst(64)) {
      seen++;
      if (wanted.equals(f)) return;
    }
    if (Date.now() >= until) throw new Error(`${what}: the frame did not arrive within ${timeoutMs} ms (${seen} other frames seen)`);
    await sleep(1);
  }
}

/** A UDP 4791 frame from b to a and one back (a on end a of `p`, b on end b), each awaited on the other end. */
export async function exchange(p: NetnsPair, a: NicDriver, b: NicDriver, seq: number, what: string): Promise<void> {
  const kind = udpBetween(() => p);
  const out = testFrame(b, a, seq, 120, kind);
  expect(b.txBurst([out])).toBe(1);
  await awaitFrame(a, out, `${what}: b to a`);
  const back = testFrame(a, b, seq, 130, kind);
  expect(a.txBurst([back])).toBe(1);
  await awaitFrame(b, back, `${what}: a to b`);
}

/** `open()`, its error (if any) rethrown with the round named. */
export function openInRound<T>(round: number, open: () => T): T {
  try {
    return open();
  } catch (e) {
    throw new Error(`round ${round}: ${(e as { code?: string }).code ?? ''} ${(e as Error).message}`);
  }
}

/** How long a holder child lives at most, whatever happens to the test. */
const CHILD_LIFETIME_MS = 30_000;

/**
 * Starts `node -e script` and resolves once it printed READY (within 10 s). `script` opens its
 * socket, prints READY and keeps the event loop alive; the child ends itself after 30 s anyway.
 */
export async function startHolder(script: string): Promise<ChildProcess> {
  const body = `${script}\nsetTimeout(() => process.exit(3), ${CHILD_LIFETIME_MS});`;
  const child = spawn(process.execPath, ['-e', body], { stdio: ['ignore', 'pipe', 'pipe'], timeout: CHILD_LIFETIME_MS + 5000, killSignal: 'SIGKILL' });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the child did not open its socket within 10 s')), 10_000);
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('READY')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once('exit', (code, sig) => {
        clearTimeout(timer);
        reject(new Error(`the child exited before it was ready (${String(code ?? sig)}): ${err.trim()}`));
      });
    });
  } catch (e) {
    await killAndReap(child);
    throw e;
  }
  return child;
}

/**
 * SIGKILLs the child and resolves once it is reaped: by then the kernel has closed its sockets (a
 * dying task releases its files before its parent is notified). Rejects after 10 s.
 */
export async function killAndReap(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`child ${String(child.pid)} did not exit within 10 s of SIGKILL`)), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGKILL');
  });
}
