/**
 * `roce attack --driver memory`: a third party on the memory test mode's link, against a live
 * `roce perftest write` run in the same process (virtual time). One wrong-R_Key frame at the
 * server QP's expected PSN (read from the target directly, what --psn follow learns from ACKs on a
 * real link) moves it to ERR (class C, NAK Remote Access Error): the server fails at once naming
 * its QP's error, the client with the error completion (the NAK, or its retries against a dead
 * responder); neither waits for a timeout.
 */
import { freePort } from '../oob/support';
import { roceWith } from '../support/cli';

// The attack names the server's QP by number: the devices hand out rxe's sequential numbers, so it is 0x11.
const roce = roceWith({ ...process.env, ROCE_ALLOCATION: 'sequential' });

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('one wrong-rkey frame at a live write run: both ends exit 1 naming the cause; the attack reports what it sent', async () => {
  const port = String(await freePort());
  const common = ['--driver', 'memory', '-p', port, '--json', '-s', '4096', '-n', '1000000000'];
  const server = roce('perftest', 'write', '--dev', 'sim-b', '--bind', '127.0.0.1', ...common);
  const client = roce('perftest', 'write', '127.0.0.1', '--dev', 'sim-a', ...common);
  let ended = false;
  const both = Promise.all([server, client]).then((r) => {
    ended = true;
    return r;
  });
  let attacks = 0;
  let lastAttack: { code: number; out: string; err: string } | null = null;
  // Until the QP is connected the frame finds it in INIT (dropped silently): send again until the runs end.
  while (!ended && attacks < 100) {
    await sleep(100);
    const a = await roce('attack', '198.18.0.2', '--dev', 'sim-a', '--driver', 'memory', '--qpn', '0x11', '--psn', 'follow', '--case', 'wrong-rkey', '--json');
    if (a.code === 0) lastAttack = a; // once the runs have ended and closed the link, there is nothing to attack (exit 1)
    attacks++;
  }
  const [s, c] = await both;
  expect(lastAttack).not.toBeNull();
  expect(JSON.parse(lastAttack?.out ?? '{}')).toMatchObject({ ok: true, frames: 1, perCase: { 'wrong-rkey': 1 } });
  expect(s.code).toBe(1);
  expect(c.code).toBe(1);
  expect(JSON.parse(s.out)).toMatchObject({ ok: false, code: 'ROCE_ERR_PERFTEST_COMPLETION' });
  expect(JSON.parse(s.out).error).toMatch(/QP 0x11 (went to|is in) the error state.*rkey 0x[0-9a-f]+ .*invalid key/);
  expect(JSON.parse(c.out)).toMatchObject({ ok: false, code: 'ROCE_ERR_PERFTEST_COMPLETION' });
  expect(JSON.parse(c.out).error).toMatch(/REM_ACCESS_ERR|RETRY_EXC_ERR/);
}, 60_000);

test('usage: DEST_IP, --dev and --qpn are required; unknown cases are named', async () => {
  expect((await roce('attack', '--dev', 'x', '--qpn', '17')).code).toBe(2);
  expect((await roce('attack', '198.18.0.2', '--qpn', '17')).err).toMatch(/--dev IFACE is required/);
  expect((await roce('attack', '198.18.0.2', '--dev', 'x')).err).toMatch(/--qpn N is required/);
  expect((await roce('attack', '198.18.0.2', '--dev', 'x', '--qpn', '17', '--case', 'nope')).err).toMatch(/unknown case "nope"/);
  const help = await roce('attack', '-h');
  expect(help.code).toBe(0);
  for (const c of ['wrong-rkey', 'ghost-nak', 'cnp']) expect(help.out).toContain(c);
});
