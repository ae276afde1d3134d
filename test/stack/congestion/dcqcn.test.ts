/**
 * The DCQCN reaction point against values worked out by hand from the paper's equations (Zhu et
 * al., SIGCOMM 2015, §3.2: rate decrease R_T ← R_C, R_C ← R_C(1 − α/2); α ← (1 − g)α + g per
 * period with a CNP, α ← (1 − g)α without; fast recovery R_C ← (R_T + R_C)/2; additive and hyper
 * increase of R_T) with the mlx5 parameters (stack/congestion/parameters.ts), stage by stage.
 */
import { type Clock, type TimerId, VirtualClock } from '../../../base/clock';
import { DcqcnReactionPoint } from '../../../stack/congestion/rp/dcqcn';
import { resolveCongestion, RP_DEFAULTS, type RpParams } from '../../../stack/congestion/parameters';
import { Pacer } from '../../../stack/congestion/pacer';
import { WIRE_OVERHEAD_BYTES } from '../../../packets/wire-size';
import { VerbsError } from '../../../stack/errors';

const US = 1000;
const LINE = 40_000; // Mb/s, the paper's 40 Gb/s
const A0 = 1023 / 1024; // rp_initial_alpha_value
const K = 1019 / 1024; // 1 − g with rp_dce_tcp_g = 1019

function rp(params: Partial<RpParams> = {}, line = LINE): { clock: VirtualClock; r: DcqcnReactionPoint } {
  const clock = new VirtualClock(1_000_000);
  const s = resolveCongestion({ rp: true, lineRateMbps: line, params });
  return { clock, r: new DcqcnReactionPoint(clock, s.params, s.lineRateMbps) };
}

/** Moves the clock to `t` ns after `t0`, running what is due. */
function at(clock: VirtualClock, t0: number, t: number): void {
  clock.runUntil(t0 + t);
}

describe('first CNP', () => {
  test('mlx5 defaults: α = initial alpha, R_T stays at the line rate, R_C ← R_C(1 − α/2)', () => {
    const { r } = rp();
    expect(r.limited).toBe(false);
    expect(r.currentRate).toBe(LINE);
    r.onCnp();
    expect(r.limited).toBe(true);
    expect(r.alpha).toBe(A0);
    expect(r.targetRate).toBe(LINE);
    expect(r.currentRate).toBe(LINE - (LINE * A0) / 2); // 20019.53125
    expect(r.currentRate).toBe(20019.53125);
    expect(r.events.decreases).toBe(1);
  });

  test('rp_rate_to_set_on_first_cnp: R_C = R_T = that rate, no decrease', () => {
    const { r } = rp({ rpRateToSetOnFirstCnp: 10_000 });
    r.onCnp();
    expect(r.currentRate).toBe(10_000);
    expect(r.targetRate).toBe(10_000);
    expect(r.alpha).toBe(A0);
    expect(r.events.decreases).toBe(0);
  });

  test('rp_min_dec_fac bounds one cut; rp_gd 10 makes the cut R_C·α', () => {
    const a = rp({ rpMinDecFac: 80 }).r; // at most 20 % off
    a.onCnp();
    expect(a.currentRate).toBe(32_000);
    const b = rp({ rpGd: 10, rpMinDecFac: 0 }).r; // cut = R_C·α, unbounded
    b.onCnp();
    expect(b.currentRate).toBeCloseTo(LINE * (1 - A0), 9);
    const c = rp({ rpGd: 10 }).r; // the default bound of 50 % holds it
    c.onCnp();
    expect(c.currentRate).toBe(20_000);
  });

  test('rp_max_rate below the line rate: the QP starts and is cut from there', () => {
    const { r } = rp({ rpMaxRate: 25_000 });
    expect(r.currentRate).toBe(25_000);
    r.onCnp();
    expect(r.currentRate).toBe(25_000 * (1 - A0 / 2));
    expect(r.targetRate).toBe(25_000);
  });
});

