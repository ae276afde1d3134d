/**
 * The batched ICRC (packets/icrc.ts `IcrcBatch`) in the native addon: one call seals or checks a
 * whole burst of frames, 15-40x faster than `jsIcrcBatch`, with the same values. Composition roots
 * hand it to the device (stack/device.ts `DeviceConfig.icrc`); the engine itself never loads the addon.
 */
import { type IcrcBatch, jsIcrcBatch } from '../packets/icrc';
import { icrcDescBurst, icrcSealBurst, nativeAvailable } from './native-binding';

const NATIVE_ICRC: IcrcBatch = Object.freeze({
  name: 'native',
  seal: icrcSealBurst,
  compute: icrcDescBurst,
});

/** The native batched ICRC, or null when the addon is not available (nativeLoadError() says why). */
export function nativeIcrcBatch(): IcrcBatch | null {
  return nativeAvailable() ? NATIVE_ICRC : null;
}

/** The native batched ICRC when the addon loads, else the TypeScript one. */
export function fastestIcrcBatch(): IcrcBatch {
  return nativeIcrcBatch() ?? jsIcrcBatch;
}
