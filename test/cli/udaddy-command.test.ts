/**
 * `roce udaddy`: both ends as commands in this process over the memory test mode (the in-memory
 * link on the virtual clock): udaddy's lines and exchange, --json, -c and -C/-S, a server that
 * refuses (SIDR_REP status 2), a port nobody listens on (status 1), an unanswered SIDR_REQ
 * (the CM's retries, then -ETIMEDOUT), and usage errors.
 */
import { roce } from '../support/cli';

function cmd(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return roce('udaddy', ...argv);
}

const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The server on sim-b, then (once it listens) the client on sim-a. */
async function pair(serverArgs: string[], clientArgs: string[]) {
  const s = cmd('-d', 'sim-b', '--driver', 'memory', ...serverArgs);
  await later(20);
  const c = cmd('-s', '198.18.0.2', '-d', 'sim-a', '--driver', 'memory', ...clientArgs);
  return Promise.all([s, c]);
}

test('defaults: udaddy\'s lines on both sides, ten datagrams of 100 bytes each way', async () => {
  const [sr, cr] = await pair([], []);
  expect(cr.err).toBe('');
  expect(sr.err).toBe('');
  expect(cr.code).toBe(0);
  expect(sr.code).toBe(0);
  expect(cr.out).toBe(['udaddy: starting client', 'udaddy: connecting', 'initiating data transfers', 'receiving data transfers', 'data transfers complete', 'test complete', 'return status 0', ''].join('\n'));
  expect(sr.out).toBe(['udaddy: starting server', 'receiving data transfers', 'sending replies', 'data transfers complete', 'test complete', 'return status 0', ''].join('\n'));
}, 30_000);
