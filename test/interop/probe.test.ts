/**
 * `roce probe` against Linux rdma_rxe, live: in one guest boot, the bundled scenarios that make
 * sense against rxe, the guest running the stock ib_write_bw, ib_read_bw or ib_send_bw in the
 * role the scenario gives the DUT (the command `roce probe` prints for it), this stack its peer on
 * the tap (AF_XDP). The timeout scenarios run with 5 messages (perftest's -n minimum) and the
 * event on the last PSN; rnr-wait also with timer 20 (10.24 ms), whose rxe bound is not zero.
 * retry-exhaust is left out: perftest sets retry_cnt 7 on the TCP exchange, and rxe counts 7 as
 * "retry forever" (rxe_comp.c rxe_completer(): `if (qp->comp.retry_cnt != 7) retry_cnt--`).
 *
 * Each figure is held to what rxe's source says, not to a speed: PSNs exact, times no earlier
 * than rxe's timers. rxe's timers are kernel timers in jiffies (CONFIG_HZ=250 in the lab's
 * kernel: 4 ms); a timer of j jiffies set with mod_timer(jiffies + j) fires more than (j - 1)
 * jiffies after it was set. The times are read from the guest NIC's capture (qemu filter-dump):
 * an ACK or NAK of ours is there before rxe takes it, rxe's resend is there after it left, so
 * the interval in the capture is at least rxe's.
 *  - nak-generation: one PSN sequence NAK for the gap, naming the skipped PSN (rxe_resp.c
 *    check_psn(): sent_psn_nak set by the first out-of-sequence request, cleared by the next in
 *    sequence).
 *  - nak-retransmit: the resend starts at the NAK's PSN (rxe_comp.c check_ack(): a sequence NAK
 *    moves comp.psn to its PSN; rxe_req.c req_retry() resends from comp.psn).
 *  - timeout-*: the resend starts at the first PSN we had not acknowledged (req_retry() from
 *    comp.psn), no earlier than (j - 1) jiffies after our last ACK, j = nsecs_to_jiffies(4096 ns
 *    × 2^timeout), at least 1 (rxe_qp.c rxe_qp_from_attr()); the timer is set at a send when none
 *    is pending (rxe_req.c update_state()) and again by the completer after an ACK while PSNs are
 *    outstanding (rxe_comp.c rxe_completer()).
 *  - rnr-wait: each resend of the RNR NAK'd PSN no earlier than (k - 1) jiffies after the NAK,
 *    k = max(1, usecs_to_jiffies(timer)) (rxe_comp.c rnrnak_jiffies(), rnr_nak_timer()).
 *  - read-retry: a new READ from the missing PSN, its address and length moved past the
 *    responses received (rxe_req.c req_retry(): iova += npsn × mtu for RDMA READ).
 *
 * @group interop
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type LabRun, type Step, GUEST_IP, HOST_IP, interopSkipReason, ipText, runLab } from './lab';
import { expectCleanCapture, stepOf } from './checks';
import { bundledScenario } from '../../apps/probe/bundled-scenarios';
import { dutCommand, PERFTEST_MIN_ITERS } from '../../apps/probe/live-runner';
import { type ProbeScenario, parseScenario, packetsPerMessage } from '../../apps/probe/scenario';
import { AethKind, NakCode, RNR_TIMER_USEC, decodeSyndrome } from '../../packets/aeth';
import { OPCODES, OpFlag, Opcode } from '../../packets/opcodes';
import { decodeFrame } from '../../packets/decode';
import { readCapture } from '../../packets/pcap';
import { psnDiff } from '../../base/psn';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe probe interop [skipped: ${skip}]`, () => undefined);

/** The lab kernel's CONFIG_HZ (Debian 6.1 amd64): one jiffy, ns. */
const JIFFY_NS = 4_000_000;

interface Case {
  id: number;
  name: string;
  yaml: string;
  scenario: ProbeScenario;
}

/** A bundled scenario with `num-msgs-per-qp` set and its first event moved (the tail of the longer run). */
function variant(name: string, as: string, o: { msgs?: number; psn?: number; timer?: number; timeout?: number }): string {
  let y = bundledScenario(name)?.yaml ?? '';
  y = y.replace(/^name: .*$/m, `name: ${as}`);
  if (o.msgs !== undefined) y = y.replace(/^traffic:\n/m, `traffic:\n  num-msgs-per-qp: ${o.msgs}\n`);
  if (o.psn !== undefined) y = y.replace(/^( {4}psn: )\d+/m, `$1${o.psn}`);
  if (o.timer !== undefined) y = y.replace(/^( {4}timer: )\d+/m, `$1${o.timer}`);
  if (o.timeout !== undefined) y = y.replace(/^( {2}min-retransmit-timeout: )\d+.*$/m, `$1${o.timeout}`);
  return y;
}

