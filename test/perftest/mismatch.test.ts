/**
 * `roce perftest --mismatch`: a client that connects its QP wrong on purpose, against a correct
 * server over the simulated link, and what the wire and the diagnosis show of it.
 */
import { TcpChannel } from '../../apps/oob/tcp-channel';
import { runPerftest } from '../../apps/perftest/run';
import type { PerftestConfig, Mismatch } from '../../apps/perftest/config';
import type { PerftestResult } from '../../apps/perftest/result';
import { PerftestError } from '../../apps/perftest/perftest-error';
import { createSimPair } from '../../apps/sim/sim-pair';
import { AllocationOrder } from '../../stack/allocation-order';
import { pumpVirtualClock } from '../../apps/host/clock-pump';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { analyzeCapture } from '../../analysis/analyzer';
import { DiagnosisCause } from '../../analysis/connection-doctor';
import { decodeFrame } from '../../packets/decode';
import { iterateCapture } from '../../packets/pcap';
import { expectRefused } from './pair';

/** A write bandwidth run whose client has `mismatch`; the client's outcome (result or error), the server's QPN and the capture. */
async function mismatched(mismatch: Mismatch): Promise<{ client: PerftestResult | unknown; capture: Uint8Array }> {
  const tap = new PcapTap();
  // rxe's sequential order: each end's one QP is 0x11, so the server's QPN is known.
  const sim = createSimPair({ seed: 5, tap, allocation: AllocationOrder.SEQUENTIAL });
  const pump = pumpVirtualClock(sim.clock);
  const listener = await TcpChannel.listen(0, '127.0.0.1');
  try {
    const base: Omit<PerftestConfig, 'role'> = {
      verb: 'write',
      lat: false,
      iters: 8,
      size: 1024,
      stepTimeoutMs: 5000,
      runTimeoutMs: 20_000,
      connectTimeoutMs: 5000,
      qpTimeout: 10,
    };
    const server = runPerftest(sim.b, { ...base, role: 'server', listener }).catch((e: unknown) => e);
    const client = await runPerftest(sim.a, { ...base, role: 'client', server: '127.0.0.1', port: listener.port, mismatch }).catch((e: unknown) => e);
    await server;
    return { client, capture: tap.bytes() };
  } finally {
    listener.close();
    pump.stop();
  }
}

function requestsOf(capture: Uint8Array): { destQp: number; psn: number }[] {
  const out: { destQp: number; psn: number }[] = [];
  for (const r of iterateCapture(capture)) {
    const p = decodeFrame(r.data);
    if (p.roce && p.bth !== null && p.aeth === null) out.push({ destQp: p.bth.destQp, psn: p.bth.psn });
  }
  return out;
}

function failed(client: unknown): boolean {
  if (client instanceof PerftestError) return true;
  return (client as PerftestResult).problems.length > 0;
}

test('--mismatch psn: the client starts one PSN past its announced one; the server NAKs the sequence and the diagnosis names a wrong start PSN', async () => {
  const { client, capture } = await mismatched('psn');
  expect(failed(client)).toBe(true);
  const d = analyzeCapture(capture).diagnosis;
  expect(d.map((x) => x.cause)).toContain(DiagnosisCause.WRONG_PSN);
}, 30_000);

test('--mismatch qpn: the client sends to a QPN one past the server QPN, nothing answers, and its retries run out', async () => {
  const { client, capture } = await mismatched('qpn');
  expect(failed(client)).toBe(true);
  const reqs = requestsOf(capture);
  expect(reqs.length).toBeGreaterThan(1);
  // Every request went to 0x12, one past the server's QP 0x11.
  expect(new Set(reqs.map((r) => r.destQp))).toEqual(new Set([0x12]));
  expect(analyzeCapture(capture).diagnosis.map((x) => x.cause)).toContain(DiagnosisCause.RETRY_EXHAUSTED);
}, 30_000);

test('--mismatch is refused outside RC over the TCP exchange', async () => {
  await expectRefused({ mismatch: 'qpn' }, [
    [{ connection: 'UC' }, /mismatch.*RC/],
    [{ rdmaCm: true }, /mismatch.*RDMA CM/],
  ]);
});
