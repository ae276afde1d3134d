/**
 * What the pingpong tools' configurations ask for in common, checked: ibv_rc/uc/ud_pingpong and
 * ibv_srq_pingpong take the same message size (-s), iterations (-n), receive depth (-r), MTU (-m),
 * GID index (-g) and time bounds. Each tool checks its receive depth and GID index by its own rules.
 */
import type { Device } from '../../stack/device';
import { mtuBytes, mtuFromBytes, type Mtu } from '../../stack/mtu';
import { configError } from '../perftest/perftest-error';
import { noProgressBound } from '../host/no-progress-bound';

/** The part of a pingpong tool's plan every tool has. */
export interface PingpongPlanBase {
  size: number;
  iters: number;
  rxDepth: number;
  mtu: Mtu;
  gidIndex: number;
  stepMs: number;
  /** How long the loop waits without progress, and why that long. */
  bound: { ms: number; why: string };
}

/** The settings `checkedSizesAndBounds` reads, as both tools' configurations name them. */
export interface PingpongSizesAndBounds {
  iters?: number;
  mtu?: number;
  stepTimeoutMs?: number;
  runTimeoutMs?: number;
}

/**
 * The checks both tools make in the same words: the message size (`size`, the tool's default
 * applied), the iterations, the MTU against the link, and the time bounds.
 */
export function checkedSizesAndBounds(
  dev: Device,
  cfg: PingpongSizesAndBounds,
  size: number,
): Pick<PingpongPlanBase, 'size' | 'iters' | 'mtu' | 'stepMs' | 'bound'> {
  const iters = cfg.iters ?? 1000;
  if (!Number.isInteger(size) || size < 1 || size > 1 << 28) throw configError('size', `must be 1..${1 << 28}, got ${size}`);
  if (!Number.isInteger(iters) || iters < 1 || iters > 1e9) throw configError('iters', `must be at least 1, got ${iters}`);
  const mtu = mtuFromBytes(cfg.mtu ?? 1024);
  if (mtu === undefined) throw configError('mtu', `must be 256, 512, 1024, 2048 or 4096, got ${cfg.mtu}`);
  if (mtu > dev.maxMtu()) throw configError('mtu', `${cfg.mtu} is more than the link carries (${mtuBytes(dev.maxMtu())})`);
  const stepMs = cfg.stepTimeoutMs ?? 10_000;
  // rc_pingpong's QP timers (timeout 14, retry 7, RNR retry 7, min RNR timer 12, pp_connect_ctx),
  // which srq_pingpong's QPs share: the no-progress bound follows from them
  // (apps/host/no-progress-bound.ts) unless the caller gives one.
  const bound =
    cfg.runTimeoutMs !== undefined
      ? { ms: cfg.runTimeoutMs, why: 'the run timeout given' }
      : noProgressBound({ timeout: 14, retryCnt: 7, rnrRetry: 7, minRnrTimer: 12 });
  return { size, iters, mtu: mtu as Mtu, stepMs, bound };
}
