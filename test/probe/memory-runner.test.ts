/**
 * `roce probe` on the in-memory link with this stack as the DUT: each bundled scenario runs and
 * its figures are what the engine's parameters say they must be. The link has no serialization
 * and a fixed one-way delay L, and the engine answers in no virtual time, so:
 *  - a NAK, a resend after a NAK and a READ retry come one round trip (2L) after what caused them;
 *  - a timeout resend comes 4.096 µs × 2^timeout after the DUT's last frame (all of a message's
 *    frames leave at one instant), from the message's first PSN: a message of fewer than
 *    DEFAULT_MAX_PKTS_PER_ACK packets asks for an ACK on its last packet only;
 *  - an RNR resend comes the NAK's timer (IBTA table 45) plus 2L after the NAK;
 *  - the DUT resends retry_cnt times after its last progress, then fails with RETRY_EXC_ERR.
 * Also: the figures follow L and the QP the event names; the judge fails a DUT that NAKs a gap
 * twice; events this version does not apply are refused naming their line.
 */
import { BUNDLED_SCENARIOS, bundledScenario } from '../../apps/probe/bundled-scenarios';
import { type Figure, measure } from '../../apps/probe/measurements';
import { runInMemory } from '../../apps/probe/memory-runner';
import { checkLiveScenario } from '../../apps/probe/live-runner';
import { ProbeCapture } from '../../apps/probe/probe-capture';
import { decodeFrame } from '../../packets/decode';
import { ProbeError } from '../../apps/probe/probe-error';
import { parseScenario } from '../../apps/probe/scenario';
import { RNR_TIMER_USEC } from '../../packets/aeth';
import { DEFAULT_MAX_PKTS_PER_ACK } from '../../stack/device';
import { localAckTimeoutNs } from '../../stack/qp-attributes';

const L = 2000;

function run(name: string, latencyNs = L): ReturnType<typeof runInMemory> {
  const b = bundledScenario(name);
  if (b === undefined) throw new Error(`no bundled scenario ${name}`);
  return runInMemory(parseScenario(b.yaml), { latencyNs });
}

const only = (figs: readonly Figure[], kind: Figure['kind']): Figure[] => figs.filter((f) => f.kind === kind);

test('every bundled scenario runs and every figure passes on this stack', () => {
  for (const b of BUNDLED_SCENARIOS) {
    const r = run(b.name);
    expect(r.figures.length).toBeGreaterThan(0);
    expect(r.figures.map((f) => `${b.name} ${f.kind}: ${f.verdict}`)).toEqual(r.figures.map((f) => `${b.name} ${f.kind}: pass`));
    expect(r.pathRttNs).toBe(2 * L);
    expect(r.timestamps.errorNs).toBe(0);
  }
});

test('nak-generation: one NAK for the skipped PSN, one round trip after our first request past the gap', () => {
  const r = run('nak-generation');
  const s = parseScenario(bundledScenario('nak-generation')!.yaml);
  const [f] = only(r.figures, 'nakGeneration');
  expect(f).toMatchObject({ qp: 0, psn: s.events[0]!.psn, measuredNs: 2 * L, dutNs: 0, value: 1, verdict: 'pass', clause: 'IBTA vol. 1 §9.7.5.2.2' });
  expect(r.frames.dropped).toBe(1);
});

test('nak-retransmit: the DUT resends from the NAK PSN one round trip after our NAK', () => {
  const r = run('nak-retransmit');
  const [f] = only(r.figures, 'nakRetransmit');
  expect(f).toMatchObject({ psn: 4, measuredNs: 2 * L, dutNs: 0, configured: 4, value: 4, verdict: 'pass' });
  expect(r.dutCompletions).toEqual([['SUCCESS']]);
});