const YAMLS: [string, string][] = [
  ['nak-generation', bundledScenario('nak-generation')?.yaml ?? ''],
  ['nak-retransmit', bundledScenario('nak-retransmit')?.yaml ?? ''],
  // 16 packets a message, 5 messages: PSN 79 is the run's last.
  // Timeout 14 (67 ms, 16 jiffies) for both: the bundled 10 is one jiffy in rxe and 12 four, which
  // fire within 4 and 16 ms of being set, before a TCG guest may have our ACKs back: rxe then goes
  // back to PSN 0 while it is still sending.
  ['timeout-tail-drop', variant('timeout-tail-drop', 'timeout-tail-drop', { msgs: PERFTEST_MIN_ITERS, psn: 16 * PERFTEST_MIN_ITERS - 1, timeout: 14 })],
  [
    'timeout-withheld-ack',
    variant('timeout-withheld-ack', 'timeout-withheld-ack', { msgs: PERFTEST_MIN_ITERS, psn: 16 * PERFTEST_MIN_ITERS - 1, timeout: 14 }),
  ],
  ['rnr-wait', bundledScenario('rnr-wait')?.yaml ?? ''],
  ['rnr-wait-timer-20', variant('rnr-wait', 'rnr-wait-timer-20', { timer: 20 })],
  ['read-retry', bundledScenario('read-retry')?.yaml ?? ''],
  // The duplicate-request answers (rxe_resp.c duplicate_request()): a WRITE re-acknowledged, a READ
  // executed again, an atomic answered from its saved resource.
  ['duplicate-write', bundledScenario('duplicate-write')?.yaml ?? ''],
  ['duplicate-read', bundledScenario('duplicate-read')?.yaml ?? ''],
  ['duplicate-atomic', bundledScenario('duplicate-atomic')?.yaml ?? ''],
  // rxe is no notification point: it sends no CNP for a CE mark (the kernel's rxe has no CNP code).
  ['cnp-generation', bundledScenario('cnp-generation')?.yaml ?? ''],
  // Nor a reaction point: our CNP (opcode 0x81, not in rxe's opcode table) is dropped, and its rate does not move.
  [
    'cnp-rate-rxe',
    [
      'name: cnp-rate-rxe',
      'description: One CNP to rxe as it sends five 1 MiB WRITEs; rxe has no reaction point.',
      'dut:',
      '  role: requester',
      '  tool: ib_write_bw',
      'traffic:',
      '  num-msgs-per-qp: 5',
      '  message-size: 1048576',
      '  mtu: 1024',
      'events:',
      '  - type: cnp',
      '    psn: 2048',
      '',
    ].join('\n'),
  ],
];
const CASES: Case[] = YAMLS.map(([name, yaml], i) => ({ id: i + 1, name, yaml, scenario: parseScenario(yaml) }));

function steps(dir: string): Step[] {
  return CASES.map((c) => {
    const file = path.join(dir, `${c.name}.yml`);
    fs.writeFileSync(file, c.yaml);
    const port = 18515 + c.id;
    const requester = c.scenario.dut.role === 'requester';
    // The command roce probe prints for the DUT, with the guest's device and GID index.
    const messages = Math.max(PERFTEST_MIN_ITERS, c.scenario.traffic.numMsgsPerQp);
    const guest = dutCommand(c.scenario, messages, { port, ourIp: '@PEER@' }).replace('-d DEV -x GID_INDEX', '-d rxe0 -x @GID@');
    return {
      id: c.id,
      guestRole: requester ? 'client' : 'server',
      port,
      guest,
      host: `$ROCE probe ${file} --driver xdp --dev $RXE_TAP${requester ? '' : ' --dut $RXE_GUEST_IP'} --port ${port} --timeout 80 --json`,
      timeoutS: 90,
    };
  });
}

