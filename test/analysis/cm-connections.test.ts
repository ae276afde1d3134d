/**
 * `roce analyze`'s RDMA CM connections (analysis/cm-connections.ts), on captures the stack made
 * itself: two RdmaCm over the in-memory link with the fault injector dropping chosen CM MADs, the
 * frames written by a pcap writer at each host and on the wire (host-capture.ts). Also the rxe
 * lab's captures (captures/rxe) and the generated captures/cm-exchanges.pcap.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { analyzeCapture, type AnalysisResult } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';
import { textReport } from '../../analysis/text-report';
import { CmConnectionState, type CmConnection } from '../../analysis/cm-connections';
import { simWithHostCaptures } from './host-capture';
import { SIM_IP_A, SIM_IP_B } from '../../apps/sim/sim-pair';
import { type AutoMra, RdmaCm, type RdmaCmEvent } from '../../stack/cm/rdma-cm';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';
import type { FaultConfig } from '../../nic-driver/faults';
import { cmTimeNs, responseWaitNs } from '../../stack/cm/timers';
import { iterateCapture, PcapWriter, LinkType } from '../../packets/pcap';

const PORT = 7174;
const ROOT = join(__dirname, '..', '..');

function ends(dev: Device) {
  const pd = dev.allocPd();
  const cq = dev.createCq(256);
  const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
  const mr = dev.regMr(pd, new Uint8Array(1 << 14), Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
  return { qp, cq, mr };
}

/** Drops the first CM MAD carrying message `mad` in one direction (the fault injector's `mad` match). */
const dropMad = (mad: string, direction: 'a->b' | 'b->a'): FaultConfig => ({ rules: [{ action: 'drop', match: { mad, direction }, count: 1 }] });

interface Run {
  caps: ReturnType<typeof simWithHostCaptures>;
  client: ReturnType<typeof ends> & { rcm: RdmaCm; events: RdmaCmEvent[] };
  server: ReturnType<typeof ends> & { rcm: RdmaCm; events: RdmaCmEvent[] };
}

/** Client on A, server on B listening on PORT (accepting after `acceptDelayNs`, default at once). */
function run(o: { faults?: { aToB?: FaultConfig; bToA?: FaultConfig }; acceptDelayNs?: number; autoMra?: AutoMra } = {}): Run {
  const caps = simWithHostCaptures({ seed: 11, ...(o.faults !== undefined ? { faults: o.faults } : {}) });
  const { sim } = caps;
  const client = { ...ends(sim.a), rcm: new RdmaCm(sim.a, { seed: 1 }), events: [] as RdmaCmEvent[] };
  const server = {
    ...ends(sim.b),
    rcm: new RdmaCm(sim.b, { seed: 2, ...(o.autoMra !== undefined ? { autoMra: o.autoMra } : {}) }),
    events: [] as RdmaCmEvent[],
  };
  server.rcm.listen(PORT, (e) => {
    server.events.push(e);
    if (e.type !== 'CONNECT_REQUEST') return;
    if (o.acceptDelayNs === undefined) e.id.accept(server.qp);
    else sim.clock.schedule(sim.clock.now() + o.acceptDelayNs, () => e.id.accept(server.qp));
  });
  return { caps, client, server };
}

/** Connect, one client SEND, then disconnect and wait out TimeWait. */
function connectSendDisconnect(r: Run, qp: QueuePair = r.client.qp, serverQp: QueuePair = r.server.qp): void {
  const { sim } = r.caps;
  const n = r.client.events.length;
  const id = r.client.rcm.connect({ dst: SIM_IP_B, port: PORT, qp }, (e) => r.client.events.push(e));
  sim.clock.runWhile(() => r.client.events.length === n, 1_000_000);
  expect(r.client.events[n]?.type).toBe('ESTABLISHED');
  serverQp.postRecv({ wrId: 1, sgList: [r.server.mr.sge(0, 1024)] });
  qp.postSend({ wrId: 2, opcode: WrOpcode.SEND, sgList: [r.client.mr.sge(0, 64)], sendFlags: SendFlags.SIGNALED });
  sim.clock.runWhile(() => r.client.cq.size === 0, 1_000_000);
  r.client.cq.poll();
  r.server.cq.poll();
  id.disconnect();
  sim.clock.runUntilIdle(1_000_000);
  id.destroy();
}

