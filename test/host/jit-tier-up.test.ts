/**
 * The commands that carry live traffic optimise early (apps/host/jit-tier-up.ts): the CLI sets V8's
 * interrupt budget for them, and only for them, with a flag this Node's V8 knows.
 */
import { spawnSync } from 'node:child_process';
import { LIVE_INTERRUPT_BUDGET, tierUpEarly } from '../../apps/host/jit-tier-up';
import { isLiveCommand } from '../../cli/main';

test("tierUpEarly sets the interrupt budget, below V8's default of 67 584", () => {
  const set: string[] = [];
  tierUpEarly((f) => set.push(f));
  expect(set).toEqual([`--interrupt-budget=${LIVE_INTERRUPT_BUDGET}`]);
  expect(LIVE_INTERRUPT_BUDGET).toBeLessThan(67_584);
});

test('the flag is one this Node accepts (an unknown V8 option makes node exit 9)', () => {
  const ok = spawnSync(process.execPath, [`--interrupt-budget=${LIVE_INTERRUPT_BUDGET}`, '-e', '0'], { timeout: 30_000 });
  expect(ok.status).toBe(0);
  const bad = spawnSync(process.execPath, ['--interrupt-budgett=1', '-e', '0'], { timeout: 30_000 });
  expect(bad.status).not.toBe(0);
});

test('live commands are the ones that carry traffic', () => {
  for (const c of ['perftest', 'pingpong', 'rping', 'attack', 'cmatose', 'rdma-server', 'rdma-client', 'udaddy'])
    expect({ c, live: isLiveCommand(c) }).toEqual({ c, live: true });
  for (const c of ['decode', 'analyze', 'ladder', 'plot', 'devices', 'demo', 'sim', 'replay', 'help', '__proto__', 'toString', ''])
    expect({ c, live: isLiveCommand(c) }).toEqual({ c, live: false });
});
