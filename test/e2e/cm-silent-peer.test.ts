/**
 * The RDMA CM tools against a silent peer: an address in a namespace of this test where
 * nothing speaks RoCE, so every REQ or SIDR_REQ goes unanswered. Each tool ends with exit 1 once
 * the CM's own retries have run out (here --cm-timeout 8 --cm-retries 1: two REQs 2.15 s apart),
 * with the CM's UNREACHABLE naming the retries, and `ok: false` in --json; never a hang, and never
 * a fixed timeout that does not say which timer ran out.
 *
 * @group netns
 */
import { type NetnsPair, pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, startRoce } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);
const CM = ['--cm-timeout', '8', '--cm-retries', '1', '--driver', 'packet', '--json'];

describe('RDMA CM tools against a silent peer', () => {
  const net = pairPerFile(reason, { mtu: 1500 });

  const cases: [string, (n: NetnsPair) => string[], RegExp][] = [
    ['rping', (n) => ['rping', '-c', '-a', n.ipB, '-C', '1'], /REQ not answered after 1 retries/],
    ['cmatose', (n) => ['cmatose', '-s', n.ipB, '-c', '2'], /REQ not answered after 1 retries/],
    ['rdma-client', (n) => ['rdma-client', '-s', n.ipB], /REQ not answered after 1 retries/],
    ['udaddy', (n) => ['udaddy', '-s', n.ipB], /SIDR_REQ not answered after 1 retries/],
    ['perftest -R', (n) => ['perftest', 'write', '-R', n.ipB, '--dev', n.ifA], /not answered after 1 retries|UNREACHABLE/],
  ];
  for (const [name, argv, why] of cases) {
    t(
      `${name}: exit 1 after the CM's retries, the reason named`,
      async () => {
        const n = net();
        const r = await startRoce(n.nsA, [...argv(n), ...CM], 40_000).done;
        expect({ code: r.code, timedOut: r.timedOut, why: explain(r) }).toMatchObject({ code: 1, timedOut: false });
        expect(r.json?.['ok']).toBe(false);
        // Not killed by the harness: the CM's retries ended it (two REQs 2.15 s apart), and said so.
        expect(`${String(r.json?.['error'])} ${r.stderr}`).toMatch(why);
      },
      45_000,
    );
  }
});