const only = (a: AnalysisResult): CmConnection => {
  expect(a.cmConnections).toHaveLength(1);
  return a.cmConnections[0] as CmConnection;
};

describe('RDMA CM connections in roce analyze', () => {
  test('a clean connection: hosts, QPNs and start PSNs from REQ and REP, service and port, REQ→REP→RTU, DREQ→DREP, disconnected; its RC conversation ends at the DREP', () => {
    const r = run();
    connectSendDisconnect(r);
    const a = analyzeCapture(r.caps.wireSent());
    const c = only(a);
    const qa = r.client.qp;
    const qb = r.server.qp;
    expect(c).toMatchObject({
      transport: 'RC',
      rolesKnown: true,
      active: { ip: SIM_IP_A, qpn: qa.qpNum, startPsn: qa.attr.rqPsn },
      passive: { ip: SIM_IP_B, qpn: qb.qpNum, startPsn: qb.attr.rqPsn },
      serviceId: '0000000001061c06',
      portSpace: 'TCP',
      port: PORT,
      ipCm: { srcAddr: SIM_IP_A, dstAddr: SIM_IP_B },
      retries: { req: 0, rep: 0, dreq: 0, sidrReq: 0 },
      mras: [],
      rej: null,
      disconnectedBy: 'active',
      state: CmConnectionState.DISCONNECTED,
    });
    expect(Object.fromEntries(Object.entries(c.messages).map(([k, v]) => [k, v?.count]))).toEqual({ REQ: 1, REP: 1, RTU: 1, DREQ: 1, DREP: 1 });
    // Times on the virtual clock, captured as sent: each answer one link latency (2 µs) after what it answers, or later.
    expect(c.reqToRepNs).toBeGreaterThanOrEqual(2000);
    expect(c.repToRtuNs).toBeGreaterThanOrEqual(2000);
    // The client posts its SEND when ESTABLISHED comes, which may put it on the wire before the RTU: whichever came first established the passive side.
    expect(c.establishedBy).toBe(c.firstDataFrame !== null && c.firstDataFrame < (c.messages['RTU']?.firstFrame ?? Infinity) ? 'firstPacket' : 'RTU');
    expect(c.repToFirstPacketNs).toBeGreaterThan(0);
    expect(c.dreqToDrepNs).toBeGreaterThanOrEqual(2000);
    const conv = a.conversations.find((x) => x.id === c.conversation);
    expect(conv).toMatchObject({ type: 'RC', cmEstablished: true, cmConnection: c.id, cmEndedFrame: c.messages['DREP']?.firstFrame });
    expect([conv?.a.qpn, conv?.b.qpn]).toEqual([qa.qpNum, qb.qpNum]);
    expect(a.violationCount).toBe(0);
    const doc = analysisDocument(a, 'sim');
    expect(doc.summary).toMatchObject({ cmConnections: 1, cmStates: { disconnected: 1 } });
    expect(JSON.parse(JSON.stringify(doc)).cmConnections[0].state).toBe('disconnected');
    expect(textReport(doc)).toMatch(
      /RDMA CM connections:\n {2}#1 RC 198\.18\.0\.1 comm 0x[0-9a-f]{8} QPN 0x[0-9a-f]{6} PSN \d+ → 198\.18\.0\.2 .*svc 0x0000000001061c06 \(TCP port 7174\): disconnected, conversation #\d+\n {6}REQ→REP .*; REP→RTU .*; REP→first packet .*; established by the .*; DREQ→DREP .* \(DREQ by the active side\); REQ×1 REP×1 RTU×1 DREQ×1 DREP×1\n/,
    );
  });

  test('the same QPs connected again after TimeWait: a second CM connection and a second conversation, with the new start PSNs', () => {
    const r = run();
    connectSendDisconnect(r);
    connectSendDisconnect(r);
    const a = analyzeCapture(r.caps.wireSent());
    expect(a.cmConnections.map((c) => c.state)).toEqual(['disconnected', 'disconnected']);
    const [c1, c2] = a.cmConnections as [CmConnection, CmConnection];
    expect(c1.active.qpn).toBe(c2.active.qpn);
    expect(c1.passive.qpn).toBe(c2.passive.qpn);
    expect(c1.active.startPsn).not.toBe(c2.active.startPsn);
    expect(c2.conversation).not.toBe(c1.conversation);
    const convs = a.conversations.filter((x) => x.type === 'RC');
    expect(convs.map((x) => [x.id, x.cmConnection])).toEqual([
      [c1.conversation, c1.id],
      [c2.conversation, c2.id],
    ]);
    // Each conversation carries its own connection's SEND and nothing of the other.
    expect(a.messages.filter((m) => m.op === 'SEND' && m.opcode.startsWith('RC_')).map((m) => m.conversation)).toEqual([c1.conversation, c2.conversation]);
    expect(a.violationCount).toBe(0);
  });

  test('the first REQ and the first REP lost (fault injector): the REQ sent 3 times, the REP 3 times (its retry and the answer to the duplicate REQ), established anyway', () => {
    const r = run({ faults: { aToB: dropMad('REQ', 'a->b'), bToA: dropMad('REP', 'b->a') } });
    connectSendDisconnect(r);
    // The wire as sent holds every transmission, the dropped ones included.
    expect(r.caps.sim.link.faults.aToB.counters.dropped + r.caps.sim.link.faults.bToA.counters.dropped).toBe(2);
    const c = only(analyzeCapture(r.caps.wireSent()));
    expect(c.retries).toEqual({ req: 2, rep: 2, dreq: 0, sidrReq: 0 });
    expect(c.messages['REQ']?.count).toBe(3);
    expect(c.messages['REP']?.count).toBe(3);
    expect(c.state).toBe(CmConnectionState.DISCONNECTED);
    expect(c.reqToRepNs).toBeGreaterThanOrEqual(responseWaitNs(18, 20));
    // At the server's host the first REQ never arrived: two REQs there, the first REP as sent.
    const b = only(analyzeCapture(r.caps.hostB()));
    expect(b.messages['REQ']?.count).toBe(2);
    expect(b.retries.req).toBe(1);
  });

  test('a REJ: connecting to a port nobody listens on is rejected with reason 8 (INVALID_SERVICE_ID)', () => {
    const r = run();
    r.client.rcm.connect({ dst: SIM_IP_B, port: PORT + 1, qp: r.client.qp }, (e) => r.client.events.push(e));
    r.caps.sim.clock.runUntilIdle(1_000_000);
    expect(r.client.events.map((e) => e.type)).toEqual(['REJECTED']);
    const c = only(analyzeCapture(r.caps.wireDelivered()));
    expect(c).toMatchObject({
      state: CmConnectionState.REJECTED,
      port: PORT + 1,
      conversation: null,
      rej: { from: 'passive', messageRejected: 'REQ', reason: 8, reasonName: 'INVALID_SERVICE_ID', reasonText: 'invalid service ID' },
    });
    expect(c.passive.commId).toBeNull(); // cm.c cm_issue_rej() for a REQ no listener takes: local ID 0
  });

  test('the RTU lost: the connection counts as established by the first data packet, REP→first packet timed', () => {
    const r = run({ faults: { aToB: dropMad('RTU', 'a->b') } });
    connectSendDisconnect(r);
    const c = only(analyzeCapture(r.caps.hostB()));
    expect(c.messages['RTU']).toBeUndefined();
    expect(c.establishedBy).toBe('firstPacket');
    expect(c.firstDataFrame).not.toBeNull();
    expect(c.repToRtuNs).toBeNull();
    expect(c.repToFirstPacketNs).toBeGreaterThan(0);
    expect(c.state).toBe(CmConnectionState.DISCONNECTED);
    expect(textReport(analysisDocument(analyzeCapture(r.caps.hostB()), 'hostB'))).toContain('(no RTU captured)');
  });

  test('a slow accept with the automatic MRA: the REQ retry is answered by an MRA of the REQ, service timeout 24', () => {
    const r = run({ acceptDelayNs: 20e9 });
    connectSendDisconnect(r);
    const c = only(analyzeCapture(r.caps.wireSent()));
    expect(c.retries.req).toBe(1);
    expect(c.mras).toEqual([expect.objectContaining({ from: 'passive', messageMraed: 'REQ', serviceTimeout: 24, serviceTimeoutNs: cmTimeNs(24) })]);
    expect(c.mras[0]?.frame).toBeGreaterThan(c.messages['REQ']?.lastFrame ?? Infinity);
    expect(c.reqToRepNs).toBeGreaterThanOrEqual(20e9);
    expect(c.state).toBe(CmConnectionState.DISCONNECTED);
  });

  test('the capture starts after the REQ and REP: the connection is incomplete, its IDs from the RTU and what follows', () => {
    const r = run();
    connectSendDisconnect(r);
    const recs = [...iterateCapture(r.caps.wireSent())];
    const w = new PcapWriter({ linkType: LinkType.Ethernet, nanosecond: true });
    for (const x of recs.slice(2)) w.add(x.data, x.timestampNs);
    const c = only(analyzeCapture(w.toBytes()));
    expect(c.state).toBe(CmConnectionState.INCOMPLETE);
    expect(c.rolesKnown).toBe(true); // the RTU comes from the active side
    expect(c.active.ip).toBe(SIM_IP_A);
    expect(c.messages['DREP']?.count).toBe(1);
    expect(c.dreqToDrepNs).not.toBeNull();
  });

  test('captures/rxe/rping-req-retries.pcap: five REQs (4 retries), then rxe gives up with REJ reason 4: timed out', () => {
    const c = only(analyzeCapture(readFileSync(join(ROOT, 'captures/rxe/rping-req-retries.pcap'))));
    expect(c).toMatchObject({
      transport: 'RC',
      active: { ip: '198.18.0.1', qpn: 0x11, startPsn: 0x4fcd33 },
      port: 7174,
      portSpace: 'TCP',
      ipCm: { srcAddr: '198.18.0.1', dstAddr: '198.18.0.2', srcPort: 42777 },
      retries: { req: 4 },
      rej: { from: 'active', reason: 4, reasonName: 'TIMEOUT' },
      state: CmConnectionState.TIMED_OUT,
    });
  });

  test('captures/rxe/udaddy-sidr-req.pcap: six SIDR_REQs never answered; captures/cm-exchanges.pcap: MRA, REJ 28 over IPv6, SIDR resolved', () => {
    const u = only(analyzeCapture(readFileSync(join(ROOT, 'captures/rxe/udaddy-sidr-req.pcap'))));
    expect(u).toMatchObject({ transport: 'SIDR', portSpace: 'UDP', port: 7174, retries: { sidrReq: 5 }, state: CmConnectionState.UNANSWERED });
    const a = analyzeCapture(readFileSync(join(ROOT, 'captures/cm-exchanges.pcap')));
    expect(a.cmConnections.map((c) => [c.transport, c.state])).toEqual([
      ['RC', 'disconnected'],
      ['RC', 'rejected'],
      ['SIDR', 'resolved'],
    ]);
    const [c1, c2, c3] = a.cmConnections as [CmConnection, CmConnection, CmConnection];
    expect(c1).toMatchObject({
      active: { qpn: 0x11, startPsn: 0x2f1a00 },
      passive: { qpn: 0x12, startPsn: 0x7a1b2c },
      port: 20000,
      mras: [{ from: 'passive', messageMraed: 'REQ', serviceTimeout: 23 }],
    });
    expect(c1.messages['LAP']?.count).toBe(1);
    expect(c2).toMatchObject({
      active: { ip: 'fd00::1' },
      passive: { ip: 'fd00::2', commId: 0x51e2d3c4 },
      rej: { reason: 28, reasonName: 'CONSUMER_DEFINED', reasonText: 'consumer reject' },
    });
    expect(c3).toMatchObject({ sidr: { status: 0, qpn: 0x13, qkey: 0x01234567 }, passive: { qpn: 0x13 } });
  });
});