describe('alpha', () => {
  test('decays by (1 − g) each rp_dce_tcp_rtt without a CNP, and rises by g in a period with one', () => {
    const { clock, r } = rp();
    const t0 = clock.now();
    r.onCnp();
    at(clock, t0, 10 * US);
    const a10 = A0 * K ** 10;
    expect(r.alpha).toBeCloseTo(a10, 15);
    // A CNP in period 10..11 µs: it also cuts the rate (≥ 4 µs since the last cut) with α = a10.
    const r1 = r.currentRate;
    at(clock, t0, 10.5 * US);
    r.onCnp();
    expect(r.events.decreases).toBe(2);
    expect(r.currentRate).toBeCloseTo(r1 * (1 - a10 / 2), 9);
    expect(r.targetRate).toBe(LINE); // no increase since the last cut, rp_clamp_tgt_rate 0: R_T kept
    // End of that period: α ← (1 − g)α + g; one more period without: ×(1 − g).
    at(clock, t0, 12 * US);
    expect(r.alpha).toBeCloseTo((K * a10 + (1 - K)) * K, 15);
  });

  test('several CNPs in one period raise α once', () => {
    const { clock, r } = rp();
    const t0 = clock.now();
    r.onCnp();
    at(clock, t0, 5.2 * US);
    r.onCnp();
    at(clock, t0, 5.4 * US);
    r.onCnp();
    at(clock, t0, 5.6 * US);
    r.onCnp();
    at(clock, t0, 6 * US);
    expect(r.alpha).toBeCloseTo(K * (A0 * K ** 5) + (1 - K), 15);
  });
});

describe('rate decrease: at most one per rp_rate_reduce_monitor_period', () => {
  test('CNPs 1 and 2 µs after a cut wait for the period to end: one cut at 4 µs, with α of that time', () => {
    const { clock, r } = rp();
    const t0 = clock.now();
    r.onCnp();
    const r1 = r.currentRate;
    at(clock, t0, 1 * US);
    r.onCnp();
    at(clock, t0, 2 * US);
    r.onCnp();
    expect(r.events.decreases).toBe(1);
    expect(r.currentRate).toBe(r1);
    at(clock, t0, 4 * US - 1);
    expect(r.events.decreases).toBe(1);
    at(clock, t0, 4 * US);
    expect(r.events.decreases).toBe(2);
    // α: period 0-1 without CNP (the first one initialises α); 1-2 and 2-3 with; 3-4 without.
    const a4 = (K * (K * (K * A0) + (1 - K)) + (1 - K)) * K;
    expect(r.currentRate).toBeCloseTo(r1 * (1 - a4 / 2), 9);
  });
});

describe('rate increase', () => {
  test('fast recovery: rp_threshold timer expiries halve the distance to R_T', () => {
    const { clock, r } = rp({ rpThreshold: 5, rpTimeReset: 55, rpByteReset: 1 << 30 }); // the paper's F = 5, T = 55 µs
    const t0 = clock.now();
    r.onCnp();
    const r1 = r.currentRate;
    for (let n = 1; n <= 5; n++) {
      at(clock, t0, n * 55 * US);
      expect(r.currentRate).toBeCloseTo(LINE - (LINE - r1) / 2 ** n, 9);
      expect(r.targetRate).toBe(LINE);
    }
    expect(r.events).toMatchObject({ fastRecovery: 5, additive: 0, hyper: 0 });
    expect(r.stages).toEqual({ timer: 5, byte: 0 });
  });

  test('additive then hyper increase, by timer and byte counter together (F = 1)', () => {
    const { clock, r } = rp({ rpRateToSetOnFirstCnp: 10_000, rpByteReset: 1000 });
    const t0 = clock.now();
    r.onCnp();
    at(clock, t0, 300 * US); // T=0, BC=0: fast recovery; R_T = R_C = 10000
    expect([r.targetRate, r.currentRate]).toEqual([10_000, 10_000]);
    r.onSent(1000); // T=1, BC=0: additive
    expect([r.targetRate, r.currentRate]).toEqual([10_005, 10_002.5]);
    r.onSent(600);
    r.onSent(400); // T=1, BC=1: additive (min(T, BC) = 1 is not above F)
    expect([r.targetRate, r.currentRate]).toEqual([10_010, 10_006.25]);
    at(clock, t0, 600 * US); // T=1, BC=2: additive
    expect([r.targetRate, r.currentRate]).toEqual([10_015, 10_010.625]);
    r.onSent(1000); // T=2, BC=2: hyper
    expect([r.targetRate, r.currentRate]).toEqual([10_065, 10_037.8125]);
    expect(r.events).toMatchObject({ fastRecovery: 1, additive: 3, hyper: 1 });
    expect(r.stages).toEqual({ timer: 2, byte: 3 });
  });

  test('a cut resets the stages, the byte count and the increase timer', () => {
    const { clock, r } = rp({ rpRateToSetOnFirstCnp: 10_000, rpByteReset: 1000, rpDceTcpRtt: 131071 });
    const t0 = clock.now();
    r.onCnp();
    r.onSent(1500); // one byte stage, 500 bytes carried
    at(clock, t0, 100 * US);
    r.onCnp();
    expect(r.stages).toEqual({ timer: 0, byte: 0 });
    r.onSent(999); // the 500 were forgotten
    expect(r.stages.byte).toBe(0);
    at(clock, t0, 399 * US); // the timer restarted at 100 µs: nothing at 300 µs
    expect(r.stages.timer).toBe(0);
    at(clock, t0, 400 * US);
    expect(r.stages.timer).toBe(1);
  });

  test('R_T never passes the maximum; at it, R_C within 1 Mb/s ends the limitation and the next CNP is a first CNP', () => {
    const { clock, r } = rp({ rpTimeReset: 10 });
    const t0 = clock.now();
    r.onCnp();
    const r1 = r.currentRate;
    // R_C = LINE − (LINE − r1)/2^n: within 1 Mb/s once 2^n > LINE − r1, i.e. n = 15.
    const n = Math.ceil(Math.log2(LINE - r1));
    at(clock, t0, (n - 1) * 10 * US);
    expect(r.limited).toBe(true);
    expect(r.targetRate).toBe(LINE);
    at(clock, t0, n * 10 * US);
    expect(r.limited).toBe(false);
    expect(r.currentRate).toBe(LINE);
    expect(r.events.released).toBe(1);
    expect(clock.nextAt()).toBeNull(); // no timer left
    r.onCnp();
    expect(r.alpha).toBe(A0);
    expect(r.currentRate).toBe(r1);
  });
});

