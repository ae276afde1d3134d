/**
 * rping as a `roce probe` DUT, the parts that need no network: the server's request PSNs of a ping
 * (rping-layout.ts: READ, SEND, WRITE, SEND, librdmacm examples/rping.c rping_test_server()), the
 * events each fits (refused at their line otherwise), the DUT's command line and where its QP
 * attributes come from (its CM), and the opcode each event's fault rule is narrowed to. The run
 * itself: test/e2e/probe-live-rping.test.ts (netns).
 */
import { CM_MIN_RNR_TIMER, RPING_CM_TIMEOUT, rpingDutAttributes, rpingDutCommand, rpingEventOpcode } from '../../apps/probe/live-rping';
import { ProbeError } from '../../apps/probe/probe-error';
import { RpingOp, describeRpingPsn, rpingPsnAt, rpingPsnsPerPing } from '../../apps/probe/rping-layout';
import { type ProbeScenario, parseScenario, requestPsns } from '../../apps/probe/scenario';
import { Opcode } from '../../packets/opcodes';

const scenario = (role: 'requester' | 'responder', traffic: string[], events: string[]): ProbeScenario =>
  parseScenario(['name: r', 'dut:', `  role: ${role}`, '  tool: rping', 'traffic:', ...traffic.map((l) => `  ${l}`), 'events:', ...events].join('\n'));

/** The message of the ProbeError `f` throws, with its line. */
function refusal(f: () => unknown): { line: number | null; message: string } {
  try {
    f();
  } catch (e) {
    if (!(e instanceof ProbeError)) throw e;
    return { line: e.line, message: e.message };
  }
  throw new Error('not refused');
}

test("a ping is the server's READ (one request, P response PSNs), a SEND, a WRITE of P packets and a SEND", () => {
  // -S 4096 at MTU 1024: P = 4, a ping takes 10 PSNs.
  expect(rpingPsnsPerPing(4096, 1024)).toBe(10);
  const at = (rel: number) => rpingPsnAt(rel, 4096, 1024);
  expect(at(0)).toMatchObject({
    ping: 0,
    op: RpingOp.READ,
    first: 0,
    packets: 4,
    offset: 0,
    request: Opcode.RC_RDMA_READ_REQUEST,
    response: Opcode.RC_RDMA_READ_RESPONSE_FIRST,
  });
  expect(at(2)).toMatchObject({ op: RpingOp.READ, offset: 2, request: null, response: Opcode.RC_RDMA_READ_RESPONSE_MIDDLE });
  expect(at(3)).toMatchObject({ op: RpingOp.READ, request: null, response: Opcode.RC_RDMA_READ_RESPONSE_LAST });
  expect(at(4)).toMatchObject({ op: RpingOp.READ_GO_AHEAD, first: 4, request: Opcode.RC_SEND_ONLY, response: Opcode.RC_ACKNOWLEDGE });
  expect(at(5)).toMatchObject({ op: RpingOp.WRITE, first: 5, offset: 0, request: Opcode.RC_RDMA_WRITE_FIRST, response: null });
  expect(at(6)).toMatchObject({ op: RpingOp.WRITE, request: Opcode.RC_RDMA_WRITE_MIDDLE, response: null });
  expect(at(8)).toMatchObject({ op: RpingOp.WRITE, offset: 3, request: Opcode.RC_RDMA_WRITE_LAST, response: Opcode.RC_ACKNOWLEDGE });
  expect(at(9)).toMatchObject({ op: RpingOp.WRITE_GO_AHEAD, first: 9, request: Opcode.RC_SEND_ONLY });
  expect(at(12)).toMatchObject({ ping: 1, op: RpingOp.READ, first: 10, offset: 2 });
  expect(describeRpingPsn(at(6))).toBe('the RDMA WRITE of ping 0 (PSNs 5-8)');
  // rping's default -S 64 in one packet: ONLY opcodes, 4 PSNs a ping.
  expect(rpingPsnsPerPing(64, 1024)).toBe(4);
  expect(rpingPsnAt(0, 64, 1024)).toMatchObject({ request: Opcode.RC_RDMA_READ_REQUEST, response: Opcode.RC_RDMA_READ_RESPONSE_ONLY });
  expect(rpingPsnAt(2, 64, 1024)).toMatchObject({ op: RpingOp.WRITE, request: Opcode.RC_RDMA_WRITE_ONLY, response: Opcode.RC_ACKNOWLEDGE });
});

