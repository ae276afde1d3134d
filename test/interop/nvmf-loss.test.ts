/**
 * NVMe over Fabrics against Linux under 2 % loss each way, both ways in one boot of an rdma_rxe
 * guest, as test/interop/nvmf.test.ts runs them without loss: `roce nvmf host` against nvmet-rdma,
 * and nvme-cli (nvme-rdma) against `roce nvmf target`. Frames to the guest are dropped by the lab's
 * nftables numgen rule on its eth0 ingress, frames to the stack by its own fault injector
 * (ROCE_FAULTS). The data written still compares equal both ways, every NVMe command is answered,
 * and the capture shows both transports recovering.
 *
 * @group interop
 */
import { type LabRun, type Step, GUEST_IP, HOST_IP, runLab, interopSkipReason } from './lab';
import { analyseRun, expectCleanCapture, expectExits, expectNoViolations, recoveryBySide, stepOf } from './checks';
import { analyzeCommand } from '../../cli/analyze-command';
import { memoryOutput } from '../../cli/output';
import { RECEIVE_DEPENDENT_RULES } from '../../analysis/gbn-checks';
import type { NvmeQueueReport } from '../../ulp/nvme-rdma/command-analysis';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe NVMe-oF loss interop [skipped: ${skip}]`, () => undefined);

const FAULTS = `ROCE_FAULTS='{"rx":{"drop":0.02}}'`;
const LINUX_NQN = 'nqn.2024-01.io.example:ram';
const ROCE_NQN = 'nqn.2024-01.io.roce-ts:ram';
const STEPS: Step[] = [
  {
    id: 1,
    guestRole: 'server',
    port: 4420,
    guest: `nvmf-guest target 198.18.0.1 4420 ${LINUX_NQN} 8`,
    host: `${FAULTS} $ROCE nvmf host --addr $RXE_GUEST_IP -d $RXE_TAP --nqn ${LINUX_NQN} --blocks 256 --json`,
    timeoutS: 200,
  },
  {
    id: 2,
    guestRole: 'client',
    port: 4420,
    guest: `nvmf-guest host @PEER@ 4420 ${ROCE_NQN} 64`,
    host: `${FAULTS} $ROCE nvmf target --addr $RXE_HOST_IP -d $RXE_TAP --size 4M --sessions 2 --timeout 180 --json`,
    timeoutS: 200,
  },
];

const nvmfLines = (run: LabRun, id: number): string[] =>
  stepOf(run, id)
    .guestOut.split('\n')
    .filter((l) => l.startsWith('NVMF-'));

d('NVMe over Fabrics against Linux with 2 % loss each way', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('nvmf-loss', STEPS, { guestLoss: 200 });
  }, 600_000);

  test('frames were dropped on the guest side; every frame captured decodes with a valid ICRC', () => {
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
    expect(run.guestNft).toMatch(/^packets [1-9]\d* bytes \d+$/);
  });

  test('roce nvmf host against nvmet-rdma: 256 blocks written, read back equal, flushed, disconnected', () => {
    const s = stepOf(run, 1);
    expectExits(s);
    expect(s.hostJson).toMatchObject({ ok: true, verified: true, flushed: true, written: { bytes: 256 * 512 } });
    expect(nvmfLines(run, 1)).toContain('NVMF-HOST-GONE');
  });

  test('nvme-cli against roce nvmf target: dd writes 64 blocks, reads them back equal; flush; disconnect', () => {
    const s = stepOf(run, 2);
    expectExits(s);
    const lines = nvmfLines(run, 2);
    expect(lines).toContain('NVMF-WRITTEN 64 blocks of 4096');
    expect(lines.some((l) => l.startsWith('NVMF-COMPARED 64 blocks equal'))).toBe(true);
    expect(lines).toContain('NVMF-DISCONNECTED');
    expect(s.hostJson).toMatchObject({ ok: true });
  });

  // The capture (qemu filter-dump on the guest's netdev) holds every frame as sent; the drops come
  // after it, so rules on how a requester reacts to what it received are not checked (loss.test.ts).
  test('roce analyze (as sent): both sides lost requests and recovered; no violation; every NVMe command answered', async () => {
    const r = analyseRun(run, 'sent');
    expect(r.rulesNotChecked).toEqual([...RECEIVE_DEPENDENT_RULES]);
    expectNoViolations(r);
    const by = recoveryBySide(r);
    for (const ip of [GUEST_IP, HOST_IP]) expect({ ip, retransmitted: (by[ip]?.retransmissions ?? 0) > 0 }).toEqual({ ip, retransmitted: true });
    const out = memoryOutput();
    expect(await analyzeCommand(['--json', '--capture-point', 'sent', run.capturePath], out)).toBe(0);
    const queues = ((JSON.parse(out.out) as { nvme?: { queues: NvmeQueueReport[] } }).nvme?.queues ?? []).filter((q) => q.commands > 0);
    expect(queues.length).toBeGreaterThanOrEqual(4);
    for (const q of queues)
      expect({ queue: q.queue, never: q.neverCompleted.map((c) => c.name), errors: q.errors.length }).toEqual({ queue: q.queue, never: [], errors: 0 });
  });
});