test.each([
  ['timeout-tail-drop', 12],
  ['timeout-withheld-ack', 10],
])('%s: the resend comes 4.096 µs × 2^%i after the last frame, from the message start', (name, timeout) => {
  const s = parseScenario(bundledScenario(name)!.yaml);
  expect(s.traffic.minRetransmitTimeout).toBe(timeout);
  // One message of fewer packets than the AckReq spacing: nothing was acknowledged before the tail.
  expect(s.traffic.messageSize / s.traffic.mtu).toBeLessThan(DEFAULT_MAX_PKTS_PER_ACK);
  const r = run(name);
  const [f] = only(r.figures, 'timeoutRetransmit');
  expect(f).toMatchObject({
    measuredNs: localAckTimeoutNs(timeout),
    configured: 4096 * 2 ** timeout,
    value: 0,
    verdict: 'pass',
    clause: 'IBTA vol. 1 §9.7.6.1.3',
  });
  expect(r.dutCompletions).toEqual([['SUCCESS']]);
});

test('retry-exhaust: retry_cnt resends after the last progress, each a timeout apart, then RETRY_EXC_ERR', () => {
  const s = parseScenario(bundledScenario('retry-exhaust')!.yaml);
  const r = run('retry-exhaust');
  const [f] = only(r.figures, 'retryCount');
  expect(f).toMatchObject({
    value: s.traffic.maxRetransmitRetry,
    configured: s.traffic.maxRetransmitRetry,
    measuredNs: localAckTimeoutNs(s.traffic.minRetransmitTimeout),
    verdict: 'pass',
  });
  expect(r.dutCompletions).toEqual([['RETRY_EXC_ERR']]);
});

test('rnr-wait: each resend comes the NAK timer plus one round trip after the RNR NAK', () => {
  const s = parseScenario(bundledScenario('rnr-wait')!.yaml);
  const ev = s.events[0]!;
  const timerNs = RNR_TIMER_USEC[ev.timer!]! * 1000;
  const figs = only(run('rnr-wait').figures, 'rnrWait');
  expect(figs).toHaveLength(ev.iter as number);
  for (const f of figs)
    expect(f).toMatchObject({ measuredNs: timerNs + 2 * L, dutNs: timerNs, configured: timerNs, value: 0, verdict: 'pass', clause: 'IBTA vol. 1 §9.7.5.2.8' });
});

test('read-retry: a new READ from the missing PSN, its address and length advanced by the responses received', () => {
  const figs = only(run('read-retry').figures, 'readRetry');
  expect(figs).toHaveLength(1);
  expect(figs[0]).toMatchObject({ psn: 6, value: 6, measuredNs: 2 * L, verdict: 'pass' });
  expect(figs[0]!.detail).toMatch(/VA \+6144 \(expected \+6144\), length 10240 \(expected 10240\)/);
});

test('the figures follow the link delay: round-trip figures move by 2L, timer figures not at all', () => {
  for (const lat of [0, 7_500]) {
    expect(only(run('nak-generation', lat).figures, 'nakGeneration')[0]!.measuredNs).toBe(2 * lat);
    expect(only(run('rnr-wait', lat).figures, 'rnrWait')[0]!.measuredNs).toBe(RNR_TIMER_USEC[14]! * 1000 + 2 * lat);
    expect(only(run('timeout-withheld-ack', lat).figures, 'timeoutRetransmit')[0]!.measuredNs).toBe(localAckTimeoutNs(10));
  }
});

test('events key on the relative QP: a drop on QP 2 of 3 is measured there, the other QPs untouched', () => {
  const s = parseScenario(
    [
      'name: q',
      'dut:',
      '  role: requester',
      '  tool: ib_write_bw',
      'traffic:',
      '  num-qps: 3',
      '  num-msgs-per-qp: 2',
      '  message-size: 4096',
      'events:',
      '  - type: drop',
      '    qpn: 2',
      '    psn: 5',
    ].join('\n'),
  );
  const r = runInMemory(s);
  expect(r.figures).toHaveLength(1);
  // PSN 5 is the second packet of the second message: the next one shows the gap, and we NAK it.
  expect(r.figures[0]).toMatchObject({ kind: 'nakRetransmit', qp: 2, psn: 5, value: 5, verdict: 'pass' });
  expect(r.dutCompletions).toEqual([
    ['SUCCESS', 'SUCCESS'],
    ['SUCCESS', 'SUCCESS'],
    ['SUCCESS', 'SUCCESS'],
  ]);
  expect(r.frames.dropped).toBe(1);
});