test("an rping scenario: -S 64 and one QP by default, -S in rping's range, PSNs over every ping's four operations", () => {
  const s = scenario('requester', ['num-msgs-per-qp: 3'], []);
  expect(s.traffic).toMatchObject({ verb: 'read', messageSize: 64, numQps: 1, numMsgsPerQp: 3 });
  expect(requestPsns({ tool: s.dut.tool, traffic: s.traffic })).toBe(12);
  expect(scenario('requester', ['message-size: 4096', 'num-msgs-per-qp: 2'], ['  - type: drop', '    psn: 19']).events).toHaveLength(1);
  expect(refusal(() => scenario('requester', ['message-size: 4096'], ['  - type: drop', '    psn: 10'])).message).toMatch(/psn must be an integer in 0\.\.9/);
  expect(refusal(() => scenario('requester', ['message-size: 16'], []))).toMatchObject({
    line: 6,
    message: expect.stringMatching(/rping's -S, 26\.\.65535, not 16/),
  });
  expect(refusal(() => scenario('requester', ['num-qps: 2'], [])).message).toMatch(/rping connects one QP/);
});

test('the events that fit rping -s (DUT requester) and rping -c (DUT responder), and the rest refused at their line', () => {
  const ok = (role: 'requester' | 'responder', type: string, psn: number): void => {
    expect(scenario(role, ['message-size: 4096'], [`  - type: ${type}`, `    psn: ${psn}`]).events[0]).toMatchObject({ type, psn });
  };
  const no = (role: 'requester' | 'responder', type: string, psn: number, why: RegExp): void => {
    expect(refusal(() => scenario(role, ['message-size: 4096'], [`  - type: ${type}`, `    psn: ${psn}`]))).toEqual({
      line: 8,
      message: expect.stringMatching(why),
    });
  };
  // rping -s: its READ request, SENDs and WRITE packets can be lost; our READ responses dropped; our ACKs of its SENDs and WRITEs held.
  ok('requester', 'drop', 0);
  ok('requester', 'drop', 6);
  ok('requester', 'drop-read-response', 1);
  ok('requester', 'seq-nak', 5);
  ok('requester', 'withhold-ack', 4);
  ok('requester', 'delay-ack', 8);
  no('requester', 'drop', 2, /PSN 2 is in the RDMA READ of ping 0 \(PSNs 0-3\): only its first PSN carries a request of the DUT's/);
  no('requester', 'drop-read-response', 5, /names a PSN of a ping's RDMA READ/);
  no('requester', 'withhold-ack', 1, /a READ response, not an ACK/);
  no('requester', 'withhold-ack', 6, /the ACK that completes it is for its last PSN \(8\)/);
  no('requester', 'rnr-nak', 4, /keeps its one receive posted/);
  no('requester', 'cnp', 0, /its rate follows the round trip/);
  no('requester', 'skip', 6, /needs dut.role responder/);
  // rping -c: our requests skipped (inside a WRITE), duplicated, marked; its answers dropped.
  ok('responder', 'skip', 6);
  ok('responder', 'duplicate', 0);
  ok('responder', 'duplicate', 9);
  ok('responder', 'ecn', 5);
  ok('responder', 'drop', 1);
  no('responder', 'skip', 0, /nothing follows it until it completes/);
  no('responder', 'skip', 8, /nothing follows it until it completes/);
  no('responder', 'duplicate', 3, /only its first PSN carries a request we \(the rping server\) send/);
  no('responder', 'drop', 6, /ACKs a WRITE at its last PSN \(8\)/);
  no('responder', 'drop-read-response', 1, /needs dut.role requester/);
});

test("the DUT's command: rping -s on its address (no -C: the server serves until its client leaves), or rping -c towards us with -C", () => {
  const srv = scenario('requester', ['message-size: 4096', 'num-msgs-per-qp: 3'], []);
  expect(rpingDutCommand(srv, { port: 7174, dutIp: '198.18.0.1', ourIp: '198.18.0.2' })).toBe('rping -s -a 198.18.0.1 -S 4096 -v');
  const cli = scenario('responder', ['message-size: 4096', 'num-msgs-per-qp: 3'], []);
  expect(rpingDutCommand(cli, { port: 7200, dutIp: null, ourIp: '198.18.0.2' })).toBe('rping -c -a 198.18.0.2 -p 7200 -C 3 -S 4096 -v');
});

test("the DUT's QP attributes come from the RDMA CM: our REQ's retry counts reach rping -s; the timeout is the CM's", () => {
  expect(RPING_CM_TIMEOUT).toBe(19);
  const srv = rpingDutAttributes(scenario('requester', ['max-retransmit-retry: 3', 'min-retransmit-timeout: 19'], []));
  expect(srv.map((a) => [a.name, a.value, a.option, a.toolValue])).toEqual([
    ['timeout', 19, null, 19],
    ['retry_cnt', 3, null, null],
    ['rnr_retry', 7, null, null],
    ['min_rnr_timer', 12, null, CM_MIN_RNR_TIMER],
  ]);
  expect(srv[0]?.source).toMatch(/^our CM REQ's local ACK timeout \(19.*as the scenario asks$/);
  expect(srv[1]?.source).toMatch(/^our CM REQ's retry count \(3\), which the DUT's CM gives its QP/);
  const cli = rpingDutAttributes(scenario('responder', ['max-retransmit-retry: 3'], []));
  expect(cli.map((a) => [a.name, a.value, a.toolValue])).toEqual([
    ['timeout', 14, 19],
    ['retry_cnt', 3, 7],
    ['rnr_retry', 7, null],
    ['min_rnr_timer', 12, 0],
  ]);
  expect(cli[0]?.source).toMatch(/^the scenario; rping cannot be told: its CM/);
  expect(cli[1]?.source).toMatch(/rping_init_conn_param\(\)/);
  expect(cli[2]?.source).toMatch(/^our CM REP's RNR retry count/);
});

test("each event's rule is narrowed to the opcode of the frame it names: the QP carries requests both ways", () => {
  const srv = scenario(
    'requester',
    ['message-size: 4096'],
    ['  - type: drop', '    psn: 5', '  - type: drop-read-response', '    psn: 2', '  - type: withhold-ack', '    psn: 4'],
  );
  expect(srv.events.map((e) => rpingEventOpcode(srv, e))).toEqual([Opcode.RC_RDMA_WRITE_FIRST, Opcode.RC_RDMA_READ_RESPONSE_MIDDLE, Opcode.RC_ACKNOWLEDGE]);
  const cli = scenario(
    'responder',
    ['message-size: 4096'],
    ['  - type: skip', '    psn: 6', '  - type: drop', '    psn: 0', '  - type: duplicate', '    psn: 4'],
  );
  expect(cli.events.map((e) => rpingEventOpcode(cli, e))).toEqual([Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.RC_RDMA_READ_RESPONSE_FIRST, Opcode.RC_SEND_ONLY]);
});
