/** `roce pingpong --type uc|ud` and `-c` (ibv_uc_pingpong, ibv_ud_pingpong, rc_pingpong's buffer check) over the memory test mode. */
import { pingpongPattern } from '../../apps/pingpong/pingpong';
import { freePort } from '../oob/support';
import { roce } from '../support/cli';

/** `roce pingpong ARGS`: exit status and output (a usage error is status 2 and one line, as from the shell). */
function cmd(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return roce('pingpong', ...argv);
}

test.each([
  ['rc', '9000'],
  ['uc', '9000'],
  ['ud', '1000'],
])(
  '--type %s -c: both ends check every message',
  async (type, size) => {
    const port = String(await freePort());
    const common = ['--driver', 'memory', '-p', port, '-n', '30', '-s', size, '-c', '--type', type, '--json', '--timeout', '20'];
    const [sr, cr] = await Promise.all([cmd('-d', 'sim-b', '--bind', '127.0.0.1', ...common), cmd('127.0.0.1', '-d', 'sim-a', ...common)]);
    expect([sr.code, cr.code, sr.err, cr.err]).toEqual([0, 0, '', '']);
    for (const out of [sr.out, cr.out]) {
      const r = JSON.parse(out) as Record<string, unknown>;
      expect(r).toMatchObject({ ok: true, test: `${type}_pingpong`, msgSize: Number(size), bytes: Number(size) * 30 * 2, messages: 60 });
      expect(r['verify']).toEqual({ enabled: true, messagesChecked: 30, bytesChecked: 30 * Number(size), mismatches: 0 });
    }
  },
  20_000,
);

test('the -c pattern has a zero at every page start (what the tools check) and no other zero', () => {
  const p = pingpongPattern(3 * 4096 + 10);
  for (let i = 0; i < p.length; i++) expect(p[i] === 0).toBe(i % 4096 === 0);
});

test.each([
  [['-d', 'x', '--type', 'xrc'], /--type must be rc, uc or ud/],
  [['-d', 'x', '--type', 'ud', '-m', '1024'], /--mtu does not apply to ud/],
])('usage error %j', async (argv, msg) => {
  const r = await cmd(...(argv as string[]));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});