test('an rping DUT runs live only: the in-memory link refuses it, a live run takes it', () => {
  const s = parseScenario(['name: d', 'dut:', '  role: requester', '  tool: rping', 'events:', '  - type: drop-read-response', '    psn: 0'].join('\n'));
  expect(() => runInMemory(s)).toThrow(ProbeError);
  expect(() => runInMemory(s)).toThrow(/an rping DUT runs live \(--driver xdp\|packet\)/);
  expect(checkLiveScenario(s)).toEqual({ messages: 1 });
});

test('seq-nak: our NAK answers the DUT request at once; it resends from the NAK PSN one round trip later, and only we NAKed', () => {
  const r = run('seq-nak');
  const [f] = only(r.figures, 'nakRetransmit');
  expect(f).toMatchObject({ psn: 4, measuredNs: 2 * L, dutNs: 0, configured: 4, value: 4, verdict: 'pass', clause: 'IBTA vol. 1 §9.7.5.2.6' });
  expect(r.dutCompletions).toEqual([['SUCCESS']]);
  // The one NAK is ours, sent as the request arrived (not when the next one showed a gap, as for a drop): one L after the DUT sent PSN 4.
  expect(r.frames.dropped).toBe(1);
  const drop = run('nak-retransmit');
  expect(only(drop.figures, 'nakRetransmit')[0]).toMatchObject({ measuredNs: 2 * L, value: 4 });
});

test('seq-nak on the last PSN: no later request is needed, the NAK alone recovers it (a drop there waits for the timeout)', () => {
  const yaml = (type: string): string =>
    [
      'name: s',
      'dut:',
      '  role: requester',
      '  tool: ib_write_bw',
      'traffic:',
      '  message-size: 4096',
      '  min-retransmit-timeout: 10',
      'events:',
      `  - type: ${type}`,
      '    psn: 3',
    ].join('\n');
  const nak = runInMemory(parseScenario(yaml('seq-nak')), { latencyNs: L });
  expect(nak.figures).toMatchObject([{ kind: 'nakRetransmit', measuredNs: 2 * L, value: 3, verdict: 'pass' }]);
  expect(nak.durationNs).toBeLessThan(localAckTimeoutNs(10));
  const drop = runInMemory(parseScenario(yaml('drop')), { latencyNs: L });
  expect(drop.figures).toMatchObject([{ kind: 'timeoutRetransmit', measuredNs: localAckTimeoutNs(10), verdict: 'pass' }]);
});

test('delay-ack: the DUT timer fires exactly when the hold plus the round trip passes its timeout', () => {
  const T = localAckTimeoutNs(10);
  const fires = run('ack-delay-timeout');
  const held = parseScenario(bundledScenario('ack-delay-timeout')!.yaml).events[0]!.delayUs! * 1000;
  expect(held + 2 * L).toBeGreaterThan(T);
  // The resend comes the timeout after the DUT's last frame (all 16 left at one instant), from PSN 0: nothing was acknowledged.
  expect(only(fires.figures, 'ackDelay')).toMatchObject([{ measuredNs: T, configured: T, value: 0, verdict: 'pass', clause: 'IBTA vol. 1 §9.7.6.1.3' }]);
  const quiet = run('ack-delay-in-time');
  expect(only(quiet.figures, 'ackDelay')).toMatchObject([{ measuredNs: null, value: null, verdict: 'pass' }]);
  expect(quiet.frames.rx).toBe(16);
  // Around the boundary, derived from the timeout and L: 1 µs either side of T − 2L.
  const yaml = (us: number): string =>
    [
      'name: b',
      'dut:',
      '  role: requester',
      '  tool: ib_write_bw',
      'traffic:',
      '  message-size: 16384',
      '  min-retransmit-timeout: 10',
      'events:',
      '  - type: delay-ack',
      '    psn: 15',
      `    delay-us: ${us}`,
    ].join('\n');
  const edge = Math.floor((T - 2 * L) / 1000);
  const before = runInMemory(parseScenario(yaml(edge)), { latencyNs: L });
  expect(before.figures).toMatchObject([{ kind: 'ackDelay', measuredNs: null, verdict: 'pass' }]);
  const after = runInMemory(parseScenario(yaml(edge + 1)), { latencyNs: L });
  expect(after.figures).toMatchObject([{ kind: 'ackDelay', measuredNs: T, value: 0, verdict: 'pass' }]);
});

