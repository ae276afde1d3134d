/**
 * Skipping with a reason. A skipped test is registered with `test.skip` and its
 * reason in the name, so jest counts it as skipped (never as a pass) and the
 * skip reporter prints the reason on one line in the summary.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';

/** Null when `tool --version` runs and exits 0 (within 10 s), else `reason`: the skip reason of a test that needs the tool. */
export function missingToolReason(tool: string, reason: string): string | null {
  return spawnSync(tool, ['--version'], { stdio: 'ignore', timeout: 10_000 }).status === 0 ? null : reason;
}

/** `test`, or a `test.skip` whose name carries the reason when `reason` is a string. */
export function testUnless(reason: string | null): (name: string, fn: () => unknown, timeout?: number) => void {
  if (reason === null) return (name, fn, timeout) => test(name, fn as jest.ProvidesCallback, timeout);
  return (name) => test.skip(`${name} [skipped: ${reason}]`, () => undefined);
}

/** The shared public captures directory (`../shared/captures/public`), or null when it is absent. */
export function publicCapturesDir(): string | null {
  const dir = path.resolve(__dirname, '..', '..', '..', 'shared', 'captures', 'public');
  return fs.existsSync(dir) ? dir : null;
}

/** Reason to skip tests that read the shared captures, or null when they are present. */
export const noPublicCaptures: string | null = publicCapturesDir() === null ? '../shared/captures/public is not present on this machine' : null;

/** Path of a file in the shared public captures directory (call only when it exists). */
export function publicCapture(rel: string): string {
  const dir = publicCapturesDir();
  if (dir === null) throw new Error('shared captures are not present');
  return path.join(dir, rel);
}
