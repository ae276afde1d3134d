/**
 * Replay and analysis of imperfect captures: a capture that starts mid-conversation,
 * READ data the capture does not show the source of, ICRCs the capture tool did not keep.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createSimPair } from '../../apps/sim/sim-pair';
import { runWorkload } from '../../apps/sim/workload';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { PcapWriter, readCapture } from '../../packets/pcap';
import { decodeFrame, packetAddresses } from '../../packets/decode';
import { buildRoceV2Frame } from '../../packets/build';
import { buildCmMad } from '../../packets/mad-payload';
import { applyCmSetup, cmConnections } from '../../apps/replay/cm-setup';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { replayResponder } from '../../apps/replay/responder-replay';
import { replayRequester } from '../../apps/replay/requester-replay';
import { Mtu } from '../../stack/mtu';
import { OpFlag } from '../../packets/opcodes';
import { Op, QP_A, type Step, capture, req } from '../analysis/frames';
import { asRoceV1, cutSnaplen, dropRecords, roceFrames, spoilIcrc, startAt } from '../support/degrade';
import { analyzeCapture } from '../../analysis/analyzer';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-imperfect-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function ownCapture(seed: number): Uint8Array {
  const tap = new PcapTap({ where: 'host-b' });
  const sim = createSimPair({ seed, tap });
  expect(runWorkload(sim, { seed, qps: 1, bytes: 24 * 1024, maxMessage: 3000, pathMtu: Mtu.MTU_1024 }).ok).toBe(true);
  sim.clock.runUntilIdle(1_000_000);
  return tap.bytes();
}

function replayAll(file: Uint8Array) {
  const { packets } = capturedPackets(readCapture(file));
  return findRcConversations(packets, packetAddresses).map((c) => replayResponder(c, { timing: 'fast' }));
}

test('a capture that starts mid-conversation: MSNs are set against the real responder’s, no violation', () => {
  const whole = ownCapture(4);
  for (const at of [7, 30, 61]) {
    const [r] = replayAll(startAt(whole, at));
    expect(r).toBeDefined();
    expect(r!.differences.filter((d) => d.class === 'violation')).toEqual([]);
    expect(r!.matched).toBe(r!.expected);
    expect(r!.expected).toBeGreaterThan(5);
  }
  // Started at the connection's start, the MSN is compared as it is: a changed MSN is still caught.
  const [ok] = replayAll(whole);
  expect(ok!.violations).toBe(0);
  expect(ok!.differences.some((d) => d.kind === 'captureStart')).toBe(false);
});

/** A READ RESPONSE ONLY from B carrying `data`. */
function readResponse(us: number, psn: number, msn: number, data: number[]): Step {
  return { us, from: 'b', t: { bth: { opcode: Op.READ_RESPONSE_ONLY, destQp: QP_A, psn }, aeth: { syndrome: 0x1f, msn }, payload: Uint8Array.from(data) } };
}
const read = (us: number, psn: number): Step => req(us, Op.READ_REQUEST, psn, { reth: { va: 0x1000n, rkey: 0x2233, dmaLength: 4 } });
const write = (us: number, psn: number, data: number[]): Step =>
  req(us, Op.WRITE_ONLY, psn, { reth: { va: 0x1000n, rkey: 0x2233, dmaLength: 4 }, payload: Uint8Array.from(data) });
const ackStep = (us: number, psn: number, msn: number): Step => ({
  us,
  from: 'b',
  t: { bth: { opcode: Op.ACK, destQp: QP_A, psn }, aeth: { syndrome: 0x1f, msn } },
});

test('READ data that changed between READs with no WRITE in the capture is unverifiable, not a violation (rping)', () => {
  const [r] = replayAll(capture([read(0, 10), readResponse(5, 10, 1, [1, 2, 3, 4]), read(20, 11), readResponse(25, 11, 2, [9, 9, 9, 9])]));
  expect(r!.violations).toBe(0);
  expect(r!.differences.map((d) => `${d.class}:${d.kind}`)).toEqual(['unverifiable:readData']);
});