test('rnr-nak on a later message of several: that message and every later one find no receive until its last RNR NAK', () => {
  // Receive WQEs are taken in order: had only message 2's receive been held, message 2 would have taken message 3's.
  const s = parseScenario(
    [
      'name: r',
      'dut:',
      '  role: requester',
      '  tool: ib_send_bw',
      'traffic:',
      '  num-msgs-per-qp: 4',
      '  message-size: 2048',
      '  mtu: 1024',
      'events:',
      '  - type: rnr-nak',
      '    psn: 4',
      '    iter: 2',
      '    timer: 14',
    ].join('\n'),
  );
  const r = runInMemory(s, { latencyNs: L });
  const timer = RNR_TIMER_USEC[14]! * 1000;
  expect(only(r.figures, 'rnrWait')).toMatchObject([
    { psn: 4, measuredNs: timer + 2 * L, dutNs: timer, value: 4, verdict: 'pass' },
    { psn: 4, measuredNs: timer + 2 * L, dutNs: timer, value: 4, verdict: 'pass' },
  ]);
  expect(r.dutCompletions).toEqual([['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']]);
});

test('cnp-generation: the DUT (a notification point) answers our CE-marked request with a CNP one round trip later', () => {
  const r = run('cnp-generation');
  expect(r.figures).toMatchObject([{ kind: 'cnpGeneration', psn: 4, measuredNs: 2 * L, dutNs: 0, value: 1, verdict: 'pass', clause: 'RoCEv2 annex A17.9.2' }]);
  // One mark, one CNP (besides the ACK).
  expect(r.frames.rx).toBe(2);
});

test('cnp-spacing: the CNPs for a run of CE marks are those the DUT interval allows, none closer than it', () => {
  const s = parseScenario(bundledScenario('cnp-spacing')!.yaml);
  const capture = new ProbeCapture();
  const r = runInMemory(s, { latencyNs: L, onWire: capture.onWire });
  const opcodeOf = (f: Uint8Array): number => {
    const d = decodeFrame(f, undefined, { verifyIcrc: false });
    return d.roce && d.bth !== null ? d.bth.opcode : -1;
  };
  // Our marked requests (every request of the message) and the DUT's CNPs, at the DUT's NIC.
  const marks = capture.frames.filter((w) => w.dir === 'tx' && opcodeOf(w.frame) < 0x11).map((w) => w.timeNs + L);
  const cnps = capture.frames.filter((w) => w.dir === 'rx' && opcodeOf(w.frame) === 0x81).map((w) => w.timeNs - L);
  expect(marks).toHaveLength(16);
  const N = s.traffic.minTimeBetweenCnps * 1000;
  // np_min_time_between_cnps: a CNP for a mark unless one went less than N before it.
  const due: number[] = [];
  for (const t of marks) if (due.length === 0 || t - due[due.length - 1]! >= N) due.push(t);
  expect(cnps).toEqual(due);
  expect(due.length).toBeGreaterThan(1);
  const gaps = cnps.slice(1).map((c, i) => c - cnps[i]!);
  expect(r.figures).toMatchObject([
    { kind: 'cnpGeneration', psn: 0, measuredNs: 2 * L, verdict: 'pass' },
    { kind: 'cnpSpacing', measuredNs: Math.min(...gaps), configured: N, value: due.length, verdict: 'pass' },
  ]);
  expect(Math.min(...gaps)).toBeGreaterThanOrEqual(N);
});