interface ProbeJson {
  ok: boolean;
  figures: { kind: string; psn: number; measuredNs: number | null; value: number | null; verdict: string; detail: string; configured: number | null }[];
  timestamps: { errorNs: number };
  live: { qps: { ourQpn: number; dutQpn: number; requestStartPsn: number }[]; error: string | null; dutAttributes: { name: string; value: number }[] };
}

/** One RoCE frame of a step's QP pair in the guest NIC's capture. */
interface Wire {
  tNs: number;
  fromGuest: boolean;
  opcode: number;
  /** PSN relative to the data requester's first. */
  rel: number;
  syndrome: number;
  reth: { va: bigint; length: number } | null;
}

interface Captured {
  tNs: number;
  src: string;
  destQp: number;
  opcode: number;
  psn: number;
  syndrome: number;
  reth: Wire['reth'];
}
let captured: Captured[] | null = null;

/** The frames of QP pair `q` of a step, from the boot's capture. */
function wire(run: LabRun, q: { ourQpn: number; dutQpn: number; requestStartPsn: number }): Wire[] {
  if (captured === null) {
    captured = [];
    const records = readCapture(fs.readFileSync(run.capturePath)).records;
    // Seconds since the first frame: epoch nanoseconds do not fit a double exactly.
    const base = records[0]?.sec ?? 0;
    for (const rec of records) {
      const f = decodeFrame(rec.data, rec.linkType);
      if (!f.roce || f.bth === null || f.ipv4 === null) continue;
      captured.push({
        tNs: (rec.sec - base) * 1e9 + rec.nsec,
        src: ipText(f.ipv4.src),
        destQp: f.bth.destQp,
        opcode: f.bth.opcode,
        psn: f.bth.psn,
        syndrome: f.aeth?.syndrome ?? -1,
        reth: f.reth === null ? null : { va: f.reth.va, length: f.reth.dmaLength },
      });
    }
  }
  return captured
    .filter((f) => (f.src === GUEST_IP && f.destQp === q.ourQpn) || (f.src === HOST_IP && f.destQp === q.dutQpn))
    .map((f) => ({ tNs: f.tNs, fromGuest: f.src === GUEST_IP, opcode: f.opcode, rel: psnDiff(f.psn, q.requestStartPsn), syndrome: f.syndrome, reth: f.reth }));
}

const isRequest = (op: number): boolean => ((OPCODES[op]?.flags ?? 0) & OpFlag.REQ) !== 0;
const kind = (w: Wire): { kind: AethKind; value: number } | null => (w.syndrome < 0 ? null : decodeSyndrome(w.syndrome));
const isSeqNak = (w: Wire): boolean => kind(w)?.kind === AethKind.NAK && kind(w)?.value === NakCode.PSN_SEQUENCE_ERROR;
const isRnrNak = (w: Wire): boolean => kind(w)?.kind === AethKind.RNR_NAK;
const isAck = (w: Wire): boolean => kind(w)?.kind === AethKind.ACK;

/** The first request of the guest at or after index `from` whose PSN is not beyond the highest it had sent before: its first resend. */
function firstResend(frames: readonly Wire[], from: number): number {
  let high = -1;
  for (let i = 0; i < frames.length; i++) {
    const w = frames[i]!;
    if (!w.fromGuest || !isRequest(w.opcode)) continue;
    if (i >= from && w.rel <= high) return i;
    high = Math.max(high, w.rel);
  }
  return -1;
}

/** rxe's local ACK timer in jiffies: nsecs_to_jiffies(4096 << timeout), at least 1 (rxe_qp.c). */
const timeoutJiffies = (timeout: number): number => Math.max(1, Math.floor((4096 * 2 ** timeout) / JIFFY_NS));
/** rxe's RNR timer in jiffies: max(usecs_to_jiffies(usec), 1), usecs_to_jiffies rounding up (rxe_comp.c rnrnak_jiffies()). */
const rnrJiffies = (code: number): number => Math.max(1, Math.ceil(((RNR_TIMER_USEC[code] ?? 0) * 1000) / JIFFY_NS));

/** What the docs' table is made of: per case, the figure as measured and rxe's rule. */
const table: { scenario: string; figure: string; measured: string; rule: string; errorNs: number }[] = [];

