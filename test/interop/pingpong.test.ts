/**
 * Interop with Linux rdma_rxe: ibv_rc_pingpong, ibv_uc_pingpong and ibv_ud_pingpong from
 * rdma-core (unmodified, in a qemu guest) against `roce pingpong`, each in both roles.
 * Two guest boots: netdev MTU 1500 (RoCE MTU 1024) and 4200 (RoCE MTU 4096).
 * Run alone with: npm run test:interop -- -t pingpong   (see docs/interop.md)
 */
import { type LabRun, type Step, interopSkipReason, runLab } from './lab';
import { analyseRun, expectCleanCapture, expectConversations, expectNoViolations, expectPingpong, expectReplays, stepOf } from './checks';
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
    const host = `$ROCE pingpong ${c.type === 'rc' ? '' : `--type ${c.type} `}${c.guestRole === 'server' ? '$RXE_GUEST_IP ' : ''}-d $RXE_TAP ${c.flags} -n ${c.iters} -c --json --timeout 50`.replace(/ +/g, ' ');
    return { id: c.id, guestRole: c.guestRole, guest, host, timeoutS: 60 };
  });
}

function both(first: number, name: string, type: Case['type'], size: number, iters: number, mtu: number, flags: string, guestFlags = ''): Case[] {
  return (['server', 'client'] as const).map((guestRole, k) => ({ id: first + k, name: `${name}, ${guestRole === 'server' ? 'roce-ts client' : 'roce-ts server'}`, type, guestRole, size, iters, mtu, flags, guestFlags }));
}

// Iterations are trimmed for TCG (a round trip costs milliseconds in the guest); every case stays.
const MTU1024: Case[] = [
  ...both(1, 'rc default size (4096)', 'rc', 4096, 50, 1024, ''),
  ...both(3, 'rc -s 65536', 'rc', 65536, 20, 1024, '-s 65536'),
  ...both(5, 'rc -m 1024 -n 100, guest -e', 'rc', 4096, 100, 1024, '-m 1024', '-e'),
  ...both(7, 'uc', 'uc', 4096, 50, 1024, ''),
  ...both(9, 'ud -s 1024', 'ud', 1024, 50, 1024, '-s 1024'),
];
const MTU4096: Case[] = [...both(1, 'rc -m 4096', 'rc', 4096, 50, 4096, '-m 4096'), ...both(3, 'rc -m 4096 -s 65536', 'rc', 65536, 20, 4096, '-m 4096 -s 65536'), ...both(5, 'ud -s 4096', 'ud', 4096, 50, 4096, '-s 4096')];

for (const [label, mtu, cases] of [
  ['netdev MTU 1500 (RoCE 1024)', 1500, MTU1024],
  ['netdev MTU 4200 (RoCE 4096)', 4200, MTU4096],
] as const) {
  d(`rdma-core pingpong tools against roce pingpong, ${label}`, () => {
    let run: LabRun;
    beforeAll(async () => {
      run = await runLab(`pingpong-mtu${mtu}`, steps(cases), { mtu });
    }, 600_000);

    test('the guest booted, ran every step and powered off; the capture decodes with valid ICRCs', () => {
      expect(run.console).toMatch(/RXE-READY 198\.18\.0\.1 gid-index \d+ mtu \d+ active_mtu \d+/);
      expect(run.console).toContain('RXE-END');
      expectCleanCapture(run.capture);
    });

    test.each(cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
      expectPingpong(run, stepOf(run, c.id), { type: c.type, size: c.size, iters: c.iters, mtu: c.mtu, guestRole: c.guestRole });
    });

    let analysis: AnalysisResult | undefined;
    const analysed = (): AnalysisResult => (analysis ??= analyseRun(run));
    test('roce analyze: one conversation per step with the QPNs both sides printed, no bad frame, no rule violation', () => {
      expectConversations(run, analysed(), cases.map((c) => ({ id: c.id, type: c.type })));
      expectNoViolations(analysed());
    });
    test('roce replay, both roles: the stack answers like rxe and rxe like the stack (no violation)', async () => {
      await expectReplays(run, analysed());
    }, 60_000);
  });
}
