/** Host-device settings from the environment (transport tuning, busy-poll, receive linger, XDP mode, faults, the native switch), and the receive linger. */
import { DEFAULT_RX_LINGER_US } from '../../apps/host/host-device';
import { ActivityDriver } from '../../apps/host/activity-driver';
import { applyNativeSwitch, hostOptionsFromEnv } from '../../apps/host/environment';
import { type NicDriver, emptyStats } from '../../nic-driver/driver';
import { nativeAvailable, nativeLoadError } from '../../nic-driver/native-binding';

test('nothing set: no busy-poll, the default linger, no faults, rxe transport defaults', () => {
  expect(hostOptionsFromEnv({})).toEqual({ busyPoll: false, rxLingerUs: DEFAULT_RX_LINGER_US, faults: null });
  expect(hostOptionsFromEnv({ ROCE_FAULTS: ' ', ROCE_XDP_MODE: '', ROCE_MAX_UNACKED_PSNS: '' })).toEqual({
    busyPoll: false,
    rxLingerUs: DEFAULT_RX_LINGER_US,
    faults: null,
  });
});

test('window and AckReq spacing from the environment, rxe defaults otherwise', () => {
  expect(hostOptionsFromEnv({ ROCE_MAX_UNACKED_PSNS: '512', ROCE_MAX_PKTS_PER_ACK: '32' })).toMatchObject({ maxUnackedPsns: 512, maxPktsPerAck: 32 });
  expect(() => hostOptionsFromEnv({ ROCE_MAX_UNACKED_PSNS: 'lots' })).toThrow(/ROCE_MAX_UNACKED_PSNS must be an integer/);
  expect(() => hostOptionsFromEnv({ ROCE_MAX_PKTS_PER_ACK: '0' })).toThrow(/ROCE_MAX_PKTS_PER_ACK must be an integer/);
});

test('the in-flight bound and ACK coalescing from the environment, off or default otherwise', () => {
  expect(hostOptionsFromEnv({ ROCE_MAX_INFLIGHT: '64', ROCE_COALESCE_ACKS: 'on' })).toMatchObject({ maxInflightPackets: 64, coalesceAcks: true });
  expect(hostOptionsFromEnv({ ROCE_COALESCE_ACKS: '0' }).coalesceAcks).toBeUndefined();
  expect(() => hostOptionsFromEnv({ ROCE_MAX_INFLIGHT: '0' })).toThrow(/ROCE_MAX_INFLIGHT must be an integer/);
});

test('receive linger from the environment: 200 µs by default, 0 turns it off, bad values are refused', () => {
  expect(DEFAULT_RX_LINGER_US).toBe(200);
  expect(hostOptionsFromEnv({ ROCE_RX_LINGER_US: '0' }).rxLingerUs).toBe(0);
  expect(hostOptionsFromEnv({ ROCE_RX_LINGER_US: '5000' }).rxLingerUs).toBe(5000);
  expect(() => hostOptionsFromEnv({ ROCE_RX_LINGER_US: '-1' })).toThrow(/ROCE_RX_LINGER_US must be an integer 0..1000000/);
  expect(() => hostOptionsFromEnv({ ROCE_RX_LINGER_US: 'soon' })).toThrow(/ROCE_RX_LINGER_US/);
});

test('busy-poll (1, on or true) needs no linger, so a linger value is not read', () => {
  for (const v of ['1', 'on', 'true'])
    expect(hostOptionsFromEnv({ ROCE_BUSY_POLL: v, ROCE_RX_LINGER_US: 'soon' })).toMatchObject({ busyPoll: true, rxLingerUs: 0 });
  expect(hostOptionsFromEnv({ ROCE_BUSY_POLL: '0' }).busyPoll).toBe(false);
});

test('NAPI busy polling from the environment: forced on or off, else chosen by the interface (absent)', () => {
  for (const v of ['1', 'on', 'true']) expect(hostOptionsFromEnv({ ROCE_NAPI_BUSY_POLL: v }).napiBusyPoll).toBe(true);
  for (const v of ['0', 'off', 'false']) expect(hostOptionsFromEnv({ ROCE_NAPI_BUSY_POLL: v }).napiBusyPoll).toBe(false);
  expect(hostOptionsFromEnv({ ROCE_NAPI_BUSY_POLL: '' }).napiBusyPoll).toBeUndefined();
  expect(() => hostOptionsFromEnv({ ROCE_NAPI_BUSY_POLL: 'maybe' })).toThrow(/ROCE_NAPI_BUSY_POLL must be 1, on, true, 0, off or false, not "maybe"/);
});

test('XDP mode and faults from the environment', () => {
  expect(hostOptionsFromEnv({ ROCE_XDP_MODE: 'skb' }).xdpMode).toBe('skb');
  expect(() => hostOptionsFromEnv({ ROCE_XDP_MODE: 'fast' })).toThrow(/ROCE_XDP_MODE must be native, skb or auto, not "fast"/);
  expect(hostOptionsFromEnv({ ROCE_FAULTS: '{"rx":{"drop":0.02},"seed":7}' }).faults).toEqual({ rx: { drop: 0.02 }, seed: 7 });
  expect(() => hostOptionsFromEnv({ ROCE_FAULTS: '{"tx":{"reorder":0.1}}' })).toThrow(/ROCE_FAULTS\.tx: reorder cannot be applied on a real link/);
});

test('ROCE_NO_NATIVE=1 turns the native addon off, saying why; other values leave it alone', () => {
  const before = nativeLoadError();
  applyNativeSwitch({ ROCE_NO_NATIVE: '0' });
  expect(nativeLoadError()).toBe(before);
  applyNativeSwitch({ ROCE_NO_NATIVE: '1' });
  expect(nativeAvailable()).toBe(false);
  expect(nativeLoadError()).toBe('disabled by ROCE_NO_NATIVE=1');
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