describe('target-rate clamping on a cut', () => {
  // α is held at its initial value by a long alpha period: every cut is by A0/2.
  const base: Partial<RpParams> = { rpRateToSetOnFirstCnp: 10_000, rpTimeReset: 10, rpDceTcpRtt: 131071 };

  test('timer increases: clamped with rp_clamp_tgt_rate_ati 1 (default), R_T kept with 0', () => {
    for (const ati of [1, 0] as const) {
      const { clock, r } = rp({ ...base, rpClampTgtRateAti: ati });
      const t0 = clock.now();
      r.onCnp();
      at(clock, t0, 10 * US); // fast recovery (no change), T = 1
      at(clock, t0, 20 * US); // additive: R_T = 10005, R_C = 10002.5
      expect([r.targetRate, r.currentRate]).toEqual([10_005, 10_002.5]);
      r.onCnp();
      expect(r.targetRate).toBe(ati === 1 ? 10_002.5 : 10_005);
      expect(r.currentRate).toBe(10_002.5 * (1 - A0 / 2));
    }
  });

  test('no increase since the last cut: R_T kept, unless rp_clamp_tgt_rate 1 (the paper: always R_T ← R_C)', () => {
    for (const clamp of [0, 1] as const) {
      const { clock, r } = rp({ rpClampTgtRate: clamp, rpDceTcpRtt: 131071 });
      const t0 = clock.now();
      r.onCnp(); // R_T = LINE, R_C = r1
      const r1 = r.currentRate;
      at(clock, t0, 4 * US);
      r.onCnp();
      expect(r.targetRate).toBe(clamp === 1 ? r1 : LINE);
      expect(r.currentRate).toBe(r1 * (1 - A0 / 2));
    }
  });

  test('after a byte-counter increase a cut clamps R_T to R_C', () => {
    const { clock, r } = rp({ ...base, rpByteReset: 1000, rpClampTgtRateAti: 0 });
    const t0 = clock.now();
    r.onCnp();
    r.onSent(1000); // fast recovery, BC = 1
    r.onSent(1000); // additive: R_T = 10005, R_C = 10002.5
    at(clock, t0, 4 * US);
    r.onCnp();
    expect(r.targetRate).toBe(10_002.5);
    expect(r.currentRate).toBe(10_002.5 * (1 - A0 / 2));
  });
});

describe('minimum rate', () => {
  test('rp_min_rate floors R_C however many cuts', () => {
    const { clock, r } = rp({ rpMinRate: 15_000, rpDceTcpRtt: 131071 });
    const t0 = clock.now();
    r.onCnp();
    expect(r.currentRate).toBe(20_019.53125);
    at(clock, t0, 4 * US);
    r.onCnp(); // 20019.53 × (1 − A0/2) ≈ 10020 → 15000
    expect(r.currentRate).toBe(15_000);
    at(clock, t0, 8 * US);
    r.onCnp();
    expect(r.currentRate).toBe(15_000);
  });
});

/** Frames of 1000 and 500 bytes on the wire: the pacer counts preamble, FCS and gap (24 bytes) beyond the frame. */
const F1000 = 1000 - WIRE_OVERHEAD_BYTES;
const F500 = 500 - WIRE_OVERHEAD_BYTES;