test('measure() on CNP records: a CNP sooner than the interval, or one for every mark, fails cnpSpacing', () => {
  const s = parseScenario(bundledScenario('cnp-spacing')!.yaml);
  const qps = [{ ourQpn: 0x11, dutQpn: 0x22, requestStartPsn: 100 }];
  const req = (i: number) => ({
    timeNs: i * 10_000,
    dir: 'tx' as const,
    opcode: 0x07,
    destQp: 0x22,
    psn: 100 + i,
    ackReq: false,
    syndrome: -1,
    reth: null,
    len: 1078,
    fate: 'delivered' as const,
  });
  const cnp = (t: number) => ({
    timeNs: t,
    dir: 'rx' as const,
    opcode: 0x81,
    destQp: 0x11,
    psn: 0,
    ackReq: false,
    syndrome: -1,
    reth: null,
    len: 1078,
    fate: 'delivered' as const,
  });
  const reqs = Array.from({ length: 16 }, (_, i) => req(i));
  // Marks 10 µs apart, N = 50 µs: CNPs due for marks 0, 5, 10, 15.
  const right = [...reqs, ...[0, 5, 10, 15].map((i) => cnp(i * 10_000 + 2 * L))].sort((a, b) => a.timeNs - b.timeNs);
  expect(measure({ scenario: s, qps, records: right, pathRttNs: 2 * L }).find((f) => f.kind === 'cnpSpacing')).toMatchObject({
    value: 4,
    measuredNs: 50_000,
    verdict: 'pass',
  });
  const everyMark = [...reqs, ...reqs.map((_, i) => cnp(i * 10_000 + 2 * L))].sort((a, b) => a.timeNs - b.timeNs);
  expect(measure({ scenario: s, qps, records: everyMark, pathRttNs: 2 * L }).find((f) => f.kind === 'cnpSpacing')).toMatchObject({
    value: 16,
    measuredNs: 10_000,
    verdict: 'fail',
  });
});

test('duplicate-write: the DUT acknowledges the copy again (an ACK of its PSN, one round trip later), not a NAK', () => {
  const r = run('duplicate-write');
  expect(r.figures).toMatchObject([
    { kind: 'duplicateResponse', psn: 4, measuredNs: 2 * L, dutNs: 0, value: 4, verdict: 'pass', clause: 'IBTA vol. 1 C9-105' },
  ]);
  // The copy's ACK and the message's own (AckReq on its last packet only).
  expect(r.frames.rx).toBe(2);
});

test('duplicate-read: the DUT executes the READ again, every response PSN a second time, one round trip later', () => {
  const r = run('duplicate-read');
  const s = parseScenario(bundledScenario('duplicate-read')!.yaml);
  const n = s.traffic.messageSize / s.traffic.mtu;
  expect(r.figures).toMatchObject([{ kind: 'duplicateResponse', psn: 0, measuredNs: 2 * L, value: 0, configured: 0, verdict: 'pass' }]);
  expect(r.figures[0]!.detail).toMatch(new RegExp(`drew ${n} of its ${n} response PSNs again`));
  expect(r.frames.rx).toBe(2 * n);
});

