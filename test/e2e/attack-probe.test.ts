/**
 * Issue 15 finding 1: a live transfer under attack fails fast and says so. Two stacks over a veth
 * pair (AF_PACKET), `roce perftest write -D N -s 4096` between them; `roce attack` from the
 * client's namespace floods the server's QP (0x11, the first user QP of a fresh stack, as in rxe)
 * with mixed bad frames at and around its expected PSN, which it follows from the server's ACKs.
 * Both ends must exit non-zero within the bound their QP timers give (apps/host/no-progress-bound.ts,
 * about 2.5 s with perftest's timeout 14), naming the cause; without the attack the same pair
 * finishes. No --timeout is given: the bounds are the derived ones.
 */
import { type NetnsPair, createNetnsPair, destroyNetnsPair } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, startRoce } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let net: NetnsPair | null = null;
beforeAll(() => {
  if (reason === null) net = createNetnsPair({ mtu: 9000 });
});
afterAll(() => {
  if (net !== null) destroyNetnsPair(net);
  net = null;
});

let port = 30000 + Math.floor(Math.random() * 20000);

function pair(p: NetnsPair, seconds: number): { server: ReturnType<typeof startRoce>; client: ReturnType<typeof startRoce> } {
  const common = ['--driver', 'packet', '--port', String(port++), '--json'];
  const args = ['perftest', 'write', '-D', String(seconds), '-f', '1', '-s', '4096'];
  const server = startRoce(p.nsB, [...args, '--dev', p.ifB, ...common], 30_000);
  const client = startRoce(p.nsA, [...args, p.ipB, '--dev', p.ifA, ...common], 30_000);
  return { server, client };
}

describe('roce attack against a live perftest (AF_PACKET)', () => {
  t('without the attack, perftest write -D 3 finishes on both ends', async () => {
    const p = net as NetnsPair;
    const { server, client } = pair(p, 3);
    const [s, c] = await Promise.all([server.done, client.done]);
    if (s.code !== 0 || c.code !== 0) throw new Error(`client: ${explain(c)}\nserver: ${explain(s)}`);
    expect(c.json?.['ok']).toBe(true);
    expect(s.json?.['ok']).toBe(true);
  }, 40_000);

  t('a mixed flood at the server\'s QP: both ends exit non-zero within the bound of their timers, naming the cause', async () => {
    const p = net as NetnsPair;
    const { server, client } = pair(p, 8);
    await sleep(2500); // both up, the QPs connected and the transfer running
    const attack = startRoce(p.nsA, ['attack', p.ipB, '--dev', p.ifA, '--driver', 'packet', '--qpn', '0x11', '--psn', 'follow', '--psn-window', '4', ...(process.env['ATK'] ?? '').split(' '), '--json'], 20_000);
    const started = Date.now();
    const [s, c, a] = await Promise.all([server.done, client.done, attack.done]);
    const sAt = Date.now() - started;
    process.stderr.write(`PROBE ${sAt} ms ${s.code} ${c.code}\nS: ${s.stderr.slice(0,500)}\nC: ${c.stderr.slice(0,700)}\nA: ${a.stdout.slice(0,300)}\n`);
    const detail = `client: ${explain(c)}\nserver: ${explain(s)}\nattack: ${explain(a)}`;
    expect({ server: s.timedOut, client: c.timedOut }).toEqual({ server: false, client: false });
    if (a.code !== 0) throw new Error(`the attack failed\n${detail}`);
    
    if (s.code === 0 || c.code === 0) throw new Error(`an end exited 0 under attack\n${detail}`);
    // Both ended well before the run's own 8 s, the way their QPs failed (not a no-progress timeout).
    expect(sAt).toBeLessThan(6000);
    for (const r of [s, c]) {
      expect(r.json?.['ok']).toBe(false);
      expect(String(r.json?.['error'])).not.toMatch(/no progress within/);
      expect(String(r.json?.['error'])).toMatch(/error state|REM_|RETRY_EXC|NAK|closed the connection/);
    }
  }, 40_000);
});