test('READ data a captured WRITE put there is checked', () => {
  const good = replayAll(capture([write(0, 10, [7, 7, 7, 7]), ackStep(5, 10, 1), read(20, 11), readResponse(25, 11, 2, [7, 7, 7, 7])]))[0]!;
  expect(good.violations).toBe(0);
  expect(good.differences).toEqual([]);
  const bad = replayAll(capture([write(0, 10, [7, 7, 7, 7]), ackStep(5, 10, 1), read(20, 11), readResponse(25, 11, 2, [7, 7, 7, 8])]))[0]!;
  expect(bad.differences.filter((d) => d.class === 'violation').map((d) => d.kind)).toEqual(['readData']);
});

test('ICRCs the capture tool did not keep: the summary says so, and --ignore-icrc analyses and replays the capture', async () => {
  const file = path.join(dir, 'spoilt.pcap');
  fs.writeFileSync(file, spoilIcrc(ownCapture(4)));
  const a = memoryOutput();
  expect(await run(['analyze', file], a)).toBe(0);
  expect(a.out).toContain('ICRC likely not preserved by the capture tool');
  const b = memoryOutput();
  expect(await run(['analyze', '--ignore-icrc', '--json', file], b)).toBe(0);
  const doc = JSON.parse(b.out) as { captureQuality: { icrc: string }; summary: { messages: number; violations: number } };
  expect(doc.captureQuality.icrc).toBe('notChecked');
  expect(doc.summary.messages).toBeGreaterThan(5);
  expect(doc.summary.violations).toBe(0);
  const c = memoryOutput();
  expect(await run(['replay', file], c)).toBe(1);
  expect(c.err).toContain('try --ignore-icrc');
  const d = memoryOutput();
  expect(await run(['replay', '--ignore-icrc', '--json', file], d)).toBe(0);
  const rep = JSON.parse(d.out) as { violations: number; matched: number; expected: number };
  expect(rep.violations).toBe(0);
  expect(rep.matched).toBe(rep.expected);
  for (const cmd of ['ladder', 'plot']) {
    const o = memoryOutput();
    expect(await run([cmd, '--ignore-icrc', '-o', path.join(dir, `${cmd}.svg`), file], o)).toBe(0);
  }
});

test('the capture quality line of analyze: frames captured and implied, truncated frames, ICRC, where it started', async () => {
  const whole = ownCapture(4);
  const recs = readCapture(whole).records.length;
  // Cut the snaplen, start late, lose one request (sent once, never resent) the responder acknowledged.
  const frames = roceFrames(whole);
  const once = frames.filter(
    (x) => x.p.info?.name === 'RC_SEND_ONLY' && frames.filter((y) => y.p.bth?.psn === x.p.bth?.psn && y.p.info?.name === 'RC_SEND_ONLY').length === 1,
  );
  const lost = once[Math.floor(once.length / 2)]!.n;
  const file = path.join(dir, 'imperfect.pcap');
  fs.writeFileSync(file, cutSnaplen(startAt(dropRecords(whole, new Set([lost])), 3), 120));
  const o = memoryOutput();
  expect(await run(['analyze', file], o)).toBe(0);
  const line = o.out.split('\n').find((l) => l.startsWith('capture quality:'));
  expect(line).toMatch(
    new RegExp(
      `^capture quality: ${recs - 3} RoCE frames captured, 1 more implied by the responses \\(1 capture gap\\(s\\)\\); \\d+ truncated by the capture; ICRC preserved; started mid-conversation`,
    ),
  );
});

