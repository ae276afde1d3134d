/**
 * How guessable the names a host hands out are: R_Keys, memory addresses (VAs), QP numbers and
 * starting PSNs, judged from the values seen in the order they were first seen, in the manner of
 * ReDMArk's table 1 (USENIX Security 2021: R_Keys stepping by 0x100 on bnxt_re and mlx4, rxe's
 * index << 8 | random byte, sequential QPNs everywhere). `roce analyze --audit` collects them from
 * a capture (guessability-capture.ts), `roce audit` from the connections it opens.
 *
 * The estimate is what an attacker who has seen these values must still search to name the next:
 * the smallest of
 *  - the bits that vary at all across the values (a bit that never changed is known),
 *  - log2 of the spread of the next value around the best of three predictors: the previous value
 *    plus the last step (a constant stride), the previous value (small steps), and the previous
 *    value's high part stepping as before with the low 8, 12 or 16 bits free (rxe's index << 8 |
 *    random byte: the low bits are all that is left).
 * It is an upper bound from few samples: values that look random in 8 samples may still come from
 * a weak generator (a 32-bit seed), which no passive look can tell.
 */

/** What a value names. */
export const GuessKind = { RKEY: 'rkey', VA: 'va', QPN: 'qpn', START_PSN: 'startPsn' } as const;
export type GuessKind = (typeof GuessKind)[keyof typeof GuessKind];

/** The width in bits of each kind of value. */
export const GUESS_KIND_BITS: Readonly<Record<GuessKind, number>> = { rkey: 32, va: 64, qpn: 24, startPsn: 24 };
/** Names as the report prints them. */
export const GUESS_KIND_LABEL: Readonly<Record<GuessKind, string>> = { rkey: 'R_Key', va: 'VA', qpn: 'QPN', startPsn: 'start PSN' };

export const GuessVerdict = { PREDICTABLE: 'predictable', WEAK: 'weak', UNPREDICTABLE: 'unpredictable', UNKNOWN: 'unknown' } as const;
export type GuessVerdict = (typeof GuessVerdict)[keyof typeof GuessVerdict];

/**
 * Values needed before a verdict. With fewer, random values look weak by chance too often: of
 * 20 000 series of random 24-bit values, 18 % of those of 4 values came out weak, 0.1 % of 6 and
 * none of 8 (test/analysis/guessability.test.ts samples it).
 */
export const MIN_VALUES_FOR_VERDICT = 6;
/** At most this many bits to search: predictable (a few tries). */
export const PREDICTABLE_MAX_BITS = 4;
/** Fewer bits than this: weak (an attacker can try them all at line rate: 2^20 frames take under a second). */
export const UNPREDICTABLE_MIN_BITS = 20;

export interface GuessSeries {
  /** The host that handed the values out (the responder for R_Keys and VAs, the QP's host for QPNs, the requester for starting PSNs). */
  host: string;
  kind: GuessKind;
  /** Distinct values in the order first seen. */
  values: bigint[];
}

export interface GuessJudgement {
  host: string;
  kind: GuessKind;
  count: number;
  /** The values, hexadecimal, in the order first seen (at most the first 16). */
  sample: string[];
  /** 'constant', 'sequential', 'constant stride 0x100', 'high bits stride 0x1, low 8 bits vary' (or '... low 8 bits stride 0x25'), 'small steps', 'no pattern', or 'too few values'. */
  pattern: string;
  /** The step between consecutive values when it is constant (hex, two's complement for a negative step), else null. */
  stride: string | null;
  /** Distinct values of the low 8 bits. */
  lowByteDistinct: number;
  /** Bits that differ between some two values. */
  varyingBits: number;
  /** Estimated bits an attacker must still search for the next value (see the file's comment), or null with too few values. */
  entropyBits: number | null;
  verdict: GuessVerdict;
}

export interface GuessReport {
  judgements: GuessJudgement[];
  /** The worst verdict of any judged series (predictable < weak < unpredictable), or unknown when none could be judged. */
  verdict: GuessVerdict;
}

/** Collects values per host and kind, each value once, in the order first seen. */
export class GuessCollector {
  private readonly series = new Map<string, GuessSeries & { seen: Set<bigint> }>();

  add(host: string, kind: GuessKind, value: bigint | number): void {
    const key = `${kind} ${host}`;
    let s = this.series.get(key);
    if (s === undefined) {
      s = { host, kind, values: [], seen: new Set() };
      this.series.set(key, s);
    }
    const v = BigInt(value);
    if (s.seen.has(v)) return;
    s.seen.add(v);
    s.values.push(v);
  }

  /** The series, by kind (R_Key, VA, QPN, start PSN), then host in the order first seen. */
  all(): GuessSeries[] {
    const order = Object.values(GuessKind);
    return [...this.series.values()].sort((a, b) => order.indexOf(a.kind) - order.indexOf(b.kind)).map(({ host, kind, values }) => ({ host, kind, values }));
  }
}

const VERDICT_RANK: Record<GuessVerdict, number> = { predictable: 0, weak: 1, unpredictable: 2, unknown: 3 };

/** Judges every series a collector holds. */
export function guessReport(series: readonly GuessSeries[]): GuessReport {
  const judgements = series.map(judgeSeries);
  let verdict: GuessVerdict = GuessVerdict.UNKNOWN;
  for (const j of judgements) if (VERDICT_RANK[j.verdict] < VERDICT_RANK[verdict]) verdict = j.verdict;
  return { judgements, verdict };
}

