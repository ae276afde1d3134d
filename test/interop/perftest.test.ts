/**
 * Interop with Linux rdma_rxe: perftest's ib_{write,read,send,atomic}_bw and
 * ib_{write,read,send,atomic}_lat (unmodified, in a qemu guest) against `roce perftest`, each in
 * both roles, in one guest boot; then -q 4 (four QPs) for write, read and send bandwidth, -c UC
 * (write and send bandwidth), -c UD (send bandwidth and latency) and duration mode (-D 2, write and
 * send bandwidth). Short runs (TCG): -n 100 for bandwidth, 200 for the rest, 25 per QP of 4 KiB
 * with -q 4, 50 for UC and UD bandwidth.
 *
 * @group interop
 */
import { type LabRun, type Step, interopSkipReason, perftestRows, runLab } from './lab';
import {
  analyseRun,
  expectCleanCapture,
  expectConversations,
  expectNoViolations,
  expectPerftest,
  expectReplays,
  oobShape,
  stepOf,
  tcpConversationsOn,
} from './checks';
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
  /** Iterations; in duration mode (-D) none. */
  iters: number | null;
  /** perftest -q (given to both ends). */
  qps: number;
  /** perftest -c (given to both ends). */
  conn: 'RC' | 'UC' | 'UD';
  /** perftest -D seconds (given to both ends), or null. */
  duration: number | null;
  /** perftest -a (given to both ends): every size from 2 B to 8 MiB. */
  all: boolean;
  /** perftest -b (given to both ends): both send at once. */
  bi: boolean;
  /** The flags both ends take beyond -n (-q, -s, -c, -D, -a), and the case's name for them. */
  flags: string;
}

function adder(list: Case[]): (verb: Case['verb'], lat: boolean, o: Partial<Case> & { size: number }) => void {
  return (verb, lat, o) => {
    for (const guestRole of ['server', 'client'] as const) {
      const c: Case = { id: list.length + 1, verb, lat, guestRole, iters: 100, qps: 1, conn: 'RC', duration: null, all: false, bi: false, flags: '', ...o };
      const f: string[] = [];
      if (c.qps > 1) f.push(`-q ${c.qps}`);
      if (c.conn !== 'RC') f.push(`-c ${c.conn}`);
      if (c.duration !== null) f.push(`-D ${c.duration}`);
      if (c.bi) f.push('-b');
      if (c.all) f.push('-a');
      else if (f.length > 0 && (c.qps > 1 || c.size !== (lat ? 2 : 65536))) f.push(`-s ${c.size}`);
      list.push({ ...c, flags: f.join(' ') });
    }
  };
}
const CASES: Case[] = [];
const add = adder(CASES);
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
  add(verb, lat, { size: verb === 'atomic' ? 8 : lat ? 2 : 65536, iters: !lat && verb !== 'atomic' ? 100 : 200 });
}
// -q 4 with 4 KiB messages: four QPs of 64 KiB messages outrun the TCG guest's rxe, which then drops and NAKs (go-back-N works, but the capture grows tenfold).
for (const verb of ['write', 'read', 'send'] as const) add(verb, false, { size: 4096, iters: 25, qps: 4 });
// Unreliable transports: UC for write and send bandwidth, UD for send bandwidth and latency (a UD message is one packet of the 1024-byte MTU).
add('write', false, { size: 4096, iters: 50, conn: 'UC' });
add('send', false, { size: 4096, iters: 50, conn: 'UC' });
add('send', false, { size: 1024, iters: 50, conn: 'UD' });
add('send', true, { size: 2, iters: 100, conn: 'UD' });

// A second boot for the runs that move hundreds of MB (not recorded: their figures come from both
// ends' reports). Duration mode against the real tool, -D 2 (perftest's margin is then 2 / 4 = 0
// whole seconds); all sizes, -a (2 B .. 8 MiB, -n 5 each) for write bandwidth and latency; both
// directions at once, -b, for write and send bandwidth.
const LONG: Case[] = [];
const addLong = adder(LONG);
addLong('write', false, { size: 65536, iters: null, duration: 2 });
addLong('send', false, { size: 65536, iters: null, duration: 2 });
addLong('write', false, { size: 1 << 23, iters: 5, all: true });
addLong('write', true, { size: 1 << 23, iters: 5, all: true });
addLong('write', false, { size: 65536, iters: 50, bi: true });
addLong('send', false, { size: 65536, iters: 50, bi: true });

const tool = (c: Case): string => `ib_${c.verb}_${c.lat ? 'lat' : 'bw'}`;
const title = (c: Case): string => `${tool(c)}${c.flags !== '' ? ` ${c.flags}` : ''}, ${c.guestRole === 'server' ? 'roce-ts client' : 'roce-ts server'}`;
const both = (c: Case): string => `${c.iters !== null ? ` -n ${c.iters}` : ''}${c.flags !== '' ? ` ${c.flags}` : ''}`;