test('R_Keys chosen by hardware that share a key index (0x1943, 0x1944) replay: each region gets a key the stack can take', () => {
  const w = (us: number, psn: number, rkey: number, va: bigint, data: number[]): Step =>
    req(us, Op.WRITE_ONLY, psn, { reth: { va, rkey, dmaLength: data.length }, payload: Uint8Array.from(data) });
  const rd = (us: number, psn: number, rkey: number, va: bigint): Step => req(us, Op.READ_REQUEST, psn, { reth: { va, rkey, dmaLength: 4 } });
  const steps = [
    w(0, 10, 0x1943, 0x7f0000001000n, [1, 2, 3, 4]),
    ackStep(5, 10, 1),
    w(10, 11, 0x1944, 0x7f0000009000n, [5, 6, 7, 8]),
    ackStep(15, 11, 2),
    rd(20, 12, 0x1943, 0x7f0000001000n),
    readResponse(25, 12, 3, [1, 2, 3, 4]),
    rd(30, 13, 0x1944, 0x7f0000009000n),
    readResponse(35, 13, 4, [5, 6, 7, 8]),
  ];
  const [r] = replayAll(capture(steps));
  expect(r!.differences).toEqual([]);
  expect(r!.matched).toBe(4);
  // The READ data is checked against what the WRITEs put there, under the stand-in key too.
  const wrong = replayAll(capture([...steps.slice(0, 7), readResponse(35, 13, 4, [5, 6, 7, 9])]))[0]!;
  expect(wrong.differences.filter((d) => d.class === 'violation').map((d) => d.kind)).toEqual(['readData']);
});

test('RoCE v1: analysis and replay of the same traffic over v1 find what they find over v2', () => {
  const v2 = ownCapture(4);
  const v1 = asRoceV1(v2);
  expect(roceFrames(v1).every((x) => x.p.version === 1 && x.p.error === null)).toBe(true);
  const a2 = analyzeCapture(v2);
  const a1 = analyzeCapture(v1);
  expect(a1.messageCount).toBe(a2.messageCount);
  expect(a1.violationCount).toBe(0);
  expect(a1.conversations.map((c) => c.type)).toEqual(a2.conversations.map((c) => c.type));
  const { packets, v1: count } = capturedPackets(readCapture(v1));
  expect(count).toBe(roceFrames(v1).length);
  const [r] = findRcConversations(packets, packetAddresses).map((c) => replayResponder(c, { timing: 'fast' }));
  expect(r!.violations).toBe(0);
  expect(r!.matched).toBe(r!.expected);
  expect(r!.expected).toBeGreaterThan(20);
});

/** The capture's RoCE frames with CM REQ and REP (taken from captures/cm-exchanges.pcap, fields set to this connection) before them. */
function withCmSetup(file: Uint8Array, o: { reqQpn: number; reqPsn: number; repQpn: number; repPsn: number; mtu: number }): Uint8Array {
  const cm = readCapture(fs.readFileSync(path.join(__dirname, '..', '..', 'captures', 'cm-exchanges.pcap')));
  const recs = readCapture(file).records;
  const first = recs[0]!;
  const eth = decodeFrame(first.data);
  if (!eth.roce || eth.eth === null) throw new Error('no Ethernet');
  // The MACs of host A (198.18.0.1) and host B in this capture.
  const macOf = (ip: string): number => {
    for (const r of recs) {
      const d = decodeFrame(r.data);
      if (d.roce && d.eth !== null && packetAddresses(d).src === ip) return d.eth.src;
    }
    throw new Error(`no frame from ${ip}`);
  };
  const frames: Uint8Array[] = [];
  for (const [i, from, to] of [
    [0, '198.18.0.1', '198.18.0.2'],
    [2, '198.18.0.2', '198.18.0.1'],
  ] as const) {
    const d = decodeFrame(cm.records[i]!.data);
    if (!d.roce || d.mad?.cm == null) throw new Error('no CM');
    const m = d.mad.cm;
    if (m.name === 'REQ') {
      m.fields.localQpn = o.reqQpn;
      m.fields.startingPsn = o.reqPsn;
      m.fields.pathMtu = o.mtu;
    } else if (m.name === 'REP') {
      m.fields.localQpn = o.repQpn;
      m.fields.startingPsn = o.repPsn;
    }
    frames.push(
      buildRoceV2Frame({
        eth: { src: macOf(from), dst: macOf(to) },
        ip: { version: 4, src: from, dst: to },
        udp: { srcPort: 55410 },
        bth: { opcode: 0x64, destQp: 1, psn: i, ackReq: true },
        deth: { qkey: 0x80010000, srcQp: 1 },
        payload: buildCmMad(m, { transactionId: d.mad.header.transactionId }),
      }),
    );
  }
  const w = new PcapWriter({ nanosecond: true });
  frames.forEach((f, i) => w.add(f, first.timestampNs - 1000n + BigInt(i)));
  for (const r of recs) w.add(r.data, r.timestampNs, r.origLen);
  return w.toBytes();
}