/** Judges one series of values. */
export function judgeSeries(s: GuessSeries): GuessJudgement {
  const bits = GUESS_KIND_BITS[s.kind];
  const mod = 1n << BigInt(bits);
  const v = s.values.map((x) => ((x % mod) + mod) % mod);
  const hex = (x: bigint): string => `0x${x.toString(16)}`;
  const base = {
    host: s.host,
    kind: s.kind,
    count: v.length,
    sample: v.slice(0, 16).map(hex),
    lowByteDistinct: new Set(v.map((x) => x & 0xffn)).size,
    varyingBits: varyingBits(v),
  };
  if (v.length < MIN_VALUES_FOR_VERDICT) return { ...base, pattern: 'too few values', stride: null, entropyBits: null, verdict: GuessVerdict.UNKNOWN };
  const steps = v.slice(1).map((x, i) => wrap(x - (v[i] as bigint), mod));
  const first = steps[0] as bigint;
  const constant = steps.every((d) => d === first);
  // Spread around each predictor: the largest miss, as a signed distance.
  const strideMiss = maxAbs(steps.slice(1).map((d, i) => wrap(d - (steps[i] as bigint), mod)));
  const stepMiss = maxAbs(steps);
  const predictorBits = Math.min(spreadBits(strideMiss), spreadBits(stepMiss));
  const low = lowBitsModel(v, bits);
  const entropy = Math.min(base.varyingBits, predictorBits, low?.bits ?? bits);
  let pattern: string;
  if (constant) pattern = first === 0n ? 'constant' : first === 1n ? 'sequential' : `constant stride ${hex(first)}`;
  else if (low !== null && low.bits < predictorBits)
    pattern = `high bits stride ${hex(low.stride)}, low ${low.k} bits ${low.lowStride !== null ? `stride ${hex(low.lowStride)}` : 'vary'}`;
  else if (entropy <= PREDICTABLE_MAX_BITS || stepMiss < 1n << 16n) pattern = 'small steps';
  else pattern = 'no pattern';
  const verdict =
    entropy <= PREDICTABLE_MAX_BITS ? GuessVerdict.PREDICTABLE : entropy < UNPREDICTABLE_MIN_BITS ? GuessVerdict.WEAK : GuessVerdict.UNPREDICTABLE;
  return { ...base, pattern, stride: constant ? hex(first < 0n ? first + mod : first) : null, entropyBits: Math.round(entropy * 10) / 10, verdict };
}

/** `d` as a signed value of the width `mod` is 2 to the power of. */
function wrap(d: bigint, mod: bigint): bigint {
  let x = ((d % mod) + mod) % mod;
  if (x >= mod / 2n) x -= mod;
  return x;
}

function maxAbs(xs: readonly bigint[]): bigint {
  let m = 0n;
  for (const x of xs) {
    const a = x < 0n ? -x : x;
    if (a > m) m = a;
  }
  return m;
}

/** Bits needed to name a value within ±miss of a prediction: log2(2·miss + 1). */
function spreadBits(miss: bigint): number {
  const n = 2n * miss + 1n;
  // log2 of a bigint: exact enough from its top 52 bits.
  const len = n.toString(2).length;
  const shift = Math.max(0, len - 52);
  return Math.log2(Number(n >> BigInt(shift))) + shift;
}

function varyingBits(v: readonly bigint[]): number {
  if (v.length === 0) return 0;
  let diff = 0n;
  const a = v[0] as bigint;
  for (const x of v) diff |= x ^ a;
  let n = 0;
  for (; diff > 0n; diff >>= 1n) if ((diff & 1n) === 1n) n++;
  return n;
}

/**
 * The fewest low bits (8, 12 or 16) above which the values step by a constant stride, with at least
 * three steps to go by (with fewer, random values would match by chance too often); null if none.
 * Its bits are what the low part leaves to search: its varying bits, or less when it steps by a
 * near-constant stride of its own (the key byte of rxe's sequential order steps by 0x25).
 */
function lowBitsModel(v: readonly bigint[], bits: number): { k: number; bits: number; stride: bigint; lowStride: bigint | null } | null {
  if (v.length < 4) return null;
  for (const k of [8, 12, 16]) {
    if (k >= bits - 4) break;
    const mod = 1n << BigInt(bits - k);
    const high = v.map((x) => x >> BigInt(k));
    const steps = high.slice(1).map((h, i) => wrap(h - (high[i] as bigint), mod));
    const s0 = steps[0] as bigint;
    if (!steps.every((d) => d === s0)) continue;
    const lowMod = 1n << BigInt(k);
    const low = v.map((x) => x & (lowMod - 1n));
    const lowSteps = low.slice(1).map((x, i) => wrap(x - (low[i] as bigint), lowMod));
    const lowMiss = maxAbs(lowSteps.slice(1).map((d, i) => wrap(d - (lowSteps[i] as bigint), lowMod)));
    const l0 = lowSteps[0] as bigint;
    return {
      k,
      bits: Math.min(k, varyingBits(low), spreadBits(lowMiss)),
      stride: s0 < 0n ? s0 + mod : s0,
      lowStride: lowMiss === 0n ? (l0 < 0n ? l0 + lowMod : l0) : null,
    };
  }
  return null;
}
