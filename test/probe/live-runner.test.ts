/**
 * The parts of a live `roce probe` run that need no network: what a live DUT running perftest can
 * be asked for (its 5-message minimum, a tail event refused below it; rping's -C pings), the DUT's
 * command line and where each of its QP attributes comes from, and how the measurements judge
 * records whose timestamps are off by a live driver's polling delay or whose ACK was still on its
 * way when the DUT's timer fired. The runs themselves: test/e2e/probe-live.test.ts (netns) and
 * test/interop/probe.test.ts (rxe).
 */
import { bundledScenario } from '../../apps/probe/bundled-scenarios';
import { checkLiveScenario, dutAttributes, dutCommand, liveBound, PERFTEST_MIN_ITERS } from '../../apps/probe/live-runner';
import { measure } from '../../apps/probe/measurements';
import type { FrameRecord } from '../../apps/probe/probe-driver';
import { ProbeError } from '../../apps/probe/probe-error';
import { parseScenario } from '../../apps/probe/scenario';
import { localAckTimeoutNs } from '../../stack/qp-attributes';

const bundled = (name: string) => parseScenario(bundledScenario(name)!.yaml);

test('a scenario of fewer messages than perftest moves runs with 5; an event on its last PSN is refused, naming the line and the fix', () => {
  expect(checkLiveScenario(bundled('nak-retransmit'))).toEqual({ messages: PERFTEST_MIN_ITERS });
  const tail = bundled('timeout-tail-drop');
  expect(() => checkLiveScenario(tail)).toThrow(ProbeError);
  expect(() => checkLiveScenario(tail)).toThrow(
    /^line 11: the drop at PSN 15 is the last of the scenario's only message, but ib_write_bw sends at least 5 \(-n\).*num-msgs-per-qp 5 or more and the event PSN 79$/,
  );
  expect(() => checkLiveScenario(bundled('timeout-withheld-ack'))).toThrow(/withhold-ack at PSN 15/);
  const five = parseScenario(
    bundledScenario('timeout-tail-drop')!
      .yaml.replace(/^traffic:\n/m, 'traffic:\n  num-msgs-per-qp: 5\n')
      .replace(/^( {4}psn: )15/m, '$179'),
  );
  expect(checkLiveScenario(five)).toEqual({ messages: 5 });
  const seven = parseScenario(bundledScenario('nak-retransmit')!.yaml.replace(/^traffic:\n/m, 'traffic:\n  num-msgs-per-qp: 7\n'));
  expect(checkLiveScenario(seven)).toEqual({ messages: 7 });
});

test('rping runs its -C pings, no perftest minimum; every event type is taken', () => {
  const rping = parseScenario(['name: r', 'dut:', '  role: requester', '  tool: rping', 'traffic:', '  num-msgs-per-qp: 2'].join('\n'));
  expect(checkLiveScenario(rping)).toEqual({ messages: 2 });
  for (const type of ['delay-ack', 'seq-nak', 'cnp']) {
    const s = parseScenario(
      ['name: d', 'dut:', '  role: requester', '  tool: ib_write_bw', 'traffic:', '  num-msgs-per-qp: 5', 'events:', `  - type: ${type}`, '    psn: 3'].join(
        '\n',
      ),
    );
    expect(checkLiveScenario(s)).toEqual({ messages: 5 });
  }
});

test("the DUT's command: perftest's flags for the scenario; the client names our address, the server does not", () => {
  expect(dutCommand(bundled('nak-retransmit'), 5, { port: 18515, ourIp: '198.18.0.2' })).toBe(
    'ib_write_bw -d DEV -x GID_INDEX -s 16384 -n 5 -m 1024 -u 14 -F 198.18.0.2',
  );
  expect(dutCommand(bundled('nak-generation'), 5, { port: 18600, ourIp: '198.18.0.2' })).toBe(
    'ib_write_bw -d DEV -x GID_INDEX -s 16384 -n 5 -m 1024 -u 14 -p 18600 -F',
  );
  expect(dutCommand(bundled('rnr-wait'), 5, { port: 18515, ourIp: null })).toBe('ib_send_bw -d DEV -x GID_INDEX -s 4096 -n 5 -m 1024 -u 14 -F OUR_IP');
  // perftest takes -s 8 for atomics (any other size: "Message size cannot be changed for Atomic tests").
  expect(checkLiveScenario(bundled('duplicate-atomic'))).toEqual({ messages: 5 });
  expect(dutCommand(bundled('duplicate-atomic'), 5, { port: 18515, ourIp: '198.18.0.2' })).toBe('ib_atomic_bw -d DEV -x GID_INDEX -s 8 -n 5 -m 1024 -u 14 -F');
});

test("the DUT's attributes: the timeout told with -u; retry_cnt, rnr_retry and min_rnr_timer perftest's own, the scenario's when they differ, saying so", () => {
  const a = dutAttributes(bundled('retry-exhaust'));
  expect(a.map((x) => [x.name, x.value, x.option, x.toolValue])).toEqual([
    ['timeout', 8, '-u 8', null],
    ['retry_cnt', 3, null, 7],
    ['rnr_retry', 7, null, 7],
    ['min_rnr_timer', 12, null, 12],
  ]);
  expect(a[1]!.source).toMatch(/^the scenario; ib_write_bw cannot be told and sets 7 itself/);
  expect(a[2]!.source).toMatch(/sets 7 itself .*as the scenario asks/);
});