const steps = (cases: readonly Case[]): Step[] =>
  cases.map((c) => ({
    id: c.id,
    guestRole: c.guestRole,
    guest: `${tool(c)} -d rxe0 -x @GID@${both(c)} -F${c.guestRole === 'client' ? ' @PEER@' : ''}`,
    host: `$ROCE perftest ${c.verb}${c.lat ? ' --lat' : ''}${c.guestRole === 'server' ? ' $RXE_GUEST_IP' : ''} -d $RXE_TAP${both(c)} --json --timeout 80`,
    timeoutS: 90,
  }));
const STEPS = steps(CASES);

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
    expectPerftest(run, stepOf(run, c.id), {
      verb: c.verb,
      lat: c.lat,
      size: c.size,
      iters: c.iters,
      guestRole: c.guestRole,
      qps: c.qps,
      conn: c.conn,
      duration: c.duration,
    });
  });

  let analysis: AnalysisResult | undefined;
  const analysed = (): AnalysisResult => (analysis ??= analyseRun(run));
  test('roce analyze: one conversation per step with the QPNs both sides printed, no bad frame, no rule violation', () => {
    expectConversations(
      run,
      analysed(),
      CASES.map((c) => ({
        id: c.id,
        type: c.conn === 'RC' ? ('rc' as const) : c.conn === 'UC' ? ('uc' as const) : ('ud' as const),
        qps: c.qps,
        oneWay: !c.lat && c.conn !== 'RC' ? (c.guestRole === 'server' ? ('host-sends' as const) : ('guest-sends' as const)) : undefined,
      })),
    );
    expectNoViolations(analysed());
  });
  test('roce replay, both roles: the stack answers like rxe and rxe like the stack (no violation)', async () => {
    await expectReplays(run, analysed());
  }, 120_000);

  // The exchange on 18515 (version, system data, MTU, keys, reports, done): the stack's bytes
  // have the same length and separators as the tool's, in each direction, for each binary.
  test.each(CASES.filter((c) => c.guestRole === 'server').map((c) => [`${tool(c)}${c.flags !== '' ? ` ${c.flags}` : ''}`, c] as const))(
    "%s: out-of-band exchange has the tool's format in both roles",
    (_n, c) => {
      // One connection per step, in step order.
      const convs = tcpConversationsOn(run, 18515, CASES.length);
      const idx = (id: number): number => CASES.findIndex((x) => x.id === id);
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
    },
  );
});

d('perftest against roce perftest, duration mode (-D 2) and all sizes (-a), netdev MTU 1500 (RoCE 1024)', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('perftest-long', steps(LONG), { capture: false });
  }, 900_000);

  test('the guest booted, ran every step and powered off', () => {
    expect(run.console).toContain('RXE-END');
  });

  test.each(LONG.map((c) => [title(c), c] as const))('%s', (_n, c) => {
    const s = stepOf(run, c.id);
    if (c.bi) {
      // -b: both sides sent 50 messages; each prints (and roce-ts reports) the sum of both directions.
      expectPerftest(run, s, { verb: c.verb, lat: c.lat, size: c.size, iters: c.iters, guestRole: c.guestRole, duplex: true });
      const j = s.hostJson as { gbps: number; bidirectional: { peer: { messages: number; gbps: number }; gbpsBothWays: number } | null };
      expect(j.bidirectional?.peer.messages).toBe(50);
      expect(j.bidirectional?.gbpsBothWays).toBeCloseTo(j.gbps + (j.bidirectional?.peer.gbps ?? 0), 4);
      return;
    }
    if (!c.all) {
      expectPerftest(run, s, { verb: c.verb, lat: c.lat, size: c.size, iters: c.iters, guestRole: c.guestRole, duration: c.duration });
      return;
    }
    // -a: the tool prints a row for every size it measured (the server of write bandwidth only
    // the last, which roce-ts's client reported); roce-ts reports every size it measured.
    expect(s.guestRc).toBe(0);
    expect(s.hostRc).toBe(0);
    const sizes = Array.from({ length: 23 }, (_, i) => 2 << i);
    const j = s.hostJson as { ok: boolean; msgSize: number; sizes: { msgSize: number; messages: number }[] } | null;
    expect(j).toMatchObject({ ok: true, msgSize: 1 << 23 });
    const rows = perftestRows(s.guestOut);
    const guestMeasures = c.lat || c.guestRole === 'client';
    expect(rows.map((r) => r.bytes)).toEqual(guestMeasures ? sizes : [1 << 23]);
    for (const r of rows) expect(r.iters).toBe(5);
    const hostMeasures = c.lat || c.guestRole === 'server';
    expect(j?.sizes.map((x) => x.msgSize)).toEqual(hostMeasures ? sizes : []);
    for (const x of j?.sizes ?? []) expect(x.messages).toBe(5);
  });
});
