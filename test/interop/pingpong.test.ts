/**
 * Interop with Linux rdma_rxe: ibv_rc_pingpong, ibv_uc_pingpong and ibv_ud_pingpong from
 * rdma-core (unmodified, in a qemu guest) against `roce pingpong`, each in both roles; and
 * ibv_srq_pingpong (16 RC QPs on one SRQ) against `roce pingpong --srq`, in both roles.
 * Two guest boots: netdev MTU 1500 (RoCE MTU 1024) and 4200 (RoCE MTU 4096).
 * Run alone with: npm run test:interop -- -t pingpong   (see docs/interop.md)
 *
 * @group interop
 */
import { type LabRun, type Step, interopSkipReason, runLab } from './lab';
import { analyseRun, expectCleanCapture, expectConversations, expectNoViolations, expectPingpong, expectReplays, stepOf, tcpConversationsOn } from './checks';
import { GUEST_IP, HOST_IP, describe as describeStep, pingpongNumbers } from './lab';
import type { AnalysisResult } from '../../analysis/analyzer';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe pingpong interop [skipped: ${skip}]`, () => undefined);

interface Case {
  id: number;
  name: string;
  type: 'rc' | 'uc' | 'ud';
  guestRole: 'server' | 'client';
  size: number;
  iters: number;
  mtu: number;
  /** Extra flags for the guest tool only (-e) and for both (-s, -m). */
  guestFlags: string;
  flags: string;
}

function steps(cases: readonly Case[]): Step[] {
  return cases.map((c) => {
    const tool = `ibv_${c.type}_pingpong`;
    const guest = `${tool} -g @GID@ ${c.flags} ${c.guestFlags} -n ${c.iters} -c${c.guestRole === 'client' ? ' @PEER@' : ''}`.replace(/ +/g, ' ');
    const host =
      `$ROCE pingpong ${c.type === 'rc' ? '' : `--type ${c.type} `}${c.guestRole === 'server' ? '$RXE_GUEST_IP ' : ''}-d $RXE_TAP ${c.flags} -n ${c.iters} -c --json --timeout 50`.replace(
        / +/g,
        ' ',
      );
    return { id: c.id, guestRole: c.guestRole, guest, host, timeoutS: 60 };
  });
}

function both(first: number, name: string, type: Case['type'], size: number, iters: number, mtu: number, flags: string, guestFlags = ''): Case[] {
  return (['server', 'client'] as const).map((guestRole, k) => ({
    id: first + k,
    name: `${name}, ${guestRole === 'server' ? 'roce-ts client' : 'roce-ts server'}`,
    type,
    guestRole,
    size,
    iters,
    mtu,
    flags,
    guestFlags,
  }));
}

// Iterations are trimmed for TCG (a round trip costs milliseconds in the guest); every case stays.
const MTU1024: Case[] = [
  ...both(1, 'rc default size (4096)', 'rc', 4096, 50, 1024, ''),
  ...both(3, 'rc -s 65536', 'rc', 65536, 20, 1024, '-s 65536'),
  ...both(5, 'rc -m 1024 -n 100, guest -e', 'rc', 4096, 100, 1024, '-m 1024', '-e'),
  ...both(7, 'uc', 'uc', 4096, 50, 1024, ''),
  ...both(9, 'ud -s 1024', 'ud', 1024, 50, 1024, '-s 1024'),
];
const MTU4096: Case[] = [
  ...both(1, 'rc -m 4096', 'rc', 4096, 50, 4096, '-m 4096'),
  ...both(3, 'rc -m 4096 -s 65536', 'rc', 65536, 20, 4096, '-m 4096 -s 65536'),
  ...both(5, 'ud -s 4096', 'ud', 4096, 50, 4096, '-s 4096'),
];

/** ibv_srq_pingpong: 16 QPs on one SRQ, -n counting over all of them (steps after the MTU 1500 boot's cases). */
const SRQ_ITERS = 64;
const SRQ: { id: number; name: string; guestRole: 'server' | 'client' }[] = (['server', 'client'] as const).map((guestRole, k) => ({
  id: MTU1024.length + 1 + k,
  name: `srq_pingpong -q 16 -n ${SRQ_ITERS}, ${guestRole === 'server' ? 'roce-ts client' : 'roce-ts server'}`,
  guestRole,
}));
const SRQ_STEPS: Step[] = SRQ.map((c) => ({
  id: c.id,
  guestRole: c.guestRole,
  guest: `ibv_srq_pingpong -g @GID@ -s 4096 -n ${SRQ_ITERS}${c.guestRole === 'client' ? ' @PEER@' : ''}`,
  host: `$ROCE pingpong --srq${c.guestRole === 'server' ? ' $RXE_GUEST_IP' : ''} -d $RXE_TAP -s 4096 -n ${SRQ_ITERS} --json --timeout 50`,
  timeoutS: 60,
}));

for (const [label, mtu, cases] of [
  ['netdev MTU 1500 (RoCE 1024)', 1500, MTU1024],
  ['netdev MTU 4200 (RoCE 4096)', 4200, MTU4096],
] as const) {
  d(`rdma-core pingpong tools against roce pingpong, ${label}`, () => {
    let run: LabRun;
    beforeAll(async () => {
      run = await runLab(`pingpong-mtu${mtu}`, [...steps(cases), ...(mtu === 1500 ? SRQ_STEPS : [])], { mtu });
    }, 600_000);

    test('the guest booted, ran every step and powered off; the capture decodes with valid ICRCs', () => {
      expect(run.console).toMatch(/RXE-READY 198\.18\.0\.1 gid-index \d+ mtu \d+ active_mtu \d+/);
      expect(run.console).toContain('RXE-END');
      expectCleanCapture(run.capture);
    });

    test.each(cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
      expectPingpong(run, stepOf(run, c.id), { type: c.type, size: c.size, iters: c.iters, mtu: c.mtu, guestRole: c.guestRole });
    });

    if (mtu === 1500) {
      test.each(SRQ.map((c) => [c.name, c] as const))('%s', (_n, c) => {
        const st = stepOf(run, c.id);
        expect({ guest: st.guestRc, host: st.hostRc, why: st.guestRc === 0 && st.hostRc === 0 ? '' : describeStep(st) }).toEqual({
          guest: 0,
          host: 0,
          why: '',
        });
        expect(pingpongNumbers(st.guestOut)).toEqual({ bytes: 4096 * SRQ_ITERS * 2, iters: SRQ_ITERS });
        const j = st.hostJson as {
          ok: boolean;
          numQp: number;
          receives: number;
          receivesPerQp: number[];
          qpPairs: { local: { qpn: number }; remote: { qpn: number } }[];
        };
        expect(j).toMatchObject({ ok: true, numQp: 16 });
        expect(j.receives).toBeGreaterThanOrEqual(SRQ_ITERS);
        // The guest printed 16 local and 16 remote addresses; each pair carried frames both ways.
        expect(st.guestOut.match(/local address: /g)).toHaveLength(16);
        expect(j.qpPairs).toHaveLength(16);
        for (const p of j.qpPairs) {
          expect(run.capture.toQp[`${GUEST_IP}/${p.remote.qpn}`] ?? 0).toBeGreaterThan(0);
          expect(run.capture.toQp[`${HOST_IP}/${p.local.qpn}`] ?? 0).toBeGreaterThan(0);
        }
        // The exchange: 256 address messages of 52 bytes each way (MAX_QP), then the client's "done".
        const conv = tcpConversationsOn(run, 18515, cases.length + SRQ.length)[c.id - 1];
        expect(conv?.toServer.length).toBe(256 * 52 + 5);
        expect(conv?.toClient.length).toBe(256 * 52);
      });
    }

    let analysis: AnalysisResult | undefined;
    const analysed = (): AnalysisResult => (analysis ??= analyseRun(run));
    test('roce analyze: one conversation per step with the QPNs both sides printed, no bad frame, no rule violation', () => {
      expectConversations(run, analysed(), [
        ...cases.map((c) => ({ id: c.id, type: c.type })),
        ...(mtu === 1500 ? SRQ.map((c) => ({ id: c.id, type: 'rc' as const, qps: 16 })) : []),
      ]);
      expectNoViolations(analysed());
    });
    test('roce replay, both roles: the stack answers like rxe and rxe like the stack (no violation)', async () => {
      await expectReplays(run, analysed());
    }, 60_000);
  });
}
