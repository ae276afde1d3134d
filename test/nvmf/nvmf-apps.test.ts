/**
 * runNvmfHost against runNvmfTarget on the two ends of the in-memory link (the virtual clock):
 * the whole bring-up, a pattern written in the capsule and by keyed SGL, read back (the last Read
 * with a key the controller invalidates), compared, Flush, shutdown; a REQ the target refuses.
 */
import { MemoryTestbed } from '../../apps/host/memory-testbed';
import { runNvmfHost } from '../../apps/nvmf/nvmf-host';
import { runNvmfTarget } from '../../apps/nvmf/nvmf-target';

test('the host brings up a controller, writes, reads back with invalidate, flushes and shuts down', async () => {
  const bed = new MemoryTestbed();
  const a = bed.open('sim-a');
  const b = bed.open('sim-b');
  try {
    const target = runNvmfTarget(b.device, { addr: '198.18.0.2', namespaceBytes: 1 << 20, sessions: 1, listenTimeoutMs: 30_000 });
    const host = await runNvmfHost(a.device, { addr: '198.18.0.2', blocks: 24 });
    const t = await target;
    expect(host).toMatchObject({ ok: true, verified: true, flushed: true, written: { bytes: 12288, inCapsule: 4096, keyed: 8192 } });
    expect(host.read.invalidatedKey).not.toBeNull();
    expect(t.ok).toBe(true);
    expect(t.associations).toHaveLength(1);
    expect(t.associations[0]).toMatchObject({ ended: 'disconnect', ioQueues: 1, failedCommands: 0, invalidations: 1 });
  } finally {
    a.close();
    b.close();
  }
}, 60_000);
