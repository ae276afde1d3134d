/**
 * Faults on the real network: 2 % of the RoCE frames (UDP 4791 only: ARP and the out-of-band TCP
 * pass) dropped at each veth end by an nftables `numgen random` rule, with every byte verified;
 * and one side killed mid-transfer, after which the other side's QP ends with an error
 * completion (RETRY_EXC_ERR after its retries) and its process exits on its own.
 */
import { type NetnsPair, addNftDrop, createNetnsPair, destroyNetnsPair } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, roceServerClient, runPair } from './harness';

// A run under 2 % loss has been seen to stall twice in many hundreds (perftest SEND over AF_PACKET,
// both processes waiting until the harness's 40 s limit). Until its cause is found, a failing test
// here runs once more, and the first failure is printed in full (both processes' output) so the log
// keeps what is needed to find it; see the closing note of 2026-11-22.
jest.retryTimes(1, { logErrorsBeforeRetry: true });

const reason = e2eSkipReason();
const t = testUnless(reason);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const DRIVERS = [
  ['xdp', 'AF_XDP'],
  ['packet', 'AF_PACKET'],
] as const;

let net: NetnsPair | null = null;
beforeAll(() => {
  if (reason === null) net = createNetnsPair({ mtu: 9000 });
});
afterAll(() => {
  if (net !== null) destroyNetnsPair(net);
  net = null;
});

function lossBothWays(p: NetnsPair, perTenThousand: number): () => void {
  const a = addNftDrop(p.nsA, p.ifA, perTenThousand);
  const b = addNftDrop(p.nsB, p.ifB, perTenThousand);
  return () => {
    a();
    b();
  };
}

/** Retransmissions the requester made: the counters rxe names for them. */
function retried(c: Record<string, number> | undefined): number {
  if (c === undefined) return 0;
  return (c['completer_retry_err'] ?? 0) + (c['rcvd_seq_err'] ?? 0) + (c['local_ack_timeout_err'] ?? 0) + (c['duplicate_request'] ?? 0) + (c['out_of_seq_request'] ?? 0);
}

describe('2 % loss of RoCE frames on the veth, data verified', () => {
  for (const [driver, label] of DRIVERS) {
    for (const [verb, size, iters] of [
      ['write', '65536', '200'],
      ['read', '65536', '200'],
      ['send', '8192', '400'],
    ] as const) {
      t(`${label}: ${verb} with --verify gets every byte through`, async () => {
        const p = net as NetnsPair;
        const undo = lossBothWays(p, 200);
        try {
          // -u 10: a 4 ms local ACK timeout, so each loss costs milliseconds, not 67 ms.
          const { server, client } = await runPair(p, 'perftest', [verb, '-s', size, '-n', iters, '-u', '10', '--verify'], { driver, timeoutMs: 40_000 });
          // On failure, say what each side printed: a flaky run must leave enough to find its cause.
          if (client.code !== 0 || server.code !== 0 || client.json?.['ok'] !== true || server.json?.['ok'] !== true) {
            throw new Error(`client: ${explain(client)}\nserver: ${explain(server)}`);
          }
          const cv = client.json?.['verify'] as { bytesChecked: number; mismatches: number };
          const sv = server.json?.['verify'] as { bytesChecked: number; mismatches: number };
          expect(cv.bytesChecked + sv.bytesChecked).toBeGreaterThan(0);
          expect(cv.mismatches + sv.mismatches).toBe(0);
          // The loss was real: somebody noticed a gap and recovered.
          const n = retried(client.json?.['counters'] as Record<string, number>) + retried(server.json?.['counters'] as Record<string, number>);
          expect(n).toBeGreaterThan(0);
        } finally {
          undo();
        }
      }, 50_000);
    }
  }
});

describe('one side killed mid-transfer', () => {
  for (const [driver, label] of DRIVERS) {
    t(`${label}: the WRITE requester's QP ends in RETRY_EXC_ERR and it exits`, async () => {
      const p = net as NetnsPair;
      // -u 8: 1 ms local ACK timeout, 7 retries: the error completion comes within ~50 ms of the kill.
      const { server, client } = roceServerClient(p, 'perftest', ['write', '-s', '65536', '-n', '100000000', '-u', '8'], { driver, timeoutMs: 25_000 });
      await sleep(2500); // the transfer is running (both processes up, QPs connected)
      server.kill('SIGKILL');
      const killedAt = Date.now();
      const c = await client.done;
      await server.done;
      expect(c.timedOut).toBe(false);
      expect(Date.now() - killedAt).toBeLessThan(10_000);
      expect(c.code).toBe(1);
      expect(`${c.stderr} ${JSON.stringify(c.json)}`).toMatch(/RETRY_EXC_ERR/);
    }, 40_000);

    t(`${label}: a ping-pong peer killed: the survivor ends in an error (RETRY_EXC_ERR, or no progress), never a hang`, async () => {
      const p = net as NetnsPair;
      const { server, client } = roceServerClient(p, 'pingpong', ['-s', '1024', '-n', '100000000', '--timeout', '3'], { driver, timeoutMs: 25_000 });
      await sleep(2500);
      client.kill('SIGKILL');
      const killedAt = Date.now();
      const s = await server.done;
      await client.done;
      expect(s.timedOut).toBe(false);
      // If the survivor had a SEND in flight, its QP gives up after rc_pingpong's retries (timeout 14,
      // 67 ms x 8: about half a second) with RETRY_EXC_ERR. If it was only waiting for its next receive,
      // RC cannot notice the dead peer at all; the run then ends on its 3 s no-progress timeout.
      expect(Date.now() - killedAt).toBeLessThan(10_000);
      expect(s.code).toBe(1);
      expect(`${s.stderr} ${JSON.stringify(s.json)}`).toMatch(/RETRY_EXC_ERR|no progress within 3000 ms/);
    }, 40_000);
  }
});
