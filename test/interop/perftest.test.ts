/**
 * Interop with Linux rdma_rxe: perftest's ib_{write,read,send,atomic}_bw and
 * ib_{write,read,send,atomic}_lat (unmodified, in a qemu guest) against `roce perftest`, each in
 * both roles, in one guest boot; then -q 4 (four QPs) for write, read and send bandwidth. Short
 * runs (TCG): -n 100 for bandwidth, 200 for the rest, 25 per QP of 4 KiB with -q 4.
 */
import { type LabRun, type Step, interopSkipReason, runLab } from './lab';
import { analyseRun, expectCleanCapture, expectConversations, expectNoViolations, expectPerftest, expectReplays, oobShape, stepOf } from './checks';
import type { AnalysisResult } from '../../analysis/analyzer';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe perftest interop [skipped: ${skip}]`, () => undefined);

interface Case {
  id: number;
  verb: 'write' | 'read' | 'send' | 'atomic';
  lat: boolean;
  guestRole: 'server' | 'client';
  size: number;
  iters: number;
  /** perftest -q (given to both ends). */
  qps: number;
}

const CASES: Case[] = [];
for (const [verb, lat] of [
  ['write', false],
  ['read', false],
  ['send', false],
  ['atomic', false],
  ['write', true],
  ['read', true],
  ['send', true],
  ['atomic', true],
] as const) {
  for (const guestRole of ['server', 'client'] as const) {
    const iters = !lat && verb !== 'atomic' ? 100 : 200;
    CASES.push({ id: CASES.length + 1, verb, lat, guestRole, size: verb === 'atomic' ? 8 : lat ? 2 : 65536, iters, qps: 1 });
  }
}
for (const verb of ['write', 'read', 'send'] as const) {
  // 4 KiB messages: four QPs of 64 KiB messages outrun the TCG guest's rxe, which then drops and NAKs (go-back-N works, but the capture grows tenfold).
  for (const guestRole of ['server', 'client'] as const) CASES.push({ id: CASES.length + 1, verb, lat: false, guestRole, size: 4096, iters: 25, qps: 4 });
}

const tool = (c: Case): string => `ib_${c.verb}_${c.lat ? 'lat' : 'bw'}`;
const title = (c: Case): string => `${tool(c)}${c.qps > 1 ? ` -q ${c.qps}` : ''}, ${c.guestRole === 'server' ? 'roce-ts client' : 'roce-ts server'}`;
const qpFlag = (c: Case): string => (c.qps > 1 ? ` -q ${c.qps}` : '');
const sizeFlag = (c: Case): string => (c.qps > 1 ? ` -s ${c.size}` : '');

const STEPS: Step[] = CASES.map((c) => ({
  id: c.id,
  guestRole: c.guestRole,
  guest: `${tool(c)} -d rxe0 -x @GID@ -n ${c.iters}${sizeFlag(c)}${qpFlag(c)} -F${c.guestRole === 'client' ? ' @PEER@' : ''}`,
  host: `$ROCE perftest ${c.verb}${c.lat ? ' --lat' : ''}${c.guestRole === 'server' ? ' $RXE_GUEST_IP' : ''} -d $RXE_TAP -n ${c.iters}${sizeFlag(c)}${qpFlag(c)} --json --timeout 80`,
  timeoutS: 90,
}));

d('perftest against roce perftest, netdev MTU 1500 (RoCE 1024)', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('perftest-mtu1500', STEPS);
  }, 900_000);

  test('the guest booted, ran every step and powered off; the capture decodes with valid ICRCs', () => {
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
  });

  test.each(CASES.map((c) => [title(c), c] as const))('%s', (_n, c) => {
    expectPerftest(run, stepOf(run, c.id), { verb: c.verb, lat: c.lat, size: c.size, iters: c.iters, guestRole: c.guestRole, qps: c.qps });
  });

  let analysis: AnalysisResult | undefined;
  const analysed = (): AnalysisResult => (analysis ??= analyseRun(run));
  test('roce analyze: one conversation per step with the QPNs both sides printed, no bad frame, no rule violation', () => {
    expectConversations(run, analysed(), CASES.map((c) => ({ id: c.id, type: 'rc' as const, qps: c.qps })));
    expectNoViolations(analysed());
  });
  test('roce replay, both roles: the stack answers like rxe and rxe like the stack (no violation)', async () => {
    await expectReplays(run, analysed());
  }, 120_000);

  // The exchange on 18515 (version, system data, MTU, keys, reports, done): the stack's bytes
  // have the same length and separators as the tool's, in each direction, for each binary.
  test.each(CASES.filter((c) => c.guestRole === 'server').map((c) => [`${tool(c)}${qpFlag(c)}`, c] as const))('%s: out-of-band exchange has the tool\'s format in both roles', (_n, c) => {
    const convs = run.capture.tcp.filter((t) => t.port === 18515);
    const idx = (id: number): number => CASES.findIndex((x) => x.id === id);
    // One connection per step, in step order.
    expect(convs.length).toBe(CASES.length);
    const stackClient = convs[idx(c.id)];
    const toolClient = convs[idx(c.id + 1)];
    expect(stackClient).toBeDefined();
    expect(toolClient).toBeDefined();
    if (stackClient === undefined || toolClient === undefined) return;
    expect(stackClient.client.startsWith('198.18.0.2:')).toBe(true);
    expect(toolClient.client.startsWith('198.18.0.1:')).toBe(true);
    expect(oobShape(stackClient.toServer)).toBe(oobShape(toolClient.toServer));
    expect(oobShape(stackClient.toClient)).toBe(oobShape(toolClient.toClient));
    // The version message: 16 bytes, NUL-padded, the same on both sides.
    expect(stackClient.toServer.subarray(0, 16)).toEqual(toolClient.toServer.subarray(0, 16));
    expect(stackClient.toServer.subarray(0, 16).toString('latin1')).toMatch(/^\d+\.\d+\0+$/);
  });
});
