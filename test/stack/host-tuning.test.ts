/** Transport tuning for host devices from the environment, and the receive linger. */
import { ActivityDriver, DEFAULT_RX_LINGER_US, rxLingerFromEnv, tuningFromEnv } from '../../apps/host/host-device';
import { type NicDriver, emptyStats } from '../../nic-driver/driver';

test('window and AckReq spacing from the environment, rxe defaults otherwise', () => {
  expect(tuningFromEnv({})).toEqual({});
  expect(tuningFromEnv({ ROCE_MAX_UNACKED_PSNS: '512', ROCE_MAX_PKTS_PER_ACK: '32' })).toEqual({ maxUnackedPsns: 512, maxPktsPerAck: 32 });
  expect(() => tuningFromEnv({ ROCE_MAX_UNACKED_PSNS: 'lots' })).toThrow(/ROCE_MAX_UNACKED_PSNS must be an integer/);
  expect(() => tuningFromEnv({ ROCE_MAX_PKTS_PER_ACK: '0' })).toThrow(/ROCE_MAX_PKTS_PER_ACK must be an integer/);
});

test('receive linger from the environment: 200 µs by default, 0 turns it off, bad values are refused', () => {
  expect(rxLingerFromEnv({})).toBe(DEFAULT_RX_LINGER_US);
  expect(DEFAULT_RX_LINGER_US).toBe(200);
  expect(rxLingerFromEnv({ ROCE_RX_LINGER_US: '0' })).toBe(0);
  expect(rxLingerFromEnv({ ROCE_RX_LINGER_US: '5000' })).toBe(5000);
  expect(() => rxLingerFromEnv({ ROCE_RX_LINGER_US: '-1' })).toThrow(/ROCE_RX_LINGER_US must be an integer 0..1000000/);
  expect(() => rxLingerFromEnv({ ROCE_RX_LINGER_US: 'soon' })).toThrow(/ROCE_RX_LINGER_US/);
});

/** A driver whose receive handler the test calls, standing for bursts of arrivals. */
function handDriver(): NicDriver & { arrive(): void } {
  let handler: (() => void) | null = null;
  return {
    name: 'hand',
    mac: 0x020000000001,
    mtu: 1500,
    stats: emptyStats(),
    txBurst: (f) => f.length,
    rxBurst: () => [],
    setRxHandler: (fn) => {
      handler = fn;
    },
    close: () => {
      handler = null;
    },
    arrive: () => handler?.(),
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

test('the linger keeps the loop polling while bursts come, and lets it sleep once they stop', async () => {
  const inner = handDriver();
  const d = new ActivityDriver(inner, 150_000); // 150 ms, long enough to observe on a busy machine
  let bursts = 0;
  d.setRxHandler(() => bursts++);
  expect(d.lingeringNow).toBe(false); // nothing arrived: asleep
  inner.arrive();
  expect(bursts).toBe(1);
  expect(d.lingeringNow).toBe(true);
  // Bursts 20 ms apart for longer than the window: each one extends it, so it never lapses between them.
  const t0 = Date.now();
  while (Date.now() - t0 < 300) {
    await sleep(20);
    expect(d.lingeringNow).toBe(true);
    inner.arrive();
  }
  // Silence: the window runs out and the loop goes back to sleeping.
  const deadline = Date.now() + 2000;
  while (d.lingeringNow && Date.now() < deadline) await sleep(5);
  expect(d.lingeringNow).toBe(false);
  d.close();
});

test('without a linger, and after close, nothing keeps the loop awake', async () => {
  const inner = handDriver();
  const off = new ActivityDriver(inner, 0);
  off.setRxHandler(() => undefined);
  inner.arrive();
  expect(off.lingeringNow).toBe(false);
  const inner2 = handDriver();
  const on = new ActivityDriver(inner2, 1_000_000);
  on.setRxHandler(() => undefined);
  inner2.arrive();
  expect(on.lingeringNow).toBe(true);
  on.close();
  await sleep(5);
  expect(on.lingeringNow).toBe(false);
});
