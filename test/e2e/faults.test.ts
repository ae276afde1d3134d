/**
 * Faults on a real link: 2 % of the RoCE frames lost at each end, with every byte verified; and
 * one side killed mid-transfer, after which the other side's QP ends with an error completion
 * (RETRY_EXC_ERR after its retries) and its process exits on its own.
 *
 * The loss comes from the stack's own fault injector on each process's driver (ROCE_FAULTS,
 * nic-driver/fault-driver.ts): frames the NIC received are dropped before the stack sees them.
 * The kernel cannot drop them for us on a veth: AF_PACKET sockets (ETH_P_ALL taps) and XDP take
 * every frame before the netdev ingress hook runs, so an nftables drop there removes nothing they
 * see; on the egress hook, a dropped AF_PACKET frame fails its sendmmsg with ENOBUFS (which the
 * driver takes for a full queue and sends again), and AF_XDP transmits past the hook.
 *
 * @group netns
 */
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, roceServerClient, runPair, HOST_DRIVERS } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const net = pairPerFile(reason, { mtu: 9000 });

/** 2 % of the frames each process receives are lost: 2 % each way. */
const LOSS = { ROCE_FAULTS: JSON.stringify({ rx: { drop: 0.02 } }) };

/**
 * Gaps seen by sequence, the counters rxe names for them: requests after a lost one (responder),
 * sequence-error NAKs (requester), READ responses after a lost one (implied NAK). A local ACK
 * timeout is not counted: one fires without any loss when the peer is slow.
 */
function gapsSeen(c: Record<string, number> | undefined): number {
  if (c === undefined) return 0;
  return (c['out_of_seq_request'] ?? 0) + (c['rcvd_seq_err'] ?? 0) + (c['implied_nak'] ?? 0);
}

describe('2 % of the RoCE frames lost at each end, data verified', () => {
  for (const [driver, label] of HOST_DRIVERS) {
    for (const [verb, size, iters] of [
      ['write', '65536', '200'],
      ['read', '65536', '200'],
      ['send', '8192', '400'],
    ] as const) {
      t(
        `${label}: ${verb} with --verify gets every byte through`,
        async () => {
          const p = net();
          // -u 14 (perftest's default): a 67 ms local ACK timeout and 7 retries, so a QP gives up only
          // after about half a second without an answer, far beyond what a loaded 2-core machine
          // stalls a process for (up to ~100 ms seen). The few losses only a timeout recovers (the
          // last packet of a burst, an ACK or NAK) cost 67 ms each; the others a NAK recovers at once.
          const { server, client } = await runPair(p, 'perftest', [verb, '-s', size, '-n', iters, '-u', '14', '--verify'], {
            driver,
            timeoutMs: 40_000,
            env: LOSS,
          });
          // On failure, say what each side printed (a timeout's message says where the QP stood).
          if (client.code !== 0 || server.code !== 0 || client.json?.['ok'] !== true || server.json?.['ok'] !== true) {
            throw new Error(`client: ${explain(client)}\nserver: ${explain(server)}`);
          }
          const cv = client.json?.['verify'] as { bytesChecked: number; mismatches: number };
          const sv = server.json?.['verify'] as { bytesChecked: number; mismatches: number };
          expect(cv.bytesChecked + sv.bytesChecked).toBeGreaterThan(0);
          expect(cv.mismatches + sv.mismatches).toBe(0);
          // The loss was real: somebody noticed a gap in the PSNs and recovered.
          const n = gapsSeen(client.json?.['counters'] as Record<string, number>) + gapsSeen(server.json?.['counters'] as Record<string, number>);
          expect(n).toBeGreaterThan(0);
        },
        50_000,
      );
    }
  }
});

describe('one side killed mid-transfer', () => {
  for (const [driver, label] of HOST_DRIVERS) {
    t(
      `${label}: the WRITE requester's QP ends in RETRY_EXC_ERR and it exits`,
      async () => {
        const p = net();
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
      },
      40_000,
    );

    t(
      `${label}: a ping-pong peer killed: the survivor ends in an error (RETRY_EXC_ERR, or no progress), never a hang`,
      async () => {
        const p = net();
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
      },
      40_000,
    );
  }
});
