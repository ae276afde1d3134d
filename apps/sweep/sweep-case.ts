/**
 * One case of the self-consistency sweep as a small plain object, and its one-line text form
 * (`seed=7 loss=1% burst=0.5%x4 reorder=2%/3 dup=1% mtu=1024 qps=3 mix=send-rnr bytes=32K at=sent`)
 * that a person pastes to run the same case again (`npm run sweep -- --case '...'`). A case the
 * demo's options can express also has its `roce demo` command line: the same run, frame for frame.
 */
import { SweepError } from './sweep-error';

/** The workloads a case can run (workload-mix.ts says what each is). */
export const WORKLOAD_MIXES = ['mix', 'send-rnr', 'read', 'atomic'] as const;
export type WorkloadMix = (typeof WORKLOAD_MIXES)[number];

/** Where the capture is taken (nic-driver/pcap-tap.ts): every frame as sent (`roce demo`'s), or on one host's NIC. */
export const CASE_CAPTURE_POINTS = ['sent', 'host-a', 'host-b'] as const;
export type CaseCapturePoint = (typeof CASE_CAPTURE_POINTS)[number];

export const CASE_MTUS = [256, 512, 1024, 2048, 4096] as const;
export type CaseMtu = (typeof CASE_MTUS)[number];

export const MAX_CASE_QPS = 16;

export interface SweepCase {
  /** Seed of the workload, the start PSNs and the faults (as `roce demo --seed`). */
  seed: number;
  /** Independent loss each way, 0..1. */
  loss: number;
  /** Gilbert-Elliott loss bursts each way (nic-driver/faults.ts DropBurst), or null. */
  burst: { enter: number; meanLength: number } | null;
  /** Frames held back each way and released after 1..window later ones, or null. */
  reorder: { probability: number; window: number } | null;
  /** Share of frames duplicated each way. */
  duplicate: number;
  mtu: CaseMtu;
  /** RC QP pairs, 1..16. */
  qps: number;
  mix: WorkloadMix;
  /** Payload bytes moved in all (atomics count 8). */
  bytes: number;
  at: CaseCapturePoint;
}

/** A share as a percentage with at most four decimals: 0.005 -> "0.5%". */
function pct(p: number): string {
  return `${Number((p * 100).toFixed(4))}%`;
}

function bytesText(n: number): string {
  if (n % (1024 * 1024) === 0) return `${n / (1024 * 1024)}M`;
  if (n % 1024 === 0) return `${n / 1024}K`;
  return String(n);
}

/** The one-line form; `parseCase` reads it back to an equal case. */
export function formatCase(c: SweepCase): string {
  return [
    `seed=${c.seed}`,
    `loss=${pct(c.loss)}`,
    `burst=${c.burst === null ? 'off' : `${pct(c.burst.enter)}x${c.burst.meanLength}`}`,
    `reorder=${c.reorder === null ? 'off' : `${pct(c.reorder.probability)}/${c.reorder.window}`}`,
    `dup=${pct(c.duplicate)}`,
    `mtu=${c.mtu}`,
    `qps=${c.qps}`,
    `mix=${c.mix}`,
    `bytes=${bytesText(c.bytes)}`,
    `at=${c.at}`,
  ].join(' ');
}

/** The same run as a `roce demo` command line, or null when the demo's options cannot say it. */
export function demoCommandLine(c: SweepCase, pcap = 'case.pcap'): string | null {
  if (c.mix !== 'mix' || c.burst !== null || c.reorder !== null || c.duplicate !== 0 || c.at !== 'host-a') return null;
  return `roce demo --seed ${c.seed} --loss ${pct(c.loss)} --mtu ${c.mtu} --qps ${c.qps} --bytes ${bytesText(c.bytes)} --pcap ${pcap}`;
}

/** How a person runs the case again: the sweep script, and the demo where it can. */
export function reproLine(c: SweepCase): string {
  const demo = demoCommandLine(c);
  return `npm run sweep -- --case '${formatCase(c)}'${demo === null ? '' : `   # = ${demo}`}`;
}