test('duplicate-atomic: the DUT answers the copy with the original value it returned first, one round trip later, and adds once', () => {
  const r = run('duplicate-atomic');
  const s = parseScenario(bundledScenario('duplicate-atomic')!.yaml);
  expect(s.traffic).toMatchObject({ verb: 'atomic', messageSize: 8, numMsgsPerQp: 5 });
  const P = s.events[0]!.psn;
  expect(r.figures).toMatchObject([
    {
      kind: 'duplicateResponse',
      psn: P,
      measuredNs: 2 * L,
      dutNs: 0,
      configured: P,
      value: P,
      verdict: 'pass',
      clause: expect.stringMatching(/^rxe `rxe_resp\.c` duplicate_request\(\), atomic_reply\(\)/),
    },
  ]);
  // Every fetch-and-add adds 1 to one zeroed word: the atomic at PSN k returns k, its copy the same, and PSN P + 1 finds P + 1.
  expect(r.figures[0]!.detail).toBe(
    `the duplicate atomic at PSN ${P} answered 4.000 µs later with original value 0x${P.toString(16)} (the first answer: 0x${P.toString(16)}); the next atomic on its word (PSN ${P + 1}) found 0x${(P + 1).toString(16)}, executed once`,
  );
  // One ATOMIC ACKNOWLEDGE per atomic, and the copy's.
  expect(r.frames.rx).toBe(s.traffic.numMsgsPerQp + 1);
});

test('ib_atomic_bw as the DUT requester: its lost atomic is NAKed when the next arrives, and it resends from that PSN one round trip later', () => {
  const s = parseScenario('name: t\ndut:\n  role: requester\n  tool: ib_atomic_bw\ntraffic:\n  num-msgs-per-qp: 4\nevents:\n  - type: drop\n    psn: 1\n');
  const r = runInMemory(s, { latencyNs: L });
  expect(r.figures).toMatchObject([{ kind: 'nakRetransmit', psn: 1, measuredNs: 2 * L, value: 1, verdict: 'pass' }]);
  expect(r.dutCompletions).toEqual([['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']]);
});

test('measure() on duplicate atomic records: a copy executed again, or answered without the original value, fails', () => {
  const s = parseScenario(bundledScenario('duplicate-atomic')!.yaml);
  const qps = [{ ourQpn: 0x11, dutQpn: 0x22, requestStartPsn: 100 }];
  const FETCH_ADD = 0x14;
  const ATOMIC_ACK = 0x12;
  const base = { ackReq: true, reth: null, len: 90, fate: 'delivered' as const };
  const req = (psn: number) => ({
    ...base,
    timeNs: 0,
    dir: 'tx' as const,
    opcode: FETCH_ADD,
    destQp: 0x22,
    psn,
    syndrome: -1,
    atomic: { va: 0x1000n, swapAdd: 1n, compare: 0n },
  });
  const ack = (psn: number, orig: bigint) => ({
    ...base,
    timeNs: 4000,
    dir: 'rx' as const,
    opcode: ATOMIC_ACK,
    destQp: 0x11,
    psn,
    syndrome: 0x1f,
    origData: orig,
  });
  const sent = [req(100), req(101), req(102), req(102), req(103), req(104)];
  const answers = (copy: bigint, third: bigint) => [ack(100, 7n), ack(101, 8n), ack(102, 9n), ack(102, copy), ack(103, third), ack(104, third + 1n)];
  const judge = (records: ReturnType<typeof answers>) => measure({ scenario: s, qps, records: [...sent, ...records], pathRttNs: 4000 })[0]!;
  expect(judge(answers(9n, 10n))).toMatchObject({ verdict: 'pass', value: 2, measuredNs: 4000 });
  // The copy executed again: it returns what the first execution left, and the next atomic finds two adds.
  const twice = judge(answers(10n, 11n));
  expect(twice).toMatchObject({ verdict: 'fail', value: 2 });
  expect(twice.detail).toMatch(/original value 0xa \(the first answer: 0x9\): executed again/);
  // The right value replayed, but the word moved twice.
  expect(judge(answers(9n, 11n)).detail).toMatch(/found 0xb, not the 0xa one execution leaves: executed twice/);
  // A plain ACK for the copy carries no original value.
  const plain = [ack(100, 7n), ack(101, 8n), ack(102, 9n), { ...ack(102, 0n), opcode: 0x11, origData: undefined }];
  expect(judge(plain as ReturnType<typeof answers>)).toMatchObject({ verdict: 'fail' });
  // No answer to the copy at all.
  expect(judge([ack(100, 7n), ack(101, 8n), ack(102, 9n), ack(103, 10n)]).detail).toMatch(/no answer to the duplicate atomic at PSN 2/);
});