describe('pacer', () => {
  test('spaces packets at R_C: a frame of L bytes → its wire bytes (L + 24) ·8/R_C ns; lets everything through while not limited', () => {
    const { clock, r } = rp({ rpRateToSetOnFirstCnp: 1000 }); // 1 Gb/s: 1000 bytes every 8 µs
    let resumed = 0;
    const p = new Pacer(clock, r, () => resumed++);
    expect(p.admit()).toBe(true);
    p.sent(F1000);
    expect(p.admit()).toBe(true); // not limited: no spacing, no timer
    expect(clock.nextAt()).toBeNull();
    r.onCnp();
    const t0 = clock.now();
    expect(p.admit()).toBe(true);
    p.sent(F1000);
    expect(p.admit()).toBe(false);
    expect(p.admit()).toBe(false); // one timer, not two
    clock.runUntil(t0 + 8 * US - 1);
    expect(resumed).toBe(0);
    clock.runUntil(t0 + 8 * US);
    expect(resumed).toBe(1);
    expect(p.admit()).toBe(true);
    p.sent(F500);
    clock.runUntil(t0 + 10 * US); // 500 bytes: 4 µs
    expect(p.admit()).toBe(false);
    clock.runUntil(t0 + 12 * US);
    expect(p.admit()).toBe(true);
    expect(resumed).toBe(2);
  });
});

describe('pacer charged at wire time', () => {
  test('a frame built waits for the wire: the requester resumes when it starts (charged) or when the driver did not take it (not charged)', () => {
    const clock = new VirtualClock();
    const rate = { limited: true, currentRate: 1000 }; // 1 Gb/s: 1000 wire bytes every 8 µs
    let resumed = 0;
    const p = new Pacer(clock, rate, () => resumed++);
    p.built();
    expect(p.admit()).toBe(false); // waits for its frame to reach the wire, with no timer
    expect(clock.nextAt()).toBeNull();
    p.sent(F1000); // it starts on the wire: charged, the next turn 8 µs on
    expect(resumed).toBe(0);
    clock.runUntil(clock.now() + 8 * US);
    expect(resumed).toBe(1);
    expect(p.admit()).toBe(true);
    // A frame the driver never took is not charged: the requester goes on at once.
    const t = clock.now();
    p.built();
    expect(p.admit()).toBe(false);
    p.dropped();
    expect(resumed).toBe(2);
    expect(clock.now()).toBe(t);
    expect(p.admit()).toBe(true);
  });
});

describe('pacer and rate changes', () => {
  test('a wait armed at a slow rate is cut short when the rate rises (and left when it falls)', () => {
    const clock = new VirtualClock();
    const rate = { limited: true, currentRate: 1 }; // 1 Mb/s: 1000 bytes every 8 ms
    let resumed = 0;
    const p = new Pacer(clock, rate, () => resumed++);
    const t0 = clock.now();
    expect(p.admit()).toBe(true);
    p.sent(F1000);
    expect(p.admit()).toBe(false);
    clock.runUntil(t0 + 2 * US);
    rate.currentRate = 1000; // 1 Gb/s: the gap after the last packet is 8 µs
    p.rateChanged();
    clock.runUntil(t0 + 8 * US - 1);
    expect(resumed).toBe(0);
    clock.runUntil(t0 + 8 * US);
    expect(resumed).toBe(1);
    expect(p.admit()).toBe(true);
    p.sent(F1000);
    rate.currentRate = 500; // slower now: the armed gap stays, admit() re-checks at its end
    expect(p.admit()).toBe(false);
    p.rateChanged();
    clock.runUntil(t0 + 16 * US);
    expect(resumed).toBe(2);
    expect(p.admit()).toBe(true);
  });

  test('paceUnlimited: packets are spaced at the line rate while the QP is not limited', () => {
    const clock = new VirtualClock();
    const rate = { limited: false, currentRate: 1000 };
    let resumed = 0;
    const free = new Pacer(clock, rate, () => resumed++);
    const paced = new Pacer(clock, rate, () => resumed++, 0, true);
    free.sent(F1000);
    paced.sent(F1000);
    expect(free.admit()).toBe(true);
    expect(paced.admit()).toBe(false);
    clock.runUntil(clock.now() + 8 * US);
    expect(resumed).toBe(1);
    expect(paced.admit()).toBe(true);
  });
});