test("a run that loses its DUT ends within the scenario's timers: local ACK timeout × 8 tries + the longest RNR timer × 8 + 2 s", () => {
  // timeout 12 (16.777 ms), perftest's retry_cnt 7; rnr-nak timers: perftest's 12 (0.64 ms) unless an event names a longer one.
  expect(liveBound(bundled('timeout-tail-drop')).ms).toBe(Math.ceil(16.777216 * 8 + 0.64 * 8 + 2000));
  // rnr-wait's event timer 14 (1.28 ms) is the longest; timeout 14 (67.109 ms).
  const b = liveBound(bundled('rnr-wait'));
  expect(b.ms).toBe(Math.ceil(67.108864 * 8 + 1.28 * 8 + 2000));
  expect(b.why).toMatch(/local ACK timeout 67.109 ms \(timeout 14\) × 8 tries \(retry_cnt 7\) \+ RNR timer 1.28 ms × 8/);
});

// Records of one QP: ours 0x11 (the responder), the DUT's 0x22, its first PSN 100.
const qps = [{ ourQpn: 0x11, dutQpn: 0x22, requestStartPsn: 100 }];
const req = (psn: number, t: number, fate: FrameRecord['fate'] = 'delivered'): FrameRecord => ({
  timeNs: t,
  dir: 'rx',
  opcode: 0x07, // WRITE middle
  destQp: 0x11,
  psn,
  ackReq: false,
  syndrome: -1,
  reth: null,
  len: 1078,
  fate,
});
const ack = (psn: number, t: number): FrameRecord => ({
  timeNs: t,
  dir: 'tx',
  opcode: 0x11,
  destQp: 0x22,
  psn,
  ackReq: false,
  syndrome: 0x1f,
  reth: null,
  len: 1078,
  fate: 'delivered',
});

test('a timeout resend short of the timer by less than the timestamps’ error is not judged early; by more it is', () => {
  const s = parseScenario(
    [
      'name: t',
      'dut:',
      '  role: requester',
      '  tool: ib_write_bw',
      'traffic:',
      '  message-size: 2048',
      '  min-retransmit-timeout: 12',
      'events:',
      '  - type: drop',
      '    psn: 1',
    ].join('\n'),
  );
  const T = localAckTimeoutNs(12);
  const records = (gap: number): FrameRecord[] => [req(100, 0), req(101, 0, 'dropped'), req(100, gap), req(101, gap), ack(101, gap + 10)];
  const judge = (gap: number, errorNs: number) => measure({ scenario: s, qps, records: records(gap), pathRttNs: null, errorNs })[0];
  expect(judge(T - 5_000_000, 0)).toMatchObject({ kind: 'timeoutRetransmit', verdict: 'fail' });
  expect(judge(T - 5_000_000, 6_000_000)).toMatchObject({ kind: 'timeoutRetransmit', verdict: 'pass' });
  expect(judge(T - 7_000_000, 6_000_000)).toMatchObject({ kind: 'timeoutRetransmit', verdict: 'fail' });
});

// Our ACK of 101 restarts the DUT's timer; it sends 102..103 3 ms later, and resends 102 the
// timeout after the ACK: 3 ms short of the timeout after its last frame, in time. Dropped, 103
// draws a timeout resend; with our ACK of it held past the timeout, the same resend is ackDelay's.
const HOLD_NS = 70_000_000;
test.each([
  ['timeoutRetransmit', ['  - type: drop', '    psn: 3']],
  ['ackDelay', ['  - type: delay-ack', '    psn: 3', `    delay-us: ${HOLD_NS / 1000}`]],
] as const)('%s is early only against the timer’s earliest start (our last ACK that made progress), not the DUT’s last frame', (kind, event) => {
  const s = parseScenario(
    [
      'name: t',
      'dut:',
      '  role: requester',
      '  tool: ib_write_bw',
      'traffic:',
      '  num-msgs-per-qp: 2',
      '  message-size: 2048',
      '  min-retransmit-timeout: 12',
      'events:',
      ...event,
    ].join('\n'),
  );
  const T = localAckTimeoutNs(12);
  const late = 3_000_000;
  const dropped = kind === 'timeoutRetransmit';
  const records = (resendAt: number): FrameRecord[] => [
    req(100, 0),
    req(101, 0),
    ack(101, 10),
    req(102, late),
    req(103, late, dropped ? 'dropped' : 'delivered'),
    req(102, resendAt),
    req(103, resendAt),
    dropped ? ack(103, resendAt + 10) : { ...ack(103, late + 10 + HOLD_NS), heldNs: HOLD_NS },
  ];
  const judge = (resendAt: number) => measure({ scenario: s, qps, records: records(resendAt), pathRttNs: null, errorNs: 0 })[0];
  expect(judge(10 + T)).toMatchObject({ kind, value: 2, measuredNs: T + 10 - late, verdict: 'pass' });
  expect(judge(10 + T - 1_000_000)).toMatchObject({ kind, verdict: 'fail' });
});

