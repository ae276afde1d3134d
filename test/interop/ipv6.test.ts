/**
 * Interop with Linux rdma_rxe over IPv6 GIDs: in one guest boot with IPv6 addresses
 * (run.sh --ipv6: the guest fd00:198:18::1, the tap fd00:198:18::2, and each its link-local
 * address from the MAC), ibv_rc_pingpong and ib_write_bw in both roles, once with the link-local
 * RoCE v2 GIDs on both ends and once with the global ones. The out-of-band exchanges stay on IPv4
 * TCP; the RoCE frames are IPv6 (the ICRC over the IPv6 header, hop limit and flow label masked).
 * roce-ts's GID table on the tap is rxe's order: 0 the link-local GID, 1 the IPv4-mapped, 2 the
 * global IPv6 one.
 *
 * @group interop
 */
import { type LabRun, type Step, GUEST_IP6, HOST_IP6, describe as describeStep, interopSkipReason, pingpongNumbers, perftestRow, runLab } from './lab';
import { expectCleanCapture, stepOf } from './checks';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe IPv6 interop [skipped: ${skip}]`, () => undefined);

interface Case {
  id: number;
  tool: 'rc_pingpong' | 'ib_write_bw';
  gid: 'link-local' | 'global';
  guestRole: 'server' | 'client';
}

const CASES: Case[] = [];
for (const tool of ['rc_pingpong', 'ib_write_bw'] as const) {
  for (const gid of ['link-local', 'global'] as const) {
    for (const guestRole of ['server', 'client'] as const) CASES.push({ id: CASES.length + 1, tool, gid, guestRole });
  }
}
const ITERS = 20;
const SIZE = 4096;

const STEPS: Step[] = CASES.map((c) => {
  const guestGid = c.gid === 'link-local' ? '@GID6LL@' : '@GID6@';
  const hostGid = c.gid === 'link-local' ? 0 : 2;
  const peer = c.guestRole === 'client' ? ' @PEER@' : '';
  const server = c.guestRole === 'server' ? ' $RXE_GUEST_IP' : '';
  return c.tool === 'rc_pingpong'
    ? {
        id: c.id,
        guestRole: c.guestRole,
        guest: `ibv_rc_pingpong -g ${guestGid} -s ${SIZE} -n ${ITERS} -c${peer}`,
        host: `$ROCE pingpong${server} -d $RXE_TAP -g ${hostGid} -s ${SIZE} -n ${ITERS} -c --json --timeout 50`,
        timeoutS: 60,
      }
    : {
        id: c.id,
        guestRole: c.guestRole,
        guest: `ib_write_bw -d rxe0 -x ${guestGid} -s ${SIZE} -n ${ITERS * 5} -F${peer}`,
        host: `$ROCE perftest write${server} -d $RXE_TAP -x ${hostGid} -s ${SIZE} -n ${ITERS * 5} --json --timeout 50`,
        timeoutS: 60,
      };
});

const title = (c: Case): string => `${c.tool}, ${c.gid} GIDs, ${c.guestRole === 'server' ? 'roce-ts client' : 'roce-ts server'}`;

d('rdma-core and perftest against roce-ts over IPv6 GIDs', () => {
  let run: LabRun;
  let guestLl = '';
  beforeAll(async () => {
    run = await runLab('ipv6', STEPS, { ipv6: true });
    guestLl = /RXE-GID6 link-local (\d+) global (\d+)/.exec(run.console)?.[0] ?? '';
  }, 600_000);

  test('the guest has RoCE v2 GIDs for its link-local and global IPv6 addresses; every frame is IPv6 with a valid ICRC', () => {
    expect(run.console).toMatch(/RXE-GID6 link-local \d+ global \d+/);
    expect(guestLl).not.toBe('');
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
    // RoCE v2 over IPv6 only: every RoCE frame's source is one of the four IPv6 addresses.
    const sources = Object.keys(run.capture.bySource);
    expect(sources.length).toBeGreaterThanOrEqual(2);
    for (const s of sources) expect(s).toMatch(/^(fe80:|fd00:198:18::)/);
  });

  test.each(CASES.map((c) => [title(c), c] as const))('%s', (_n, c) => {
    const s = stepOf(run, c.id);
    expect({ guest: s.guestRc, host: s.hostRc, why: s.guestRc === 0 && s.hostRc === 0 ? '' : describeStep(s) }).toEqual({ guest: 0, host: 0, why: '' });
    const j = s.hostJson as { ok: boolean; local: { gid: string; qpn: number }; remote: { gid: string; qpn: number } } | null;
    expect(j?.ok).toBe(true);
    const local = j?.local.gid ?? '';
    const remote = j?.remote.gid ?? '';
    if (c.gid === 'link-local') {
      expect(local).toMatch(/^fe80::/);
      expect(remote).toMatch(/^fe80::/);
    } else {
      expect(local).toBe(HOST_IP6);
      expect(remote).toBe(GUEST_IP6);
    }
    // The frames to each end's QP, from the capture: IPv6 both ways.
    expect(run.capture.toQp[`${remote}/${j?.remote.qpn}`] ?? 0).toBeGreaterThan(0);
    expect(run.capture.toQp[`${local}/${j?.local.qpn}`] ?? 0).toBeGreaterThan(0);
    if (c.tool === 'rc_pingpong') expect(pingpongNumbers(s.guestOut)).toEqual({ bytes: SIZE * ITERS * 2, iters: ITERS });
    else expect(perftestRow(s.guestOut)).toEqual({ bytes: SIZE, iters: ITERS * 5 });
  });
});
