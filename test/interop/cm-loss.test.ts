/**
 * RDMA CM under loss against Linux rdma_rxe: librdmacm's rping and `roce rping`, in both roles,
 * with 2 % of the RoCE frames dropped each way and, in every step, the first CM REQ and the first
 * CM REP dropped on purpose, so that both retries happen in every run rather than by chance:
 *  - frames to the guest: nftables in the guest (eth0 ingress): 2 % at random (`guestLoss`), and a
 *    per-step table that drops the first REQ and the first REP to QP 1 by MAD attribute ID
 *    (`guestCmDrop`, scripts/rxe-lab/init);
 *  - frames to the stack: its own fault injector (ROCE_FAULTS rx: 2 % at random, DREQs excepted
 *    (below), and rules that drop the first REQ and the first REP it receives, `match.mad`).
 * So as a client the stack's first REQ dies in the guest and rxe's first REP in the stack; as a
 * server rxe's first REQ dies in the stack and the stack's first REP in the guest. The capture (qemu
 * filter-dump on the guest's netdev) is taken before both drop points: it holds every transmission,
 * and `roce analyze`'s CM report shows the retries.
 *
 * @group interop
 */
import { type LabRun, type Step, GUEST_IP, HOST_IP, interopSkipReason, runLab } from './lab';
import { analyseRun, expectCleanCapture, stepOf } from './checks';
import { CmConnectionState } from '../../analysis/cm-connections';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe CM loss interop [skipped: ${skip}]`, () => undefined);

const COUNT = 5;
const PORT = 7174;
// The DREQ is kept out of the random loss: librdmacm's rping calls rdma_disconnect() and then
// destroys its ID at once, and the kernel's CM cancels a DREQ's retransmissions when its ID is
// destroyed (cm.c, cm_destroy_id in IB_CM_DREQ_SENT). A lost DREQ from the guest is a disconnect
// no protocol recovers: the stack's server then waits out its --timeout (a fresh clone saw it,
// step 2 taking 100 s longer and failing). The stack's own DREQ is resent until a DREP comes.
const FAULTS = `ROCE_FAULTS='{"rx":{"drop":0.02,"rules":[{"action":"pass","match":{"mad":"DREQ"}},{"action":"drop","match":{"mad":"REQ"},"count":1},{"action":"drop","match":{"mad":"REP"},"count":1}]}}'`;
const STEPS: Step[] = [
  {
    id: 1,
    guestRole: 'server',
    port: PORT,
    timeoutS: 150,
    guest: `rping -s -a 0.0.0.0 -C ${COUNT} -S 64 -V -v`,
    host: `${FAULTS} $ROCE rping -c -a $RXE_GUEST_IP -C ${COUNT} -S 64 -V -v --json --timeout 100`,
  },
  {
    id: 2,
    guestRole: 'client',
    port: PORT,
    timeoutS: 150,
    guest: `rping -c -a @PEER@ -C ${COUNT} -S 64 -V -v`,
    host: `${FAULTS} $ROCE rping -s -a $RXE_HOST_IP -S 64 -v --json --timeout 100`,
  },
];

d('rping with 2% loss and the first CM REQ and REP dropped in every step (rdma_rxe guest)', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('cm-loss', STEPS, { guestLoss: 200, guestCmDrop: true });
  }, 900_000);

  test('the guest ran both steps; the capture decodes with valid ICRCs; the guest dropped the first REQ (step 1) and the first REP (step 2) it received', () => {
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
    expect(run.console).toMatch(/RXE-CMDROP 1 0x10 packets 1\b/);
    expect(run.console).toMatch(/RXE-CMDROP 2 0x13 packets 1\b/);
  });

  test.each([
    [1, 'roce-ts client', 'client'],
    [2, 'roce-ts server', 'server'],
  ] as const)('step %p (%s): the pings complete', (id, _name, role) => {
    const s = stepOf(run, id);
    // The reason is in the object only when a side failed, so that jest prints it then.
    const why = s.guestRc === 0 && s.hostRc === 0 ? '' : `guest: ${s.guestOut.slice(-1500)}\nhost: ${s.hostOut.slice(-1500)} ${s.hostErr.slice(-1500)}`;
    expect({ guest: s.guestRc, host: s.hostRc, why }).toEqual({ guest: 0, host: 0, why: '' });
    expect(s.hostJson).toMatchObject({ ok: true, test: 'rping', role, size: 64, pings: COUNT });
    expect(s.guestOut.split('\n').filter((l) => l.includes('ping data: '))).toHaveLength(COUNT);
  });

  test('roce analyze: one CM connection per step, each with a REQ retry and a REP retry, established and then disconnected, on the conversation of its QPs', () => {
    const r = analyseRun(run, 'sent');
    const rc = r.cmConnections.filter((c) => c.transport === 'RC' && c.port === PORT);
    expect(rc.map((c) => [c.active.ip, c.passive.ip])).toEqual([
      [HOST_IP, GUEST_IP],
      [GUEST_IP, HOST_IP],
    ]);
    for (const c of rc) {
      const why = JSON.stringify({ id: c.id, messages: c.messages, state: c.state });
      expect({ why, reqRetried: c.retries.req >= 1, repRetried: c.retries.rep >= 1, established: c.establishedBy !== null, rejected: c.rej }).toEqual({
        why,
        reqRetried: true,
        repRetried: true,
        established: true,
        rejected: null,
      });
      expect([CmConnectionState.DISCONNECTED, CmConnectionState.DISCONNECTING]).toContain(c.state);
      expect(c.conversation).not.toBeNull();
      const conv = r.conversations.find((x) => x.id === c.conversation);
      expect(conv?.frames ?? 0).toBeGreaterThan(0);
      // The first REQ was sent at least one response wait (about 6.4 s) before the REP came.
      expect(c.reqToRepNs ?? 0).toBeGreaterThan(4e9);
    }
  });
});