test('measure() on duplicate records: a NAK for a duplicate WRITE, or a READ answered once, fails', () => {
  const qps = [{ ourQpn: 0x11, dutQpn: 0x22, requestStartPsn: 100 }];
  const rec = (dir: 'tx' | 'rx', opcode: number, psn: number, t: number, syndrome = -1, reth: { va: bigint; length: number } | null = null) => ({
    timeNs: t,
    dir,
    opcode,
    destQp: dir === 'rx' ? 0x11 : 0x22,
    psn,
    ackReq: false,
    syndrome,
    reth,
    len: 1078,
    fate: 'delivered' as const,
  });
  const w = parseScenario(bundledScenario('duplicate-write')!.yaml);
  const writes = [0, 1, 2, 3, 4, 4].map((i) => rec('tx', 0x07, 100 + i, 0));
  const nak = measure({ scenario: w, qps, records: [...writes, rec('rx', 0x11, 105, 4000, 0x60)], pathRttNs: 4000 });
  expect(nak).toMatchObject([{ kind: 'duplicateResponse', verdict: 'fail' }]);
  expect(nak[0]!.detail).toMatch(/a sequence NAK/);
  expect(measure({ scenario: w, qps, records: [...writes, rec('rx', 0x11, 104, 4000, 0)], pathRttNs: 4000 })[0]).toMatchObject({ verdict: 'pass' });
  const rd = parseScenario(bundledScenario('duplicate-read')!.yaml);
  const req = rec('tx', 0x0c, 100, 0, -1, { va: 0n, length: 16384 });
  const once = Array.from({ length: 16 }, (_, i) => rec('rx', i === 0 ? 0x0d : i === 15 ? 0x0f : 0x0e, 100 + i, 4000));
  expect(measure({ scenario: rd, qps, records: [req, req, ...once], pathRttNs: 4000 })).toMatchObject([{ value: null, verdict: 'fail' }]);
  expect(measure({ scenario: rd, qps, records: [req, req, ...once, ...once], pathRttNs: 4000 })).toMatchObject([{ value: 0, verdict: 'pass' }]);
});

test('measure() on delay-ack records: a resend though the ACK was due in time fails, as does no resend though it was late', () => {
  const T = localAckTimeoutNs(10);
  const qps = [{ ourQpn: 0x11, dutQpn: 0x22, requestStartPsn: 100 }];
  const rec = (dir: 'tx' | 'rx', psn: number, t: number, extra: { opcode?: number; syndrome?: number; heldNs?: number } = {}) => ({
    timeNs: t,
    dir,
    opcode: extra.opcode ?? 0x0a,
    destQp: dir === 'rx' ? 0x11 : 0x22,
    psn,
    ackReq: psn === 103,
    syndrome: extra.syndrome ?? -1,
    reth: null,
    len: 1078,
    fate: 'delivered' as const,
    ...(extra.heldNs === undefined ? {} : { heldNs: extra.heldNs }),
  });
  const scenario = (us: number) =>
    parseScenario(
      [
        'name: b',
        'dut:',
        '  role: requester',
        '  tool: ib_write_bw',
        'traffic:',
        '  message-size: 4096',
        '  min-retransmit-timeout: 10',
        'events:',
        '  - type: delay-ack',
        '    psn: 3',
        `    delay-us: ${us}`,
      ].join('\n'),
    );
  const sent = [100, 101, 102, 103].map((p) => rec('rx', p, L));
  const ack = (hold: number) => rec('tx', 103, L + hold, { opcode: 0x11, syndrome: 0x1f, heldNs: hold });
  // A 3 ms hold (due well within 4.194 ms), and the DUT resent at the timeout anyway: its timer ignored nothing, but the
  // records say the ACK left 3 ms after the last frame, so a resend at T means it did not take it (or timed out early).
  const resentInTime = [...sent, ack(3e6), rec('rx', 100, L + T)];
  expect(measure({ scenario: scenario(3000), qps, records: resentInTime, pathRttNs: 2 * L })).toMatchObject([
    { kind: 'ackDelay', measuredNs: T, verdict: 'fail' },
  ]);
  // A 5 ms hold and no resend: the timer should have run out first.
  const silent = [...sent, ack(5e6)];
  const f = measure({ scenario: scenario(5000), qps, records: silent, pathRttNs: 2 * L });
  expect(f).toMatchObject([{ kind: 'ackDelay', measuredNs: null, verdict: 'fail' }]);
  expect(f[0]!.detail).toMatch(/the timer should have run out/);
  // A 5 ms hold and a resend half the timeout after the last frame: early.
  const early = [...sent, rec('rx', 100, L + T / 2), ack(5e6)];
  expect(measure({ scenario: scenario(5000), qps, records: early, pathRttNs: 2 * L })[0]).toMatchObject({ verdict: 'fail', measuredNs: T / 2 });
});

