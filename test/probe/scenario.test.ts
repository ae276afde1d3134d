/**
 * `roce probe` scenarios: the bundled ones read and say what they claim, defaults are perftest's
 * and Lumina's, and every kind of mistake is `ROCE_ERR_PROBE_SCENARIO` naming its line.
 */
import { BUNDLED_SCENARIOS, bundledScenario } from '../../apps/probe/bundled-scenarios';
import { ProbeError } from '../../apps/probe/probe-error';
import { packetsPerMessage, parseScenario } from '../../apps/probe/scenario';

function errorOf(text: string): ProbeError {
  try {
    parseScenario(text);
  } catch (e) {
    if (e instanceof ProbeError) return e;
    throw e;
  }
  throw new Error('the scenario was accepted');
}

const HEAD = 'name: t\ndut:\n  role: requester\n  tool: ib_write_bw\n';

test('every bundled scenario reads, under its own name, with at least one event', () => {
  expect(BUNDLED_SCENARIOS.length).toBeGreaterThanOrEqual(7);
  for (const b of BUNDLED_SCENARIOS) {
    const s = parseScenario(b.yaml);
    expect(s.name).toBe(b.name);
    expect(s.events.length).toBeGreaterThan(0);
    expect(bundledScenario(b.name)).toBe(b);
  }
  expect(new Set(BUNDLED_SCENARIOS.map((b) => b.name)).size).toBe(BUNDLED_SCENARIOS.length);
});

test('defaults: one QP, one 64 KiB message at MTU 1024, timeout 14, retry_cnt 7, rnr_retry 7, min_rnr_timer 12, a CNP per CE mark, our pacing 10 Gb/s; iter 1, QP 0', () => {
  const s = parseScenario(`${HEAD}events:\n  - type: drop\n    psn: 3\n`);
  expect(s.traffic).toEqual({
    verb: 'write',
    numQps: 1,
    numMsgsPerQp: 1,
    messageSize: 65536,
    mtu: 1024,
    minRetransmitTimeout: 14,
    maxRetransmitRetry: 7,
    rnrRetry: 7,
    minRnrTimer: 12,
    minTimeBetweenCnps: 0,
    rateMbps: 10_000,
  });
  expect(s.events).toEqual([{ type: 'drop', qpn: 0, psn: 3, iter: 1, line: 6 }]);
  expect(packetsPerMessage(s.traffic)).toBe(64);
});

test("Lumina's keys, iter all, an rnr-nak's timer defaulting to 12 (perftest's min_rnr_timer)", () => {
  const s = parseScenario(
    [
      'name: t',
      'dut:',
      '  role: requester',
      '  tool: ib_send_bw',
      'traffic:',
      '  num-qps: 2',
      '  num-msgs-per-qp: 3',
      '  message-size: 2048',
      '  mtu: 1024',
      '  min-retransmit-timeout: 9',
      '  max-retransmit-retry: 2',
      '  min-rnr-timer: 5',
      'events:',
      '  - type: drop',
      '    qpn: 1',
      '    psn: 5',
      '    iter: all',
      '  - type: rnr-nak',
      '    psn: 2',
    ].join('\n'),
  );
  expect(s.traffic).toMatchObject({ verb: 'send', numQps: 2, numMsgsPerQp: 3, messageSize: 2048, minRetransmitTimeout: 9, maxRetransmitRetry: 2 });
  expect(s.events[0]).toMatchObject({ type: 'drop', qpn: 1, psn: 5, iter: 'all', line: 14 });
  expect(s.events[1]).toMatchObject({ type: 'rnr-nak', psn: 2, iter: 1, timer: 12, line: 18 });
});

test('ib_atomic_bw: atomics of 8 bytes (one PSN each) by default; the events that act on any request are taken', () => {
  const responder = parseScenario(
    'name: t\ndut:\n  role: responder\n  tool: ib_atomic_bw\ntraffic:\n  num-msgs-per-qp: 4\nevents:\n  - type: duplicate\n    psn: 1\n  - type: skip\n    psn: 2\n  - type: ecn\n    psn: 3\n',
  );
  expect(responder.traffic).toMatchObject({ verb: 'atomic', messageSize: 8, numMsgsPerQp: 4 });
  expect(packetsPerMessage(responder.traffic)).toBe(1);
  expect(responder.events.map((e) => e.type)).toEqual(['duplicate', 'skip', 'ecn']);
  const requester = parseScenario(
    'name: t\ndut:\n  role: requester\n  tool: ib_atomic_bw\ntraffic:\n  message-size: 8\n  num-msgs-per-qp: 3\nevents:\n  - type: drop\n    psn: 1\n  - type: seq-nak\n    psn: 2\n',
  );
  expect(requester.traffic).toMatchObject({ verb: 'atomic', messageSize: 8 });
  expect(requester.events.map((e) => e.type)).toEqual(['drop', 'seq-nak']);
});

