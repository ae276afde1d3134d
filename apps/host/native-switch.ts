/**
 * ROCE_NO_NATIVE=1: the process leaves the native addon alone (apps/host/environment.ts lists every
 * ROCE_* variable). On its own, away from the host-device settings, so that a command that opens no
 * device (`roce decode`, `roce analyze`) does not load the stack and the drivers to apply it.
 */
import { disableNative } from '../../nic-driver/native-binding';

/** A process environment (`process.env`, or what a test gives). */
export type Environment = Readonly<Record<string, string | undefined>>;

/** Turns the native addon off when ROCE_NO_NATIVE=1 says so; composition roots call it first thing. */
export function applyNativeSwitch(env: Environment): void {
  if (env['ROCE_NO_NATIVE'] === '1') disableNative('disabled by ROCE_NO_NATIVE=1');
}
