/**
 * NVMe over Fabrics against Linux, both ways in one boot of an rdma_rxe guest
 * (scripts/rxe-lab/nvmf-guest):
 *   1. Linux's target, nvmet-rdma on a brd RAM disk configured through configfs, and `roce nvmf
 *      host` against it: Connect, Identify, Writes (the first in the capsule, as nvmet offers a page
 *      of in-capsule data), Reads (the last with a key to invalidate), compare, Flush, disconnect.
 *   2. `roce nvmf target` and Linux's host, nvme-rdma driven by nvme-cli: `nvme discover`, `nvme
 *      connect -t rdma`, dd of random data with O_DIRECT, read back and compared, `nvme flush`,
 *      `nvme disconnect`.
 * The boot's capture decodes as NVMe-oF and `roce analyze` finds no violation by roce-ts and every
 * NVMe command answered.
 *
 * @group interop
 */
import { type LabRun, type Step, GUEST_IP, HOST_IP, runLab, interopSkipReason } from './lab';
import { analyseRun, expectCleanCapture, expectExits, stepOf } from './checks';
import { analyzeCommand } from '../../cli/analyze-command';
import { decodeCommand } from '../../cli/decode-command';
import { memoryOutput } from '../../cli/output';
import type { NvmeQueueReport } from '../../ulp/nvme-rdma/command-analysis';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe NVMe-oF interop [skipped: ${skip}]`, () => undefined);

const LINUX_NQN = 'nqn.2024-01.io.example:ram';
const ROCE_NQN = 'nqn.2024-01.io.roce-ts:ram';
const STEPS: Step[] = [
  {
    id: 1,
    guestRole: 'server',
    port: 4420,
    guest: `nvmf-guest target 198.18.0.1 4420 ${LINUX_NQN} 8`,
    host: `$ROCE nvmf host --addr $RXE_GUEST_IP -d $RXE_TAP --nqn ${LINUX_NQN} --blocks 64 --json`,
    timeoutS: 150,
  },
  {
    id: 2,
    guestRole: 'client',
    port: 4420,
    guest: `nvmf-guest host @PEER@ 4420 ${ROCE_NQN} 32`,
    // A discovery and a connection: two associations.
    host: `$ROCE nvmf target --addr $RXE_HOST_IP -d $RXE_TAP --size 4M --sessions 2 --timeout 120 --json`,
    timeoutS: 150,
  },
];

/** The guest's NVMF- lines of a step, without the prefix. */
function nvmfLines(run: LabRun, id: number): string[] {
  return stepOf(run, id)
    .guestOut.split('\n')
    .filter((l) => l.startsWith('NVMF-'));
}

d('NVMe over Fabrics against Linux: roce nvmf host against nvmet-rdma, nvme-cli against roce nvmf target', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('nvmf', STEPS);
  }, 420_000);

  test('roce nvmf host against nvmet-rdma: the data written compares equal, flushed, disconnected', () => {
    expect(run.console).toContain('RXE-END');
    const s = stepOf(run, 1);
    expectExits(s);
    expect(s.hostJson).toMatchObject({ ok: true, verified: true, flushed: true, written: { bytes: 64 * 512 } });
    // nvmet offers one page of in-capsule data on I/O queues: the first Write goes in the capsule.
    expect((s.hostJson?.['written'] as { inCapsule?: number } | undefined)?.inCapsule).toBeGreaterThan(0);
    const lines = nvmfLines(run, 1);
    expect(lines).toContain('NVMF-HOST-GONE');
    expect(lines.some((l) => l.startsWith('NVMF-DISK md5 '))).toBe(true);
  });

  test('nvme-cli against roce nvmf target: discover names the subsystem; dd writes, reads back equal; flush; disconnect', () => {
    const s = stepOf(run, 2);
    expectExits(s);
    const lines = nvmfLines(run, 2);
    expect(lines.some((l) => l.startsWith('NVMF-DISCOVER') && l.includes(ROCE_NQN))).toBe(true);
    expect(lines.some((l) => /^NVMF-CONNECTED \/dev\/nvme\d+n1 8192 sectors$/.test(l))).toBe(true);
    expect(lines).toContain('NVMF-WRITTEN 32 blocks of 4096');
    expect(lines.some((l) => l.startsWith('NVMF-COMPARED 32 blocks equal'))).toBe(true);
    expect(lines).toContain('NVMF-FLUSHED');
    expect(lines).toContain('NVMF-DISCONNECTED');
    expect(s.hostJson).toMatchObject({ ok: true });
    const assoc = (s.hostJson?.['associations'] ?? []) as { discovery: boolean; ended: string }[];
    expect(assoc.map((a) => a.discovery)).toEqual([true, false]);
  });

  test('the capture decodes as NVMe-oF, and roce analyze finds no violation and every command answered', async () => {
    expectCleanCapture(run.capture);
    const dec = memoryOutput();
    expect(await decodeCommand([run.capturePath], dec)).toBe(0);
    for (const what of ['NVMe Fabrics Connect', 'NVMe Identify', 'NVMe Write', 'NVMe Read', 'NVMe Flush', 'RC_SEND_ONLY_WITH_INVALIDATE'])
      expect(dec.out).toContain(what);
    const r = analyseRun(run);
    expect(r.violations).toEqual([]);
    const out = memoryOutput();
    expect(await analyzeCommand(['--json', run.capturePath], out)).toBe(0);
    const nvme = (JSON.parse(out.out) as { nvme?: { queues: NvmeQueueReport[] } }).nvme;
    const queues = nvme?.queues ?? [];
    // Step 1: an admin and an I/O queue; step 2: a discovery's admin queue, then an admin and an I/O queue.
    for (const q of queues) expect({ queue: q.queue, never: q.neverCompleted.map((c) => c.name) }).toEqual({ queue: q.queue, never: [] });
    // A queue is named after its controller's end: step 1's are Linux's target's, step 2's roce-ts's.
    const step1 = queues.filter((q) => q.queue.startsWith(`${GUEST_IP}/`));
    const step2 = queues.filter((q) => q.queue.startsWith(`${HOST_IP}/`));
    expect({ step1: step1.length, step2: step2.length }).toEqual({ step1: 2, step2: 3 });
    // roce-ts's host sends only what nvmet serves, and nvmet did the invalidation it asked for.
    for (const q of step1)
      expect({ queue: q.queue, errors: q.errors.map((c) => `${c.name}: ${c.completion?.statusName}`), notDone: q.invalidation.notDone.length }).toEqual({
        queue: q.queue,
        errors: [],
        notDone: 0,
      });
    expect(step1.reduce((n, q) => n + q.invalidation.done, 0)).toBeGreaterThan(0);
  });
});