test('a REP whose Starting PSN is far before the first request: the requester replay builds nothing and says why, with no crash', () => {
  const whole = ownCapture(4);
  const reqs = roceFrames(whole).filter((x) => ((x.p.info?.flags ?? 0) & OpFlag.REQ) !== 0 && x.p.bth !== null);
  const firstReq = reqs[0]!.p;
  const firstResp = roceFrames(whole).find((x) => x.p.bth !== null && x.p.aeth !== null)!;
  const far = (firstReq.bth!.psn - (1 << 20) + (1 << 24)) % (1 << 24);
  const withCm = withCmSetup(whole, { reqQpn: firstResp.p.bth!.destQp, reqPsn: 0x123456, repQpn: firstReq.bth!.destQp, repPsn: far, mtu: 3 });
  const { packets } = capturedPackets(readCapture(withCm));
  const convs = findRcConversations(packets, packetAddresses);
  applyCmSetup(convs, cmConnections(packets));
  expect(convs[0]!.cm?.startPsn).toBe(far);
  const s = replayRequester(convs[0]!, { timing: 'fast' });
  expect(s.differences).toEqual([expect.objectContaining({ class: 'unverifiable', kind: 'replayTooCostly' })]);
  expect(s.differences[0]!.got).toMatch(/the capture lost 1048576 request PSNs/);
  expect(s.framesOut).toBe(0);
});

test('a conversation established by RDMA CM starts where the REQ and REP say, and the capture lost its first requests', () => {
  // The active side (the requester here) sends from the REP's Starting PSN, as ib_cm and rdma_cm set the QPs.
  const whole = ownCapture(4);
  const reqs = roceFrames(whole).filter((x) => ((x.p.info?.flags ?? 0) & OpFlag.REQ) !== 0 && x.p.bth !== null);
  const firstReq = reqs[0]!.p;
  const firstResp = roceFrames(whole).find((x) => x.p.bth !== null && x.p.aeth !== null)!;
  expect(firstReq.bth).not.toBeNull();
  const withCm = withCmSetup(whole, { reqQpn: firstResp.p.bth!.destQp, reqPsn: 0x123456, repQpn: firstReq.bth!.destQp, repPsn: firstReq.bth!.psn, mtu: 3 });
  // Lose the capture's first two requests (frames 3 and 4 after the REQ and REP): the CM exchange
  // tells replay where the connection started, so it bridges them as a capture gap.
  const lost = dropRecords(withCm, new Set([3, 4]));
  const { packets } = capturedPackets(readCapture(lost));
  const convs = findRcConversations(packets, packetAddresses);
  applyCmSetup(convs, cmConnections(packets));
  expect(convs[0]!.cm).toEqual({ startPsn: firstReq.bth!.psn, frames: [1, 2] });
  expect(convs[0]!.pathMtuBytes).toBe(1024);
  const r = replayResponder(convs[0]!, { timing: 'fast' });
  expect(r.violations).toBe(0);
  expect(r.differences.map((d) => d.kind)).toContain('captureGap');
  expect(r.differences.some((d) => d.kind === 'captureStart')).toBe(false);
  expect(r.matched).toBe(r.expected);

  // Analysis: the conversation starts at the REP with both QPNs and first PSNs, and the first
  // request captured after the lost one shows the gap.
  const a = analyzeCapture(lost);
  const c = a.conversations.find((x) => x.type === 'RC')!;
  expect(c.cmEstablished).toBe(true);
  expect(c.a.qpn).toBe(firstResp.p.bth!.destQp);
  expect(a.violations).toEqual([]);
  expect(a.captureGaps.map((g) => [g.firstPsn, g.how])).toEqual([[firstReq.bth!.psn, 'notCaptured']]);
  expect(a.captureQuality.start).toBe('connectionStart');
});
