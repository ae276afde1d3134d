/**
 * `roce nvmf host` against `roce nvmf target`, both as commands in this process over the memory
 * test mode (the in-memory link on the virtual clock): the host's steps and JSON, the target's
 * report of the association (the SEND with Invalidate counted), --no-invalidate and --no-inline,
 * and usage errors.
 */
import { roce } from '../support/cli';

const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function pair(targetArgs: string[], hostArgs: string[]) {
  const t = roce('nvmf', 'target', '-d', 'sim-b', '--driver', 'memory', '--addr', '198.18.0.2', '--sessions', '1', ...targetArgs);
  await later(20);
  const h = roce('nvmf', 'host', '-d', 'sim-a', '--driver', 'memory', '--addr', '198.18.0.2', ...hostArgs);
  return Promise.all([t, h]);
}

test('host and target: the steps, the data compared, the association ended by the host', async () => {
  const [t, h] = await pair(['--size', '1M'], ['--blocks', '24']);
  expect({ code: h.code, err: h.err }).toEqual({ code: 0, err: '' });
  expect({ code: t.code, err: t.err }).toEqual({ code: 0, err: '' });
  expect(h.out).toMatch(/^admin queue connected: controller 1 of nqn\.2024-01\.io\.roce-ts:ram$/m);
  expect(h.out).toMatch(/^namespace 1: 2048 blocks of 512 B; 1 I\/O queue granted$/m);
  expect(h.out).toMatch(/^wrote 12288 B at LBA 0: 4096 B in the capsule, 8192 B by keyed SGL, 2 commands$/m);
  expect(h.out).toMatch(/^read 12288 B back in 1 command \(key 0x[0-9a-f]{8} invalidated by the controller\): equal$/m);
  expect(t.out).toMatch(
    /^controller 1 \(nqn\.2014-08\.org\.nvmexpress:uuid:[0-9a-f-]+\): \d+ commands, 0 with an error status, 1 SEND with Invalidate; ended: disconnect$/m,
  );
  expect(t.out).toMatch(/^nvmf-target: served 1 association$/m);
}, 60_000);

test('--json, --no-invalidate --no-inline: keyed SGLs only, no invalidation', async () => {
  const [t, h] = await pair(['--json'], ['--json', '--no-invalidate', '--no-inline', '--blocks', '8', '--lba', '7']);
  expect(h.code).toBe(0);
  expect(t.code).toBe(0);
  const hj = JSON.parse(h.out) as Record<string, unknown>;
  const tj = JSON.parse(t.out) as Record<string, unknown>;
  expect(hj).toMatchObject({
    ok: true,
    test: 'nvmf-host',
    verified: true,
    flushed: true,
    written: { bytes: 4096, inCapsule: 0, keyed: 4096 },
    read: { invalidatedKey: null },
    driver: 'memory',
  });
  expect(tj).toMatchObject({ ok: true, test: 'nvmf-target', ended: 'served 1 association' });
  expect((tj['associations'] as { invalidations: number }[])[0]?.invalidations).toBe(0);
}, 60_000);

test('usage errors', async () => {
  expect((await roce('nvmf', '--addr', '198.18.0.2')).code).toBe(2);
  expect((await roce('nvmf', 'host', '-d', 'sim-a', '--driver', 'memory')).err).toMatch(/--addr ADDR is required/);
  expect((await roce('nvmf', 'host', '--addr', '198.18.0.2', '--size', '1M', '-d', 'sim-a', '--driver', 'memory')).err).toMatch(
    /--size is an option of nvmf target/,
  );
  expect((await roce('nvmf', 'target', '--addr', '198.18.0.2', '--size', '1000', '-d', 'sim-b', '--driver', 'memory')).err).toMatch(
    /--size must be a multiple of 512/,
  );
});