test('retryCount: the gaps are timer periods, from burst to burst; the lost PSN’s first send, after the timer started, is no try', () => {
  const s = parseScenario(
    [
      'name: x',
      'dut:',
      '  role: requester',
      '  tool: ib_write_bw',
      'traffic:',
      '  num-msgs-per-qp: 2',
      '  message-size: 2048',
      '  min-retransmit-timeout: 8',
      '  max-retransmit-retry: 2',
      'events:',
      '  - type: drop',
      '    psn: 3',
      '    iter: all',
    ].join('\n'),
  );
  const T = localAckTimeoutNs(8);
  const late = 400_000;
  // Our ACK of 101 restarts the DUT's timer before it sends 102..103 (103 lost) a while later: its
  // first resend comes T after the ACK, less than T after 103's first send. In the second try the
  // DUT stalls between 102 and 103: 103 is late, the burst (its timer) is not.
  const records: FrameRecord[] = [
    req(100, 0),
    req(101, 0),
    ack(101, 10),
    req(102, late),
    req(103, late, 'dropped'),
    req(102, T + 10),
    req(103, T + 10, 'dropped'),
    req(102, 2 * T + 10),
    req(103, 2 * T + 10 + late, 'dropped'),
  ];
  const rc = measure({ scenario: s, qps, records, pathRttNs: null }).find((f) => f.kind === 'retryCount');
  expect(rc).toMatchObject({ value: 2, configured: 2, verdict: 'pass', measuredNs: T });
});

test('retryCount: a try that left late, and the short gap after it, is no early timer; tries at half the timeout are', () => {
  const s = parseScenario(
    [
      'name: x',
      'dut:',
      '  role: requester',
      '  tool: ib_write_bw',
      'traffic:',
      '  message-size: 1024',
      '  min-retransmit-timeout: 8',
      '  max-retransmit-retry: 3',
      'events:',
      '  - type: drop',
      '    psn: 0',
      '    iter: all',
    ].join('\n'),
  );
  const T = localAckTimeoutNs(8);
  const judge = (at: readonly number[]) =>
    measure({ scenario: s, qps, records: [req(100, 0, 'dropped'), ...at.map((t) => req(100, t, 'dropped'))], pathRttNs: null, errorNs: 0 }).find(
      (f) => f.kind === 'retryCount',
    );
  // The second try left T / 4 late (a busy DUT): the gap after it is short, every try is on or after its chain.
  expect(judge([T, 2 * T + T / 4, 3 * T])).toMatchObject({ value: 3, verdict: 'pass', measuredNs: (3 * T) / 4 });
  expect(judge([T / 2, T, (3 * T) / 2])).toMatchObject({ value: 3, verdict: 'fail' });
});

test('retryCount: a try sent before the DUT took our last ACK (its burst starts at an acknowledged PSN) is not counted after the progress', () => {
  const s = parseScenario(
    [
      'name: x',
      'dut:',
      '  role: requester',
      '  tool: ib_write_bw',
      'traffic:',
      '  message-size: 4096',
      '  min-retransmit-timeout: 8',
      '  max-retransmit-retry: 2',
      'events:',
      '  - type: drop',
      '    psn: 3',
      '    iter: all',
    ].join('\n'),
  );
  const T = localAckTimeoutNs(8);
  // PSNs 100..103 (103 lost); our ACK of 102 goes out; the DUT's timer fires before it takes the ACK:
  // it resends 100..103 (a burst from an acknowledged PSN); then, having taken it, 103 alone twice.
  const records: FrameRecord[] = [
    req(100, 0),
    req(101, 0),
    req(102, 0),
    req(103, 0, 'dropped'),
    ack(102, 10),
    req(100, T),
    req(101, T),
    req(102, T),
    req(103, T, 'dropped'),
    req(103, 2 * T, 'dropped'),
    req(103, 3 * T, 'dropped'),
  ];
  const [, rc] = measure({ scenario: s, qps, records, pathRttNs: null });
  expect(rc).toMatchObject({ kind: 'retryCount', value: 2, configured: 2, verdict: 'pass', measuredNs: T });
  // The ACK may be the answer to that burst's first frames, sent before we polled its last: the
  // burst still started at an acknowledged PSN (a live AF_XDP run polled 100..102, sent the ACK, then 103).
  const acked: FrameRecord[] = [
    req(100, 0),
    req(101, 0),
    req(102, 0),
    req(103, 0, 'dropped'),
    req(100, T),
    req(101, T),
    req(102, T),
    ack(102, T + 10),
    req(103, T + 20, 'dropped'),
    req(103, 2 * T + 10, 'dropped'),
    req(103, 3 * T + 10, 'dropped'),
  ];
  const [, rc2] = measure({ scenario: s, qps, records: acked, pathRttNs: null });
  expect(rc2).toMatchObject({ kind: 'retryCount', value: 2, configured: 2, verdict: 'pass' });
});
