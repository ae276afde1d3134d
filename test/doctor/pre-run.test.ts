/**
 * The rulings of the checks before a live `roce probe` run that need no host: how the DUT's answer
 * on UDP 4791 is judged by its role, how a refusing DUT server is asked again (and a silence after
 * refusals confirmed, since the DUT's kernel rate-limits its ICMP), the bound from the checks'
 * timers, and the refusal's text naming each problem with its fix.
 */
import { CheckStatus, type DoctorCheck, type RocePortAnswer } from '../../apps/doctor/doctor-checks';
import { REFUSED_PAUSE_MS, askRocePort, preRunBoundMs, preRunRefusal, preRunRocePortCheck } from '../../apps/doctor/pre-run';

/** An ask that gives `answers` in turn (the last one from then on), counting its calls. */
function scripted(answers: readonly RocePortAnswer[]): { ask: (dut: string, waitMs: number) => Promise<RocePortAnswer>; calls: () => number } {
  let n = 0;
  return {
    ask: async () => answers[Math.min(n++, answers.length - 1)] as RocePortAnswer,
    calls: () => n,
  };
}

describe('checks before a live run', () => {
  test('roce-port: silence is ok in either role; a refusal is a problem from a DUT server, info from a DUT client', () => {
    expect(preRunRocePortCheck('198.18.0.1', 'responder', ['silent'], 1000, 1000)).toMatchObject({ status: CheckStatus.OK, fix: null });
    expect(preRunRocePortCheck('198.18.0.1', 'requester', ['silent'], 1000, 1000)).toMatchObject({ status: CheckStatus.OK });
    const server = preRunRocePortCheck('198.18.0.1', 'responder', ['refused', 'refused', 'refused'], 5010, 1000);
    expect(server.status).toBe(CheckStatus.PROBLEM);
    expect(server.detail).toBe(
      "198.18.0.1 answered UDP port 4791 with ICMP port unreachable (all 3 asks over 5010 ms): nothing takes RoCE v2 there, where the DUT's server should be waiting for us",
    );
    expect(server.fix).toContain("start the DUT's server before this command, or give --no-doctor");
    const client = preRunRocePortCheck('198.18.0.1', 'requester', ['refused'], 3, 1000);
    expect(client.status).toBe(CheckStatus.INFO);
    expect(client.detail).toContain('Not a reason to stop');
    expect(client.fix).toContain('load RoCE on 198.18.0.1');
    // Refusals that stopped: the DUT's stack came up while we asked.
    const up = preRunRocePortCheck('198.18.0.1', 'responder', ['refused', 'refused', 'silent', 'silent'], 4000, 1000);
    expect(up).toMatchObject({ status: CheckStatus.OK });
    expect(up.detail).toContain('ICMP port unreachable 2 times, then not (4 asks over 4000 ms');
    // A datagram that could not be sent is a problem in either role.
    expect(preRunRocePortCheck('198.18.0.1', 'requester', [{ error: 'EHOSTUNREACH' }], 1, 1000)).toMatchObject({ status: CheckStatus.PROBLEM });
  });

  test('a DUT client is asked once; a DUT server that refuses is asked again until the settle time, then refused', async () => {
    const c = scripted(['refused']);
    expect(await askRocePort('198.18.0.1', 'requester', { waitMs: 10, settleMs: 5000 }, c.ask)).toMatchObject({ status: CheckStatus.INFO });
    expect(c.calls()).toBe(1);
    const s = scripted(['refused']);
    const t0 = Date.now();
    const r = await askRocePort('198.18.0.1', 'responder', { waitMs: 10, settleMs: 1500 }, s.ask);
    expect(r.status).toBe(CheckStatus.PROBLEM);
    // Asked at 0, then a pause of REFUSED_PAUSE_MS each time, until 1500 ms had passed.
    expect(s.calls()).toBe(Math.ceil(1500 / REFUSED_PAUSE_MS) + 1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1500);
  });

  test("a silence after refusals counts only when the next ask is silent too (the DUT's ICMP rate limit)", async () => {
    const limited = scripted(['refused', 'silent', 'refused']);
    expect(await askRocePort('198.18.0.1', 'responder', { waitMs: 10, settleMs: 1500 }, limited.ask)).toMatchObject({ status: CheckStatus.PROBLEM });
    const came = scripted(['refused', 'silent', 'silent']);
    expect(await askRocePort('198.18.0.1', 'responder', { waitMs: 10, settleMs: 10_000 }, came.ask)).toMatchObject({ status: CheckStatus.OK });
    expect(came.calls()).toBe(3);
    // Silent from the first ask: no second ask.
    const quiet = scripted(['silent']);
    await askRocePort('198.18.0.1', 'responder', { waitMs: 10, settleMs: 10_000 }, quiet.ask);
    expect(quiet.calls()).toBe(1);
  });

  test("the bound comes from the checks' timers", () => {
    // Neighbour: trigger (at least 1 s) + wait; roce-port: settle + pause + two asks; 2 s of slack.
    expect(preRunBoundMs({ waitMs: 1000, settleMs: 5000 })).toBe(1000 + 1000 + 5000 + REFUSED_PAUSE_MS + 2000 + 2000);
    expect(preRunBoundMs()).toBe(preRunBoundMs({ waitMs: 1000, settleMs: 5000 }));
  });

  test('the refusal names each problem with its fix; none when only ok and info', () => {
    const checks: DoctorCheck[] = [
      { check: 'interface', status: CheckStatus.OK, detail: 'eth1 is UP', fix: null },
      { check: 'mtu', status: CheckStatus.PROBLEM, detail: 'eth1 MTU 1100 carries 512', fix: 'ip link set eth1 mtu 1120' },
      { check: 'gids', status: CheckStatus.INFO, detail: 'GID index 1', fix: 'perftest -x 1' },
      { check: 'neighbour', status: CheckStatus.PROBLEM, detail: 'cannot resolve 198.18.0.9', fix: 'ip neigh show dev eth1' },
    ];
    expect(preRunRefusal(checks)).toBe(
      [
        'the checks before the run found 2 problems (mtu, neighbour), so no traffic was sent (roce probe --doctor makes the checks alone; --no-doctor skips them):',
        '  mtu: eth1 MTU 1100 carries 512',
        '    fix: ip link set eth1 mtu 1120',
        '  neighbour: cannot resolve 198.18.0.9',
        '    fix: ip neigh show dev eth1',
      ].join('\n'),
    );
    expect(preRunRefusal(checks.filter((c) => c.status !== CheckStatus.PROBLEM))).toBeNull();
  });
});