d('roce probe against rxe (the stock perftest tools in the guest), both DUT roles', () => {
  let run: LabRun;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probe-lab-'));
    run = await runLab('probe', steps(dir));
  }, 900_000);
  afterAll(() => {
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true });
    if (table.length > 0) fs.writeFileSync(path.join(__dirname, '..', '..', 'captures', 'interop', 'probe-table.json'), `${JSON.stringify(table, null, 1)}\n`);
  });

  const probeOf = (c: Case): ProbeJson => {
    const s = stepOf(run, c.id);
    if (s.hostJson === null || s.guestRc !== 0 || s.hostRc !== 0)
      throw new Error(`step ${c.id} (${c.name}): guest rc ${s.guestRc}, host rc ${s.hostRc}\n--- guest:\n${s.guestOut}\n--- host:\n${s.hostOut}\n${s.hostErr}`);
    const j = s.hostJson as unknown as ProbeJson;
    expect(j.live.error).toBeNull();
    return j;
  };
  const us = (ns: number): string => `${(ns / 1000).toFixed(0)} µs`;

  test('the guest booted, ran every step and powered off; every frame decodes with a valid ICRC', () => {
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
  });

  test('nak-generation (rxe responder): one sequence NAK for the gap, naming the skipped PSN', () => {
    const c = CASES.find((x) => x.name === 'nak-generation')!;
    const j = probeOf(c);
    const f = j.figures.find((x) => x.kind === 'nakGeneration')!;
    // rxe_resp.c check_psn(): the first out-of-sequence request draws a NAK with the expected PSN; later ones none.
    expect(f).toMatchObject({ psn: 4, value: 1, verdict: 'pass' });
    const w = wire(run, j.live.qps[0]!);
    const naks = w.filter((x) => x.fromGuest && isSeqNak(x));
    expect(naks.map((x) => x.rel)).toEqual([4]);
    table.push({
      errorNs: j.timestamps.errorNs,
      scenario: c.name,
      figure: 'nakGeneration',
      measured: `${us(f.measuredNs!)}, 1 NAK, PSN 4`,
      rule: 'one NAK per gap, PSN 4',
    });
  });

  test('nak-retransmit (rxe requester): the resend starts at our NAK’s PSN', () => {
    const c = CASES.find((x) => x.name === 'nak-retransmit')!;
    const j = probeOf(c);
    const f = j.figures.find((x) => x.kind === 'nakRetransmit')!;
    expect(f).toMatchObject({ psn: 4, configured: 4, value: 4, verdict: 'pass' });
    const w = wire(run, j.live.qps[0]!);
    const nak = w.findIndex((x) => !x.fromGuest && isSeqNak(x));
    expect(nak).toBeGreaterThanOrEqual(0);
    const r = firstResend(w, nak);
    // rxe_comp.c check_ack(): comp.psn = the NAK's PSN; rxe_req.c req_retry() resends from there.
    expect(w[r]?.rel).toBe(w[nak]!.rel);
    expect(w[nak]!.rel).toBe(4);
    table.push({
      errorNs: j.timestamps.errorNs,
      scenario: c.name,
      figure: 'nakRetransmit',
      measured: `${us(f.measuredNs!)}, from PSN 4`,
      rule: 'from the NAK’s PSN (4)',
    });
  });

  test.each(['timeout-tail-drop', 'timeout-withheld-ack'])(
    '%s (rxe requester, 5 messages, event on PSN 79): resend from the first unacknowledged PSN, no earlier than rxe’s timer after our last ACK',
    (name) => {
      const c = CASES.find((x) => x.name === name)!;
      const j = probeOf(c);
      const f = j.figures.find((x) => x.kind === 'timeoutRetransmit')!;
      expect(f).toBeDefined();
      const w = wire(run, j.live.qps[0]!);
      // The lost frame (or the frame whose ACK we withheld): the guest's PSN 79; the resend comes after it.
      const last = w.findIndex((x) => x.fromGuest && x.rel === 79);
      const r = firstResend(w, last + 1);
      expect(r).toBeGreaterThan(last);
      // Our ACKs on the wire before the resend: the highest PSN acknowledged, and when the last one reached the guest.
      const acks = w.slice(0, r).filter((x) => !x.fromGuest && isAck(x));
      const high = Math.max(-1, ...acks.map((x) => x.rel));
      const lastAck = acks[acks.length - 1]!;
      expect(w[r]!.rel).toBe(high + 1);
      expect(f.value).toBe(high + 1);
      const timeout = c.scenario.traffic.minRetransmitTimeout;
      const bound = (timeoutJiffies(timeout) - 1) * JIFFY_NS;
      const gap = w[r]!.tNs - lastAck.tNs;
      expect(gap).toBeGreaterThanOrEqual(bound);
      table.push({
        errorNs: j.timestamps.errorNs,
        scenario: `${name} (5 messages, PSN 79)`,
        figure: 'timeoutRetransmit',
        measured: `${us(f.measuredNs!)} after the DUT's last frame (${f.verdict}), ${us(gap)} after our last ACK in the capture; from PSN ${high + 1}`,
        rule: `from the first unacknowledged PSN (${high + 1}); ≥ (${timeoutJiffies(timeout)} − 1) jiffies = ${bound / 1e6} ms after our last ACK (timeout ${timeout}: ${((4096 * 2 ** timeout) / 1e6).toFixed(3)} ms, ${timeoutJiffies(timeout)} jiffies of 4 ms)`,
      });
    },
  );

  test.each(['rnr-wait', 'rnr-wait-timer-20'])('%s (rxe requester of SENDs): each resend of the RNR NAK’d PSN no earlier than rxe’s RNR timer', (name) => {
    const c = CASES.find((x) => x.name === name)!;
    const j = probeOf(c);
    const ev = c.scenario.events[0]!;
    const figs = j.figures.filter((x) => x.kind === 'rnrWait');
    expect(figs).toHaveLength(ev.iter as number);
    for (const f of figs) expect(f.value).toBe(0);
    const w = wire(run, j.live.qps[0]!);
    const k = rnrJiffies(ev.timer!);
    const bound = (k - 1) * JIFFY_NS;
    const gaps: number[] = [];
    for (let i = 0; i < w.length; i++) {
      if (w[i]!.fromGuest || !isRnrNak(w[i]!)) continue;
      const r = w.findIndex((x, n) => n > i && x.fromGuest && isRequest(x.opcode) && x.rel === w[i]!.rel);
      expect(r).toBeGreaterThan(i);
      gaps.push(w[r]!.tNs - w[i]!.tNs);
    }
    expect(gaps).toHaveLength(ev.iter as number);
    for (const g of gaps) expect(g).toBeGreaterThanOrEqual(bound);
    table.push({
      errorNs: j.timestamps.errorNs,
      scenario: name,
      figure: 'rnrWait',
      measured: `${figs.map((f) => `${us(f.measuredNs!)} (${f.verdict})`).join(', ')}; in the capture ${gaps.map(us).join(', ')}`,
      rule: `resend PSN 0, ≥ (${k} − 1) jiffies = ${bound / 1e6} ms after the NAK (timer ${ev.timer}: ${(RNR_TIMER_USEC[ev.timer!]! / 1000).toFixed(2)} ms, ${k} jiffies)`,
    });
  });

  test('cnp-generation (rxe responder): no CNP for our CE-marked request; rxe is no notification point', () => {
    const c = CASES.find((x) => x.name === 'cnp-generation')!;
    const j = probeOf(c);
    const f = j.figures.find((x) => x.kind === 'cnpGeneration')!;
    // The annex's notification point is optional; rxe has none, and the figure says so.
    expect(f).toMatchObject({ psn: 4, verdict: 'fail', measuredNs: null });
    expect(f.detail).toMatch(/^no CNP for the CE mark on PSN 4/);
    const w = wire(run, j.live.qps[0]!);
    expect(w.some((x) => x.fromGuest && x.opcode === Opcode.CNP)).toBe(false);
    table.push({
      errorNs: j.timestamps.errorNs,
      scenario: c.name,
      figure: 'cnpGeneration',
      measured: 'no CNP (fail)',
      rule: 'no CNPs: rxe has no notification point',
    });
  });

  test('cnp-rate-rxe (rxe requester): our CNP reaches rxe, and its rate does not move; rxe is no reaction point', () => {
    const c = CASES.find((x) => x.name === 'cnp-rate-rxe')!;
    const j = probeOf(c);
    const f = j.figures.find((x) => x.kind === 'rateCut')!;
    expect(f).toMatchObject({ psn: 2048, verdict: 'none' });
    expect(f.detail).toMatch(/^no cut beyond the rate's own variation/);
    const w = wire(run, j.live.qps[0]!);
    // Our CNP is on the guest's wire, in the middle of its WRITEs (those after it at PSN 2048 and on).
    const at = w.findIndex((x) => !x.fromGuest && x.opcode === Opcode.CNP);
    expect(at).toBeGreaterThan(0);
    expect(w.slice(at).some((x) => x.fromGuest && isRequest(x.opcode) && x.rel > 2048)).toBe(true);
    table.push({
      errorNs: j.timestamps.errorNs,
      scenario: c.name,
      figure: 'rateCut',
      measured: `none: ${f.detail}`,
      rule: 'no reaction: rxe drops CNPs (opcode 0x81 is not in rxe_opcode.c)',
    });
  });

  test('duplicate-write (rxe responder): the copy of our WRITE is acknowledged again, not NAKed', () => {
    const c = CASES.find((x) => x.name === 'duplicate-write')!;
    const j = probeOf(c);
    const f = j.figures.find((x) => x.kind === 'duplicateResponse')!;
    expect(f).toMatchObject({ psn: 4, verdict: 'pass' });
    const w = wire(run, j.live.qps[0]!);
    // rxe answers a duplicate SEND or WRITE with an ACK of the PSN before its expected one (duplicate_request(): send_ack(prev_psn)).
    expect(w.some((x) => x.fromGuest && isSeqNak(x))).toBe(false);
    table.push({
      errorNs: j.timestamps.errorNs,
      scenario: c.name,
      figure: 'duplicateResponse',
      measured: f.detail,
      rule: 'an ACK of the PSN before the expected one, no NAK',
    });
  });

  test('duplicate-read (rxe responder): the copy of our READ request is executed again, every response PSN sent twice', () => {
    const c = CASES.find((x) => x.name === 'duplicate-read')!;
    const j = probeOf(c);
    const f = j.figures.find((x) => x.kind === 'duplicateResponse')!;
    expect(f).toMatchObject({ psn: 0, value: 0, verdict: 'pass' });
    const w = wire(run, j.live.qps[0]!);
    const responses = w.filter((x) => x.fromGuest && !isRequest(x.opcode));
    const n = packetsPerMessage(c.scenario.traffic);
    for (let psn = 0; psn < n; psn++) expect(responses.filter((x) => x.rel === psn).length).toBeGreaterThanOrEqual(2);
    table.push({
      errorNs: j.timestamps.errorNs,
      scenario: c.name,
      figure: 'duplicateResponse',
      measured: f.detail,
      rule: 'the READ executed again from its PSN (duplicate_request() re-reads the responder resource)',
    });
  });

  test('duplicate-atomic (rxe responder): the copy of our fetch-and-add is answered with the original value, and executed once', () => {
    const c = CASES.find((x) => x.name === 'duplicate-atomic')!;
    const j = probeOf(c);
    const f = j.figures.find((x) => x.kind === 'duplicateResponse')!;
    expect(f).toMatchObject({ psn: 2, verdict: 'pass' });
    const w = wire(run, j.live.qps[0]!);
    expect(w.filter((x) => x.fromGuest && x.opcode === Opcode.RC_ATOMIC_ACKNOWLEDGE && x.rel === 2).length).toBe(2);
    table.push({
      errorNs: j.timestamps.errorNs,
      scenario: c.name,
      figure: 'duplicateResponse',
      measured: f.detail,
      rule: 'the saved original value again, the add not repeated (duplicate_request(), atomic_reply() with res->replay)',
    });
  });

  test('read-retry (rxe requester of READs): a new READ from the missing PSN, address and length moved past the responses received', () => {
    const c = CASES.find((x) => x.name === 'read-retry')!;
    const j = probeOf(c);
    const f = j.figures.find((x) => x.kind === 'readRetry')!;
    expect(f).toMatchObject({ psn: 6, value: 6, verdict: 'pass' });
    const w = wire(run, j.live.qps[0]!);
    const reads = w.filter((x) => x.fromGuest && x.reth !== null);
    const first = reads[0]!;
    const again = reads.find((x) => x.rel === 6)!;
    const mtu = c.scenario.traffic.mtu;
    expect(again.reth!.va - first.reth!.va).toBe(BigInt(6 * mtu));
    expect(again.reth!.length).toBe(c.scenario.traffic.messageSize - 6 * mtu);
    expect(packetsPerMessage(c.scenario.traffic)).toBe(16);
    table.push({
      errorNs: j.timestamps.errorNs,
      scenario: c.name,
      figure: 'readRetry',
      measured: `${us(f.measuredNs!)}, READ from PSN 6 at VA +6144 for 10240 bytes`,
      rule: 'PSN 6, VA +6 × 1024, length 16384 − 6 × 1024',
    });
  });
});
