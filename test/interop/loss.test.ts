/**
 * Interop with Linux rdma_rxe under 2 % loss each way: rc_pingpong and ib_write_bw in both
 * roles. Frames to the guest are dropped by an nftables numgen rule on the guest's eth0
 * ingress (the stack's AF_XDP frames pass no host hook: see docs/interop.md); frames to the
 * stack by its own fault injector (ROCE_FAULTS, nic-driver/fault-driver.ts). The runs
 * complete with correct data, and the capture shows both sides recovering (NAK or timeout,
 * then retransmission).
 *
 * @group interop
 */
import { type LabRun, type Step, GUEST_IP, HOST_IP, interopSkipReason, runLab } from './lab';
import {
  analyseRun,
  expectCleanCapture,
  expectConversations,
  expectNoViolations,
  expectPerftest,
  expectPingpongUnderLoss,
  recoveryBySide,
  stepOf,
} from './checks';
import { RECEIVE_DEPENDENT_RULES } from '../../analysis/gbn-checks';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe loss interop [skipped: ${skip}]`, () => undefined);

const FAULTS = `ROCE_FAULTS='{"rx":{"drop":0.02}}'`;
const STEPS: Step[] = [
  {
    id: 1,
    guestRole: 'server',
    guest: 'ibv_rc_pingpong -g @GID@ -n 100 -c',
    host: `${FAULTS} $ROCE pingpong $RXE_GUEST_IP -d $RXE_TAP -n 100 -c --json --timeout 100`,
    timeoutS: 110,
  },
  {
    id: 2,
    guestRole: 'client',
    guest: 'ibv_rc_pingpong -g @GID@ -n 100 -c @PEER@',
    host: `${FAULTS} $ROCE pingpong -d $RXE_TAP -n 100 -c --json --timeout 100`,
    timeoutS: 110,
  },
  {
    id: 3,
    guestRole: 'server',
    guest: 'ib_write_bw -d rxe0 -x @GID@ -n 50 -F',
    host: `${FAULTS} $ROCE perftest write $RXE_GUEST_IP -d $RXE_TAP -n 50 --json --timeout 100`,
    timeoutS: 110,
  },
  {
    id: 4,
    guestRole: 'client',
    guest: 'ib_write_bw -d rxe0 -x @GID@ -n 50 -F @PEER@',
    host: `${FAULTS} $ROCE perftest write -d $RXE_TAP -n 50 --json --timeout 100`,
    timeoutS: 110,
  },
];

d('2% loss each way: rc_pingpong and ib_write_bw against roce-ts', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('loss-2pct', STEPS, { guestLoss: 200 });
  }, 900_000);

  test('the capture decodes with valid ICRCs; frames were dropped on both sides', () => {
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
    expect(run.guestNft).toMatch(/^packets [1-9]\d* bytes \d+$/);
  });

  test('rxe and the stack both recovered (retransmissions after NAK or timeout by each side)', () => {
    const g = run.capture.bySource[GUEST_IP];
    const h = run.capture.bySource[HOST_IP];
    expect(g?.retransmits ?? 0).toBeGreaterThan(0);
    expect(h?.retransmits ?? 0).toBeGreaterThan(0);
    expect((g?.naks ?? 0) + (h?.naks ?? 0)).toBeGreaterThan(0);
  });

  // The capture (qemu filter-dump on the guest's netdev) sees every frame as sent: the drops
  // (nftables in the guest, the stack's receive fault injector) come after it. So the analysis
  // is told `capturePoint: 'sent'`: rules on how a requester reacts to what it received are
  // not checked (a NAK or ACK in the capture may have been dropped before it arrived).
  test('roce analyze (capture point: as sent): conversations per step, no bad frame, no violation of the rules this capture point can check', () => {
    const r = analyseRun(run, 'sent');
    expectConversations(
      run,
      r,
      STEPS.map((s) => ({ id: s.id, type: 'rc' as const })),
    );
    expect(r.rulesNotChecked).toEqual([...RECEIVE_DEPENDENT_RULES]);
    expectNoViolations(r);
    // Both sides lost requests and recovered: retransmissions, episodes started by a NAK and by a
    // timeout, and NAKs sent by each side (rxe's to the stack's requests, the stack's to rxe's).
    const by = recoveryBySide(r);
    for (const ip of [GUEST_IP, HOST_IP]) {
      const s = by[ip];
      expect({
        ip,
        retransmitted: (s?.retransmissions ?? 0) > 0,
        episodes: (s?.nakEpisodes ?? 0) + (s?.timeoutEpisodes ?? 0) > 0,
        naked: (s?.naksReceived ?? 0) > 0,
      }).toEqual({ ip, retransmitted: true, episodes: true, naked: true });
    }
    expect(r.episodes.some((e) => e.trigger === 'nak')).toBe(true);
    expect(r.episodes.some((e) => e.trigger === 'timeout')).toBe(true);
  });

  test('roce analyze without the capture point: only the receive-dependent rules can fire (the early-looking resends)', () => {
    // With loss after the capture point a resend may follow an ACK that was captured but dropped
    // before the requester got it; that shows up (if at all) only as a receive-dependent rule.
    const r = analyseRun(run);
    expect(r.violations.every((v) => RECEIVE_DEPENDENT_RULES.includes(v.rule))).toBe(true);
  });

  test('rc_pingpong -n 100 with loss, roce-ts client', () => {
    expectPingpongUnderLoss(run, stepOf(run, 1), { type: 'rc', size: 4096, iters: 100, mtu: 1024, guestRole: 'server' });
  });
  test('rc_pingpong -n 100 with loss, roce-ts server', () => {
    expectPingpongUnderLoss(run, stepOf(run, 2), { type: 'rc', size: 4096, iters: 100, mtu: 1024, guestRole: 'client' });
  });
  test('ib_write_bw -n 50 with loss, roce-ts client', () => {
    expectPerftest(run, stepOf(run, 3), { verb: 'write', lat: false, size: 65536, iters: 50, guestRole: 'server' });
  });
  test('ib_write_bw -n 50 with loss, roce-ts server', () => {
    expectPerftest(run, stepOf(run, 4), { verb: 'write', lat: false, size: 65536, iters: 50, guestRole: 'client' });
  });
});