test('measure() on records with a second NAK for the gap: nakGeneration fails with 2 NAKs', () => {
  const s = parseScenario(bundledScenario('nak-generation')!.yaml);
  const qps = [{ ourQpn: 0x11, dutQpn: 0x22, requestStartPsn: 100 }];
  const req = (psn: number, t: number, fate: 'delivered' | 'dropped' = 'delivered') => ({
    timeNs: t,
    dir: 'tx' as const,
    opcode: 0x07,
    destQp: 0x22,
    psn,
    ackReq: false,
    syndrome: -1,
    reth: null,
    len: 1078,
    fate,
  });
  const nak = (t: number) => ({
    timeNs: t,
    dir: 'rx' as const,
    opcode: 0x11,
    destQp: 0x11,
    psn: 104,
    ackReq: false,
    syndrome: 0x60,
    reth: null,
    len: 1078,
    fate: 'delivered' as const,
  });
  const records = [req(100, 0), req(101, 0), req(102, 0), req(103, 0), req(104, 0, 'dropped'), req(105, 0), req(106, 0), nak(4000), nak(4100)];
  const figs = measure({ scenario: s, qps, records, pathRttNs: 4000 });
  expect(figs).toHaveLength(1);
  expect(figs[0]).toMatchObject({ kind: 'nakGeneration', measuredNs: 4000, value: 2, verdict: 'fail' });
  // The same records with one NAK pass.
  expect(measure({ scenario: s, qps, records: records.slice(0, -1), pathRttNs: 4000 })[0]).toMatchObject({ value: 1, verdict: 'pass' });
});

test('rnr_retry 1: one resend after the first RNR NAK, none after the second (RNR_RETRY_EXC_ERR), both judged as configured', () => {
  const s = parseScenario(
    [
      'name: r',
      'dut:',
      '  role: requester',
      '  tool: ib_send_bw',
      'traffic:',
      '  message-size: 1024',
      '  rnr-retry: 1',
      'events:',
      '  - type: rnr-nak',
      '    psn: 0',
      '    iter: 2',
      '    timer: 1',
    ].join('\n'),
  );
  const r = runInMemory(s);
  const figs = only(r.figures, 'rnrWait');
  expect(figs.map((f) => [f.measuredNs, f.verdict])).toEqual([
    [RNR_TIMER_USEC[1]! * 1000 + 2 * L, 'pass'],
    [null, 'pass'],
  ]);
  expect(figs[1]!.detail).toMatch(/rnr_retry 1 used up, as configured/);
  expect(r.dutCompletions).toEqual([['RNR_RETRY_EXC_ERR']]);
});
