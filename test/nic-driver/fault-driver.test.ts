/** The fault injector on a real driver's path (ROCE_FAULTS): drops on receive and on transmit, refuses timed faults. */
import { FaultDriver, parseHostFaults } from '../../nic-driver/fault-driver';
import { type NicDriver, emptyStats } from '../../nic-driver/driver';
import { LinkConfigError } from '../../nic-driver/link-config-error';

function fakeDriver(rx: Uint8Array[][]): NicDriver & { sent: Uint8Array[] } {
  const sent: Uint8Array[] = [];
  return {
    name: 'fake',
    mac: 1,
    mtu: 1500,
    stats: emptyStats(),
    sent,
    txBurst(frames) {
      sent.push(...frames);
      return frames.length;
    },
    rxBurst() {
      return rx.shift() ?? [];
    },
    setRxHandler() {},
    close() {},
  };
}

const frames = (n: number): Uint8Array[] => Array.from({ length: n }, (_, i) => new Uint8Array([i & 0xff, i >> 8, 0, 0]));

test('drop: about the configured share of received and sent frames vanish, the rest pass in order', () => {
  const inner = fakeDriver([frames(5000)]);
  const d = new FaultDriver(inner, { rx: { drop: 0.1 }, tx: { drop: 0.2 }, seed: 5 });
  const got = d.rxBurst(10_000);
  expect(got.length).toBeGreaterThan(4300);
  expect(got.length).toBeLessThan(4700);
  const ids = got.map((f) => (f[0] as number) | ((f[1] as number) << 8));
  expect(ids).toEqual([...ids].sort((a, b) => a - b));
  expect(d.txBurst(frames(5000))).toBe(5000);
  expect(inner.sent.length).toBeGreaterThan(3800);
  expect(inner.sent.length).toBeLessThan(4200);
  expect(d.faultCounters.rx?.dropped).toBe(5000 - got.length);
});

test('a burst dropped whole does not read as an empty ring: the next burst is returned', () => {
  const inner = fakeDriver([frames(1), frames(3)]);
  const d = new FaultDriver(inner, { rx: { rules: [{ action: 'drop', match: {}, count: 1 }] } });
  expect(d.rxBurst(10)).toHaveLength(3);
});

test('ROCE_FAULTS: parsed from JSON; malformed values and timed faults are refused by name', () => {
  expect(parseHostFaults('{"rx":{"drop":0.02}}', 'ROCE_FAULTS')).toEqual({ rx: { drop: 0.02 } });
  expect(() => parseHostFaults('drop', 'ROCE_FAULTS')).toThrow(/^ROCE_FAULTS is not JSON/);
  expect(() => parseHostFaults('drop', 'ROCE_FAULTS')).toThrow(expect.objectContaining({ code: 'ROCE_ERR_LINK_CONFIG' }));
  expect(() => new FaultDriver(fakeDriver([]), { tx: { drop: 2 } })).toThrow(LinkConfigError);
  expect(() => parseHostFaults('[1]', 'ROCE_FAULTS')).toThrow(/^ROCE_FAULTS must be a JSON object/);
  expect(() => parseHostFaults('{"rx":{"drop":0.1},"up":{}}', 'ROCE_FAULTS')).toThrow(/^ROCE_FAULTS: unknown key "up"/);
  expect(() => parseHostFaults('{"tx":{"delayNs":5}}', 'ROCE_FAULTS')).toThrow(/^ROCE_FAULTS\.tx: delayNs cannot be applied on a real link/);
});

test("a 'pass' rule keeps its frames out of the random faults, and the draws for the others do not move", () => {
  const ids = (fs: Uint8Array[]): number[] => fs.map((f) => (f[0] as number) | ((f[1] as number) << 8));
  // Everything is lost at random, except the frames the rule exempts.
  const all = new FaultDriver(fakeDriver([frames(20)]), { rx: { drop: 1, rules: [{ action: 'pass', match: {}, count: 3 }] }, seed: 1 });
  expect(ids(all.rxBurst(100))).toEqual([0, 1, 2]);
  // The same seed with and without the rule: past the exempt frames, the same frames survive.
  const run = (rules: { action: 'pass'; match: object; count: number }[]): number[] =>
    ids(new FaultDriver(fakeDriver([frames(2000)]), { rx: { drop: 0.3, rules }, seed: 9 }).rxBurst(5000));
  const plain = run([]);
  const exempt = run([{ action: 'pass', match: {}, count: 50 }]);
  expect(exempt.filter((i) => i >= 50)).toEqual(plain.filter((i) => i >= 50));
  expect(exempt.filter((i) => i < 50)).toEqual(Array.from({ length: 50 }, (_, i) => i));
  expect(() => new FaultDriver(fakeDriver([]), { rx: { rules: [{ action: 'keep' as 'pass', match: {} }] } })).toThrow(
    /rule action "keep" is not one of drop, duplicate, corrupt, ecnCe, delay, pass/,
  );
});