describe('pacer slack (a clock whose timers fire late)', () => {
  test('with slack the packets whose turn has passed go at once; without, one per admit', () => {
    for (const slackUs of [0, 100]) {
      const { clock, r } = rp({ rpRateToSetOnFirstCnp: 1000 }); // 1000 bytes every 8 µs
      r.onCnp();
      const p = new Pacer(clock, r, () => undefined, slackUs * US);
      const t0 = clock.now();
      p.sent(F1000);
      expect(p.admit()).toBe(false);
      clock.runUntil(t0 + 80 * US); // the resume comes 72 µs late: nine more packets' turns have passed
      let n = 0;
      while (p.admit() && n < 100) {
        p.sent(F1000);
        n++;
      }
      expect(n).toBe(slackUs === 0 ? 1 : 10);
    }
  });
});

/** A clock whose timers fire `lateNs` after they are due, as Node's do on the real clock. */
function lateClock(inner: VirtualClock, lateNs: number): Clock {
  return {
    now: () => inner.now(),
    schedule: (atNs: number, fn: () => void): TimerId => inner.schedule(atNs + lateNs, fn),
    cancel: (t: TimerId) => inner.cancel(t),
    soon: (fn: () => void) => inner.soon(fn),
  };
}

describe('on a clock whose timers fire late', () => {
  test("a QP the pacer held back catches up within the slack whatever resumes it first (an ACK, a post), not only the pacer's timer", () => {
    for (const slackUs of [0, 100]) {
      const inner = new VirtualClock(1_000_000);
      const rate = { limited: true, currentRate: 1000 }; // 1000 bytes every 8 µs
      let resumed = 0;
      const p = new Pacer(lateClock(inner, 1_000 * US), rate, () => resumed++, slackUs * US);
      const t0 = inner.now();
      p.sent(F1000);
      expect(p.admit()).toBe(false); // held back; its timer is due at 8 µs but fires at 1008 µs
      inner.runUntil(t0 + 80 * US);
      expect(resumed).toBe(0);
      // The requester runs for another reason 80 µs on: ten turns have passed.
      let n = 0;
      while (p.admit() && n < 100) {
        p.sent(F1000);
        n++;
      }
      expect(n).toBe(slackUs === 0 ? 1 : 10);
    }
  });

  test('the rate-increase timer applies every period that elapsed: the same rates as on time', () => {
    const params = { rpTimeReset: 55, rpAiRate: 40, rpThreshold: 5, rpRateToSetOnFirstCnp: 0 };
    const exact = rp(params);
    const lateInner = new VirtualClock(1_000_000);
    const s = resolveCongestion({ rp: true, lineRateMbps: LINE, params });
    const late = new DcqcnReactionPoint(lateClock(lateInner, 1_000 * US), s.params, s.lineRateMbps);
    const t0 = exact.clock.now();
    exact.r.onCnp();
    late.onCnp();
    for (const t of [1_055, 2_500, 4_000]) {
      exact.clock.runUntil(t0 + t * US);
      lateInner.runUntil(t0 + t * US);
      // The late timer has fired (due + 1 ms): it has made every increase the exact one made by then.
      expect(late.currentRate).toBeCloseTo(exact.r.currentRate, 9);
      expect(late.targetRate).toBeCloseTo(exact.r.targetRate, 9);
      expect(late.stages).toEqual(exact.r.stages);
    }
    expect(exact.r.events.additive).toBeGreaterThan(0);
  });
});

describe('parameters', () => {
  test('defaults are mlx5’s; bad values are typed errors naming the parameter', () => {
    const s = resolveCongestion({});
    expect(s.params).toMatchObject(RP_DEFAULTS);
    expect(s.params.npMinTimeBetweenCnps).toBe(0);
    expect(s.params.npCnpDscp).toBe(48);
    expect(() => resolveCongestion({ params: { rpGd: 12 } })).toThrow(/rpGd must be an integer 10..11/);
    expect(() => resolveCongestion({ params: { npCnpDscp: 64 } })).toThrow(VerbsError);
    expect(() => resolveCongestion({ params: { rpTypo: 1 } as unknown as Partial<RpParams> })).toThrow(/unknown parameter rpTypo/);
    expect(() => resolveCongestion({ lineRateMbps: 0 })).toThrow(/lineRateMbps/);
    // A QP's settings go over the device's.
    const dev = resolveCongestion({ rp: true, params: { rpAiRate: 40 } });
    const qp = resolveCongestion({ params: { rpHaiRate: 400 } }, dev);
    expect([qp.rp, qp.params.rpAiRate, qp.params.rpHaiRate]).toEqual([true, 40, 400]);
  });
});