test.each([
  ['description: x', 1, /needs a name/],
  ['name: t', 1, /needs dut/],
  ['name: t\ndut:\n  role: client\n  tool: ib_write_bw', 3, /dut.role must be one of requester, responder, not "client"/],
  ['name: t\ndut:\n  role: requester\n  tool: ib_atomic_lat', 4, /dut.tool must be one of ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw, rping/],
  ['name: t\ndut:\n  role: requester', 2, /dut needs a tool/],
  [`${HEAD}colour: red`, 5, /unknown key 'colour' in the scenario \(known: name, description, dut, traffic, dcqcn, events\)/],
  [`${HEAD}traffic:\n  message_size: 5`, 6, /unknown key 'message_size' in traffic/],
  [`${HEAD}traffic:\n  verb: read`, 6, /traffic.verb read is not what the DUT's tool moves \(write\)/],
  [`${HEAD}traffic:\n  mtu: 1500`, 6, /traffic.mtu must be one of 256, 512, 1024, 2048, 4096, not 1500/],
  [`${HEAD}traffic:\n  num-qps: 0`, 6, /traffic.num-qps must be an integer in 1..64, not 0/],
  [`${HEAD}traffic:\n  min-retransmit-timeout: 0`, 6, /min-retransmit-timeout must be an integer in 1..31/],
  [`${HEAD}traffic:\n  max-retransmit-retry: 8`, 6, /max-retransmit-retry must be an integer in 0..7/],
  [`${HEAD}traffic:\n  message-size: "4k"`, 6, /message-size must be an integer/],
  [`${HEAD}traffic:\n  mtu: [1024]`, 6, /'mtu' must be a single value/],
  [`${HEAD}traffic: 5`, 5, /traffic must be a mapping/],
  [`${HEAD}events:\n  type: drop`, 5, /events must be a sequence/],
  [`${HEAD}events:\n  - psn: 1`, 6, /an event needs a type/],
  [`${HEAD}events:\n  - type: explode\n    psn: 1`, 6, /event.type must be one of drop, skip/],
  [`${HEAD}events:\n  - type: drop`, 6, /an event needs a psn \(relative, 0..63\)/],
  [`${HEAD}events:\n  - type: drop\n    psn: 64`, 7, /event.psn must be an integer in 0..63, not 64/],
  [`${HEAD}events:\n  - type: drop\n    psn: 1\n    qpn: 1`, 8, /event.qpn must be an integer in 0..0/],
  [`${HEAD}events:\n  - type: drop\n    psn: 1\n    iter: 0`, 8, /event.iter must be an integer in 1..64/],
  [`${HEAD}events:\n  - type: drop\n    psn: 1\n    timer: 3`, 8, /timer belongs to rnr-nak events/],
  [`${HEAD}events:\n  - type: skip\n    psn: 1`, 6, /a skip event acts on this stack's requests: it needs dut.role responder/],
  [`${HEAD}events:\n  - type: rnr-nak\n    psn: 0`, 6, /an rnr-nak event needs traffic.verb send/],
  [`${HEAD}events:\n  - type: drop-read-response\n    psn: 0`, 6, /needs traffic.verb read/],
  ['name: t\ndut:\n  role: responder\n  tool: ib_write_bw\nevents:\n  - type: withhold-ack\n    psn: 1', 6, /needs dut.role requester/],
  [
    'name: t\ndut:\n  role: requester\n  tool: ib_send_bw\ntraffic:\n  message-size: 4096\nevents:\n  - type: rnr-nak\n    psn: 1',
    8,
    /names the first PSN of a message \(a multiple of 4 here\), not 1/,
  ],
  ['name: t\ndut:\n  role: requester\n  tool: ib_send_bw\nevents:\n  - type: rnr-nak\n    psn: 0\n    iter: all', 6, /not 'all'/],
  [
    'name: t\ndut:\n  role: responder\n  tool: ib_atomic_bw\ntraffic:\n  message-size: 16',
    6,
    /traffic.message-size of an atomic is 8 \(one 64-bit word\), not 16/,
  ],
  [
    'name: t\ndut:\n  role: requester\n  tool: ib_atomic_bw\nevents:\n  - type: withhold-ack\n    psn: 0',
    6,
    /a withhold-ack event does not apply to atomics: .*ATOMIC ACKNOWLEDGE/,
  ],
  ['name: t\ndut:\n  role: requester\n  tool: ib_atomic_bw\nevents:\n  - type: delay-ack\n    psn: 0', 6, /a delay-ack event does not apply to atomics/],
  ['name: t\ndut:\n  role: requester\n  tool: ib_atomic_bw\nevents:\n  - type: cnp\n    psn: 0', 6, /a cnp event does not apply to atomics: .*max_rd_atomic/],
  ['name: t\ndut:\n  role: requester\n  tool: ib_atomic_bw\nevents:\n  - type: rnr-nak\n    psn: 0', 6, /an rnr-nak event needs traffic.verb send/],
  ['name: t\ndut:\n  role: requester\n  tool: ib_atomic_bw\nevents:\n  - type: drop-read-response\n    psn: 0', 6, /needs traffic.verb read/],
  [
    'name: t\ndut:\n  role: requester\n  tool: ib_atomic_bw\nevents:\n  - type: duplicate\n    psn: 0',
    6,
    /a duplicate event acts on this stack's requests: it needs dut.role responder/,
  ],
  ['- a\n- b', 1, /a scenario must be a mapping/],
])('%j is refused at line %i', (text, line, message) => {
  const e = errorOf(text);
  expect(e.code).toBe('ROCE_ERR_PROBE_SCENARIO');
  expect(e.line).toBe(line);
  expect(e.message).toMatch(message);
});

test('YAML outside the subset is ROCE_ERR_PROBE_YAML, not a scenario error', () => {
  expect(errorOf(`${HEAD}traffic: &t\n  mtu: 1024`).code).toBe('ROCE_ERR_PROBE_YAML');
});
