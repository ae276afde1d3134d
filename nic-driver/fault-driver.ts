/**
 * The fault injector of the in-memory link (faults.ts) on a real driver: frames
 * received and frames sent pass through a `FaultInjector` each, so a test can
 * make the stack lose, duplicate, corrupt or ECN-mark frames on its own side of
 * a real link (the rxe interop runs use it for loss; there is no netem here).
 *
 * Faults that act at once are applied (drop, loss bursts, duplicate, corrupt,
 * ECN CE, targeted drop/duplicate/corrupt/ecnCe rules); delays, jitter and
 * reordering need a clock the real link does not have, and are refused.
 *
 * Turned on for `roce pingpong` / `roce perftest` by the environment
 * (apps/host/environment.ts reads it and hands it to the host device):
 *   ROCE_FAULTS='{"rx":{"drop":0.02},"tx":{"drop":0.02},"seed":7}'
 * `rx` applies to frames the stack receives, `tx` to frames it sends.
 */
import { FaultInjector, type FaultConfig, type FaultCounters } from './faults';
import type { NicDriver } from './driver';
import { PassThroughDriver } from './pass-through-driver';
import { Rng } from '../base/rng';
import { LinkConfigError } from './link-config-error';

export interface HostFaults {
  rx?: FaultConfig;
  tx?: FaultConfig;
  /** Seed of both injectors (default: random). */
  seed?: number;
}

function refuseTimed(c: FaultConfig | undefined, where: string): void {
  if (c === undefined) return;
  const timed = (['delayNs', 'jitterNs', 'reorder'] as const).filter((k) => c[k] !== undefined && c[k] !== 0);
  if (timed.length > 0)
    throw new LinkConfigError(`${where}: ${timed.join(', ')} cannot be applied on a real link (only drop, dropBurst, duplicate, corrupt, ecnCe and rules)`);
  if ((c.rules ?? []).some((r) => r.action === 'delay')) throw new LinkConfigError(`${where}: delay rules cannot be applied on a real link`);
}

/**
 * The faults a JSON text asks for (the value of ROCE_FAULTS, read by apps/host/environment.ts;
 * `name` labels the messages). Throws on a malformed value.
 */
export function parseHostFaults(text: string, name: string): HostFaults {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new LinkConfigError(`${name} is not JSON: ${(e as Error).message}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new LinkConfigError(`${name} must be a JSON object with "rx" and/or "tx" fault configs`);
  const f = v as HostFaults;
  for (const k of Object.keys(f))
    if (k !== 'rx' && k !== 'tx' && k !== 'seed') throw new LinkConfigError(`${name}: unknown key ${JSON.stringify(k)} (rx, tx, seed)`);
  refuseTimed(f.rx, `${name}.rx`);
  refuseTimed(f.tx, `${name}.tx`);
  return f;
}

export class FaultDriver extends PassThroughDriver {
  private readonly rxInj: FaultInjector | null;
  private readonly txInj: FaultInjector | null;

  constructor(inner: NicDriver, faults: HostFaults) {
    super(inner);
    refuseTimed(faults.rx, 'rx');
    refuseTimed(faults.tx, 'tx');
    const seed = faults.seed ?? Math.floor(Math.random() * 0x7fffffff);
    this.rxInj = faults.rx === undefined ? null : new FaultInjector('b->a', new Rng(seed), faults.rx);
    this.txInj = faults.tx === undefined ? null : new FaultInjector('a->b', new Rng(seed ^ 0x5bd1e995), faults.tx);
  }

  /** What each injector did so far. */
  get faultCounters(): { rx: FaultCounters | null; tx: FaultCounters | null } {
    return { rx: this.rxInj?.counters ?? null, tx: this.txInj?.counters ?? null };
  }

  override txBurst(frames: readonly Uint8Array[]): number {
    const inj = this.txInj;
    if (inj === null) return this.inner.txBurst(frames);
    const out: Uint8Array[] = [];
    for (const f of frames) for (const e of inj.process(f.slice(), 0)) out.push(e.frame);
    if (out.length > 0) this.inner.txBurst(out);
    // The caller's frames were all taken (some of them by the injector).
    return frames.length;
  }

  override rxBurst(max: number): Uint8Array[] {
    const inj = this.rxInj;
    if (inj === null) return this.inner.rxBurst(max);
    // Copies, so the inner driver may be asked again: a burst that was dropped whole must not look
    // like an empty ring to a caller that drains until it gets nothing.
    const out: Uint8Array[] = [];
    for (;;) {
      const frames = this.inner.rxBurst(max);
      if (frames.length === 0) return out;
      for (const f of frames) for (const e of inj.process(f.slice(), 0)) out.push(e.frame);
      if (out.length > 0) return out;
    }
  }
}

/** `driver` wrapped in a FaultDriver when `faults` is given, else `driver` itself. */
export function withFaults(driver: NicDriver, faults: HostFaults | null): NicDriver {
  return faults === null ? driver : new FaultDriver(driver, faults);
}