const DEFAULT_CASE: SweepCase = { seed: 1, loss: 0.01, burst: null, reorder: null, duplicate: 0, mtu: 1024, qps: 4, mix: 'mix', bytes: 32 * 1024, at: 'sent' };

function share(text: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(text);
  const v = m === null ? NaN : Number(m[1]) / (m[2] === '%' ? 100 : 1);
  if (!Number.isFinite(v) || v < 0 || v > 1) throw new SweepError(`${what} must be a share 0..1 or a percentage 0%..100%, not ${JSON.stringify(text)}`);
  return v;
}

function int(text: string, what: string, min: number, max: number): number {
  const v = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(v) || v < min || v > max) throw new SweepError(`${what} must be an integer ${min}..${max}, not ${JSON.stringify(text)}`);
  return v;
}

function bytesValue(text: string): number {
  const m = /^(\d+)([kKmM]?)$/.exec(text);
  const v = m === null ? NaN : Number(m[1]) * ({ '': 1, k: 1024, m: 1024 * 1024 }[(m[2] ?? '').toLowerCase()] ?? 1);
  if (!Number.isSafeInteger(v) || v < 1 || v > 64 * 1024 * 1024)
    throw new SweepError(`bytes must be 1..64M with an optional K or M suffix, not ${JSON.stringify(text)}`);
  return v;
}

function oneOf<const T extends string | number>(text: string, what: string, allowed: readonly T[]): T {
  const hit = allowed.find((a) => String(a) === text);
  if (hit === undefined) throw new SweepError(`${what} must be one of ${allowed.join(', ')}, not ${JSON.stringify(text)}`);
  return hit;
}

/** Reads a case's one-line form; keys left out take the defaults of `DEFAULT_CASE`. */
export function parseCase(line: string): SweepCase {
  const c: SweepCase = { ...DEFAULT_CASE };
  const seen = new Set<string>();
  for (const token of line.trim().split(/\s+/)) {
    if (token === '') continue;
    const eq = token.indexOf('=');
    if (eq <= 0) throw new SweepError(`a case is key=value words (${formatCase(DEFAULT_CASE)}), not ${JSON.stringify(token)}`);
    const key = token.slice(0, eq);
    const value = token.slice(eq + 1);
    if (seen.has(key)) throw new SweepError(`the case names ${key} twice`);
    seen.add(key);
    switch (key) {
      case 'seed':
        c.seed = int(value, 'seed', 0, 0xffffffff);
        break;
      case 'loss':
        c.loss = share(value, 'loss');
        break;
      case 'burst': {
        if (value === 'off') {
          c.burst = null;
          break;
        }
        const m = /^([^x]+)x(\d+(?:\.\d+)?)$/.exec(value);
        if (m === null || !(Number(m[2]) >= 1)) throw new SweepError(`burst must be off or ENTERxMEANLENGTH (0.5%x4), not ${JSON.stringify(value)}`);
        c.burst = { enter: share(m[1] as string, 'burst entry'), meanLength: Number(m[2]) };
        break;
      }
      case 'reorder': {
        if (value === 'off') {
          c.reorder = null;
          break;
        }
        const m = /^([^/]+)\/(\d+)$/.exec(value);
        if (m === null) throw new SweepError(`reorder must be off or SHARE/WINDOW (2%/3), not ${JSON.stringify(value)}`);
        c.reorder = { probability: share(m[1] as string, 'reorder share'), window: int(m[2] as string, 'reorder window', 1, 64) };
        break;
      }
      case 'dup':
        c.duplicate = share(value, 'dup');
        break;
      case 'mtu':
        c.mtu = oneOf(value, 'mtu', CASE_MTUS);
        break;
      case 'qps':
        c.qps = int(value, 'qps', 1, MAX_CASE_QPS);
        break;
      case 'mix':
        c.mix = oneOf(value, 'mix', WORKLOAD_MIXES);
        break;
      case 'bytes':
        c.bytes = bytesValue(value);
        break;
      case 'at':
        c.at = oneOf(value, 'at', CASE_CAPTURE_POINTS);
        break;
      default:
        throw new SweepError(`unknown case key ${JSON.stringify(key)}; known: seed, loss, burst, reorder, dup, mtu, qps, mix, bytes, at`);
    }
  }
  return c;
}
