/**
 * runNvmfHost against runNvmfTarget on the two ends of the in-memory link (the virtual clock):
 * the whole bring-up, a pattern written in the capsule and by keyed SGL, read back (the last Read
 * with a key the controller invalidates), compared, Flush, shutdown; a REQ the target refuses.
 */
import { MemoryTestbed } from '../../apps/host/memory-testbed';
import { runNvmfHost } from '../../apps/nvmf/nvmf-host';
import { runNvmfTarget } from '../../apps/nvmf/nvmf-target';
import { createSimPair } from '../../apps/sim/sim-pair';
import { pumpVirtualClock } from '../../apps/host/clock-pump';

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

test('Keep Alive every KATO / 2 while the run waits: 10 ms each way and a KATO of 100 ms (the virtual clock); the association ends by disconnect', async () => {
  const sim = createSimPair({ seed: 4421, linkMtu: 1500, latencyNs: 10_000_000 });
  const pump = pumpVirtualClock(sim.clock);
  try {
    const target = runNvmfTarget(sim.b, { addr: '198.18.0.2', namespaceBytes: 1 << 20, sessions: 1, listenTimeoutMs: 60_000 });
    const host = await runNvmfHost(sim.a, { addr: '198.18.0.2', blocks: 24, kato: 100 });
    const runMs = sim.clock.now() / 1e6;
    const t = await target;
    expect(host).toMatchObject({ ok: true, verified: true, flushed: true });
    // More than fifteen commands of a 20 ms round trip each: over 300 ms, six KATO / 2 periods at
    // least; each Keep Alive is answered in a round trip, before the next is due.
    expect(runMs).toBeGreaterThan(300);
    expect(host.keepAlives).toBeGreaterThanOrEqual(Math.floor((runMs - 200) / 50));
    expect(host.keepAlives).toBeLessThanOrEqual(Math.ceil(runMs / 50));
    expect(t.associations[0]).toMatchObject({ ended: 'disconnect', failedCommands: 0 });
  } finally {
    pump.stop();
    sim.link.close();
  }
}, 60_000);

test('over loss: 3 % of frames dropped each way, and the first capsule SEND, RDMA READ response, RDMA WRITE and SEND with Invalidate: the data still compares and every association ends by disconnect', async () => {
  const lossy = (rules: { action: 'drop'; match: { opcode: string }; count: number }[]) => ({ drop: 0.03, rules });
  const sim = createSimPair({
    seed: 4420,
    linkMtu: 1500,
    faults: {
      aToB: lossy([
        { action: 'drop', match: { opcode: 'SEND_ONLY' }, count: 1 },
        { action: 'drop', match: { opcode: 'RDMA_READ_RESPONSE_FIRST' }, count: 1 },
      ]),
      bToA: lossy([
        { action: 'drop', match: { opcode: 'RDMA_WRITE_FIRST' }, count: 1 },
        { action: 'drop', match: { opcode: 'SEND_ONLY_WITH_INVALIDATE' }, count: 1 },
      ]),
    },
  });
  const pump = pumpVirtualClock(sim.clock);
  try {
    const target = runNvmfTarget(sim.b, { addr: '198.18.0.2', namespaceBytes: 1 << 20, sessions: 1, listenTimeoutMs: 60_000 });
    const host = await runNvmfHost(sim.a, { addr: '198.18.0.2', blocks: 40, slba: 100n });
    const t = await target;
    expect(host).toMatchObject({ ok: true, verified: true, flushed: true });
    expect(host.read.invalidatedKey).not.toBeNull();
    expect(t).toMatchObject({ ok: true, problems: [] });
    expect(t.associations[0]).toMatchObject({ ended: 'disconnect', failedCommands: 0, invalidations: 1 });
    // The four targeted drops at least happened, each way.
    expect(sim.link.faults.aToB.counters.dropped).toBeGreaterThanOrEqual(2);
    expect(sim.link.faults.bToA.counters.dropped).toBeGreaterThanOrEqual(2);
  } finally {
    pump.stop();
    sim.link.close();
  }
}, 120_000);

test('a wrong subsystem NQN fails the Connect with Connect Invalid Parameters; the host disconnects and the target sees the queue go', async () => {
  const bed = new MemoryTestbed();
  const a = bed.open('sim-a');
  const b = bed.open('sim-b');
  try {
    const target = runNvmfTarget(b.device, { addr: '198.18.0.2', namespaceBytes: 1 << 16, sessions: 1, listenTimeoutMs: 3000 });
    await expect(runNvmfHost(a.device, { addr: '198.18.0.2', subnqn: 'nqn.2024-01.io.example:other' })).rejects.toThrow(
      /queue 0's Connect: Connect Invalid Parameters \(SCT 1 SC 0x82, DNR\)/,
    );
    const t = await target;
    expect(t.associations).toHaveLength(0);
    expect(t.ended).toBe('no host within 3000 ms');
  } finally {
    a.close();
    b.close();
  }
}, 60_000);
