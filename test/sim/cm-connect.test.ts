/**
 * Two stacks over the in-memory link connect through the CM (REQ, REP, RTU over QP 1), exchange RC
 * data on the QPs the CM moved to RTS, and disconnect (DREQ, DREP, TimeWait); with the CM's own
 * MADs dropped (REQ and REP resent after the response timeout, a lost RTU covered by the first
 * data packet), and a connection to a port nobody listens on rejected with the reason from the
 * wire. Everything on the virtual clock with fixed seeds.
 */
import { createSimPair, SIM_IP_B, SIM_MAC_A, SIM_MAC_B, type SimPair } from '../../apps/sim/sim-pair';
import { VirtualClock } from '../../base/clock';
import { createMemoryLink } from '../../nic-driver/memory-link';
import { Device } from '../../stack/device';
import { AutoMra, RDMA_UDP_QKEY, RdmaCm, type RdmaCmEvent, type RdmaCmId } from '../../stack/cm/rdma-cm';
import { PortSpace } from '../../packets/cm/service-id';
import { connectQp } from '../../stack/connect';
import { CmState } from '../../stack/cm/cm-state';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcStatus } from '../../stack/work-completion';
import type { QueuePair } from '../../stack/queue-pair';
import type { MemoryRegion } from '../../stack/memory-region';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { FaultConfig } from '../../nic-driver/faults';
import { RejReason } from '../../packets/cm/rej';
import { responseWaitNs } from '../../stack/cm/timers';

const PORT = 7174;

interface Side {
  rcm: RdmaCm;
  qp: QueuePair;
  cq: CompletionQueue;
  mr: MemoryRegion;
  events: RdmaCmEvent[];
}

function side(dev: Device, seed: number): Side {
  const pd = dev.allocPd();
  const cq = dev.createCq(1024);
  const qp = dev.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
  const mr = dev.regMr(pd, new Uint8Array(1 << 16), Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ);
  return { rcm: new RdmaCm(dev, { seed }), qp, cq, mr, events: [] };
}

function setup(faults?: { aToB?: FaultConfig; bToA?: FaultConfig }) {
  const sim: SimPair = createSimPair({ seed: 7, ...(faults !== undefined ? { faults } : {}) });
  const client = side(sim.a, 101);
  const server = side(sim.b, 202);
  let serverId: RdmaCmId | null = null;
  server.rcm.listen(PORT, (e) => {
    server.events.push(e);
    if (e.type === 'CONNECT_REQUEST') {
      serverId = e.id;
      e.id.accept(server.qp, { privateData: new TextEncoder().encode('welcome') });
    }
  });
  const types = (s: Side) => s.events.map((e) => e.type);
  return { sim, client, server, types, serverId: () => serverId };
}

const names = (evs: RdmaCmEvent[]) => evs.map((e) => e.type);

describe('RDMA CM between two stacks on the memory link', () => {
  test('connect, RC SEND and RDMA WRITE both ways on the negotiated QPs, disconnect, TimeWait', () => {
    const { sim, client, server, serverId } = setup();
    const id = client.rcm.connect({ dst: SIM_IP_B, port: PORT, qp: client.qp, param: { privateData: new TextEncoder().encode('hello') } }, (e) =>
      client.events.push(e),
    );
    sim.clock.runWhile(() => client.events.length === 0 || server.events.length < 2, 1_000_000);
    expect(names(client.events)).toEqual(['ESTABLISHED']);
    expect(names(server.events)).toEqual(['CONNECT_REQUEST', 'ESTABLISHED']);
    const req = server.events[0] as Extract<RdmaCmEvent, { type: 'CONNECT_REQUEST' }>;
    expect(new TextDecoder().decode(req.privateData.subarray(0, 5))).toBe('hello');
    expect(req.id.peerAddr).toBe('198.18.0.1');
    expect(req.id.peerPort).toBe(id.localPort);
    expect(req.id.localPort).toBe(PORT);
    const est = client.events[0] as Extract<RdmaCmEvent, { type: 'ESTABLISHED' }>;
    expect(new TextDecoder().decode(est.privateData.subarray(0, 7))).toBe('welcome');
    // The QPs point at each other with the PSNs the REQ and REP carried.
    expect(client.qp.attr.destQpNum).toBe(server.qp.qpNum);
    expect(server.qp.attr.destQpNum).toBe(client.qp.qpNum);
    expect(client.qp.attr.sqPsn).toBe(server.qp.attr.rqPsn);
    expect(server.qp.attr.sqPsn).toBe(client.qp.attr.rqPsn);
    // As the kernel's ib_cm reads them (rxe NAKs anything else): a message's Starting PSN is what its sender's receive queue expects.
    expect(client.qp.attr.rqPsn).toBe(id.cmId.conn.localPsn);
    expect(client.qp.attr.timeout).toBe(19);
    expect(client.qp.attr.maxRdAtomic).toBe(1);
    expect(id.cmState).toBe(CmState.ESTABLISHED);
    expect(serverId()?.cmState).toBe(CmState.ESTABLISHED);

    // RC data on the connection.
    client.mr.buffer.set(new TextEncoder().encode('ping over a CM connection'), 0);
    server.qp.postRecv({ wrId: 1, sgList: [server.mr.sge(0, 1024)] });
    client.qp.postSend({ wrId: 2, opcode: WrOpcode.SEND, sgList: [client.mr.sge(0, 25)], sendFlags: SendFlags.SIGNALED });
    server.mr.buffer.set(new TextEncoder().encode('pong'), 4096);
    server.qp.postSend({
      wrId: 3,
      opcode: WrOpcode.RDMA_WRITE,
      sgList: [server.mr.sge(4096, 4)],
      rdma: { remoteAddr: client.mr.addr(8192), rkey: client.mr.rkey },
      sendFlags: SendFlags.SIGNALED,
    });
    sim.clock.runWhile(() => client.cq.size < 1 || server.cq.size < 2, 1_000_000);
    expect(server.cq.poll().map((w) => [w.wrId, w.status])).toEqual(
      expect.arrayContaining([
        [1n, WcStatus.SUCCESS],
        [3n, WcStatus.SUCCESS],
      ]),
    );
    expect(client.cq.poll().map((w) => [w.wrId, w.status])).toEqual([[2n, WcStatus.SUCCESS]]);
    expect(new TextDecoder().decode(server.mr.buffer.subarray(0, 25))).toBe('ping over a CM connection');
    expect(new TextDecoder().decode(client.mr.buffer.subarray(8192, 8196))).toBe('pong');

    id.disconnect();
    sim.clock.runWhile(() => !(client.events.some((e) => e.type === 'DISCONNECTED') && server.events.some((e) => e.type === 'DISCONNECTED')), 1_000_000);
    expect(id.cmState).toBe(CmState.TIMEWAIT);
    expect(serverId()?.cmState).toBe(CmState.TIMEWAIT);
    sim.clock.runUntilIdle(1_000_000);
    expect(names(client.events)).toEqual(['ESTABLISHED', 'DISCONNECTED', 'TIMEWAIT_EXIT']);
    expect(names(server.events)).toEqual(['CONNECT_REQUEST', 'ESTABLISHED', 'DISCONNECTED', 'TIMEWAIT_EXIT']);
    expect(client.rcm.cm.counters.cm_tx_msgs).toMatchObject({ req: 1, rtu: 1, dreq: 1 });
    expect(server.rcm.cm.counters.cm_tx_msgs).toMatchObject({ rep: 1, drep: 1 });
    expect(client.rcm.cm.counters.cm_tx_retries.req).toBe(0);
    // The IDs outlive TimeWait until their owners destroy them (rdma_destroy_id).
    expect(client.rcm.cm.ids.size + server.rcm.cm.ids.size).toBe(2);
    id.destroy();
    serverId()?.destroy();
    expect(client.rcm.cm.ids.size + server.rcm.cm.ids.size).toBe(0);
  });

  test('the REQ and then the REP are lost: each is resent after the response timeout and the connection is made', () => {
    const drop1 = (direction: 'a->b' | 'b->a'): FaultConfig => ({ rules: [{ action: 'drop', match: { qpn: 1, psn: 0, direction }, count: 1 }] });
    const { sim, client, server } = setup({ aToB: drop1('a->b'), bToA: drop1('b->a') });
    const t0 = sim.clock.now();
    client.rcm.connect({ dst: SIM_IP_B, port: PORT, qp: client.qp }, (e) => client.events.push(e));
    sim.clock.runWhile(() => client.events.length === 0, 1_000_000);
    expect(names(client.events)).toEqual(['ESTABLISHED']);
    // The first REQ is lost: resent after one response wait. The REP to it is lost: the client's REQ timer and
    // the server's REP timer both run out one wait later; the duplicate REQ finds the server in REP_SENT and
    // gets the REP again, and the REP retry goes too.
    const wait = responseWaitNs(18, 20);
    expect(sim.clock.now() - t0).toBeGreaterThanOrEqual(2 * wait);
    expect(client.rcm.cm.counters.cm_tx_retries.req).toBe(2);
    expect(server.rcm.cm.counters.cm_rx_duplicates.req).toBe(1);
    expect(server.rcm.cm.counters.cm_tx_retries.rep).toBe(1);
    expect(server.rcm.cm.counters.cm_tx_msgs.rep).toBe(3);
    expect(sim.link.faults.aToB.counters.dropped + sim.link.faults.bToA.counters.dropped).toBe(2);
    sim.clock.runWhile(() => server.events.length < 2, 1_000_000);
    expect(names(server.events)).toEqual(['CONNECT_REQUEST', 'ESTABLISHED']);
    // The extra REP finds the client established: cm_dup_rep_handler() sends the RTU again.
    sim.clock.runUntil(sim.clock.now() + 1_000_000);
    expect(client.rcm.cm.counters.cm_rx_duplicates.rep).toBe(1);
    expect(client.rcm.cm.counters.cm_tx_msgs.rtu).toBe(2);
  });

  test('the RTU is lost: the first data packet establishes the passive side; the REP is not resent', () => {
    const dropRtu: FaultConfig = { rules: [{ action: 'drop', match: { qpn: 1, psn: 1, direction: 'a->b' }, count: 1 }] };
    const { sim, client, server } = setup({ aToB: dropRtu });
    client.rcm.connect({ dst: SIM_IP_B, port: PORT, qp: client.qp }, (e) => client.events.push(e));
    sim.clock.runWhile(() => client.events.length === 0, 1_000_000);
    sim.clock.runUntil(sim.clock.now() + 1_000_000);
    expect(names(server.events)).toEqual(['CONNECT_REQUEST']); // no RTU
    server.qp.postRecv({ wrId: 1, sgList: [server.mr.sge(0, 64)] });
    client.qp.postSend({ wrId: 2, opcode: WrOpcode.SEND, sgList: [client.mr.sge(0, 8)], sendFlags: SendFlags.SIGNALED });
    sim.clock.runUntil(sim.clock.now() + 1_000_000);
    expect(names(server.events)).toEqual(['CONNECT_REQUEST', 'ESTABLISHED']);
    expect(server.cq.poll().map((w) => w.status)).toEqual([WcStatus.SUCCESS]);
    sim.clock.runUntil(sim.clock.now() + 2 * responseWaitNs(18, 20));
    expect(server.rcm.cm.counters.cm_tx_msgs.rep).toBe(1);
    expect(sim.link.faults.aToB.counters.dropped).toBe(1);
  });

  test.each([0.02, 0.3])('%p loss on both directions (CM MADs and data alike): connections are made and torn down anyway (several seeds)', (drop) => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const sim = createSimPair({ seed, faults: { aToB: { drop }, bToA: { drop } } });
      const client = side(sim.a, seed);
      const server = side(sim.b, seed + 100);
      server.rcm.listen(PORT, (e) => {
        server.events.push(e);
        if (e.type === 'CONNECT_REQUEST') e.id.accept(server.qp);
      });
      const id = client.rcm.connect({ dst: SIM_IP_B, port: PORT, qp: client.qp }, (e) => client.events.push(e));
      sim.clock.runWhile(() => client.events.length === 0, 10_000_000);
      expect(names(client.events)).toEqual(['ESTABLISHED']);
      id.disconnect();
      sim.clock.runUntilIdle(10_000_000);
      expect(names(client.events)).toEqual(['ESTABLISHED', 'DISCONNECTED', 'TIMEWAIT_EXIT']);
      expect(names(server.events).filter((t) => t !== 'ESTABLISHED')).toEqual(['CONNECT_REQUEST', 'DISCONNECTED', 'TIMEWAIT_EXIT']);
    }
  });

  test.each([
    // The kernel's rdma_cm: the REQ retry after the first response wait is answered with an MRA (service timeout 24,
    // 68.7 s), so the client waits for the slow accept instead of resending every 6.44 s.
    [AutoMra.DELAYED, 1, 1],
    // The MRA goes out with the connect request: the client never resends.
    [AutoMra.IMMEDIATE, 0, 1],
    // No MRA: the client resends its REQ each response wait until the REP comes.
    [AutoMra.OFF, 3, 0],
  ] as const)('a server slow to accept (20 s), automatic MRA %s: %p REQ retries, %p MRA; the connection is made', (mode, retries, mras) => {
    const sim = createSimPair({ seed: 7 });
    const client = side(sim.a, 101);
    const pd = sim.b.allocPd();
    const cq = sim.b.createCq(64);
    const qp = sim.b.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const server = new RdmaCm(sim.b, { seed: 202, autoMra: mode });
    const serverEvents: RdmaCmEvent[] = [];
    server.listen(PORT, (e) => {
      serverEvents.push(e);
      if (e.type === 'CONNECT_REQUEST') sim.clock.schedule(sim.clock.now() + 20e9, () => e.id.accept(qp));
    });
    const t0 = sim.clock.now();
    client.rcm.connect({ dst: SIM_IP_B, port: PORT, qp: client.qp }, (e) => client.events.push(e));
    sim.clock.runWhile(() => client.events.length === 0, 1_000_000);
    expect(names(client.events)).toEqual(['ESTABLISHED']);
    expect(sim.clock.now() - t0).toBeGreaterThanOrEqual(20e9);
    expect(client.rcm.cm.counters.cm_tx_retries.req).toBe(retries);
    expect(client.rcm.cm.counters.cm_rx_msgs.mra).toBe(mras);
    expect(server.cm.counters.cm_tx_msgs.mra).toBe(mras);
    expect(server.cm.counters.cm_rx_duplicates.req).toBe(mode === AutoMra.IMMEDIATE ? 0 : retries);
    sim.clock.runWhile(() => serverEvents.length < 2, 1_000_000);
    expect(names(serverEvents)).toEqual(['CONNECT_REQUEST', 'ESTABLISHED']);
  });

  test('the CM trace names every state change of both sides', () => {
    const { sim, client, server } = setup();
    const trace: string[] = [];
    client.rcm.cm.tracer = (t) => trace.push(`a ${t.from}->${t.to} (${t.why})`);
    server.rcm.cm.tracer = (t) => trace.push(`b ${t.from}->${t.to} (${t.why})`);
    const id = client.rcm.connect({ dst: SIM_IP_B, port: PORT, qp: client.qp }, (e) => client.events.push(e));
    sim.clock.runWhile(() => server.events.length < 2, 1_000_000);
    id.disconnect();
    sim.clock.runUntilIdle(1_000_000);
    expect(trace).toEqual([
      'a IDLE->REQ_SENT (REQ sent)',
      'b IDLE->REQ_RCVD (REQ received)',
      'b REQ_RCVD->REP_SENT (REP sent)',
      'a REQ_SENT->REP_RCVD (REP received)',
      // cma.c on IB_CM_REP_RECEIVED: the MRA for the REP is prepared (sent only to answer a duplicate REP), then the RTU.
      'a REP_RCVD->MRA_REP_SENT (MRA prepared (sent on a duplicate))',
      'a MRA_REP_SENT->ESTABLISHED (RTU sent)',
      'b REP_SENT->ESTABLISHED (RTU received)',
      'a ESTABLISHED->DREQ_SENT (DREQ sent)',
      'b ESTABLISHED->DREQ_RCVD (DREQ received)',
      'b DREQ_RCVD->TIMEWAIT (DREP sent)',
      'a DREQ_SENT->TIMEWAIT (DREP received)',
      'b TIMEWAIT->IDLE (TimeWait over)',
      'a TIMEWAIT->IDLE (TimeWait over)',
    ]);
  });

  test('no listener on the port: REJECTED with reason 8 (invalid service ID) from the wire, the QP in ERR', () => {
    const { sim, client } = setup();
    client.rcm.connect({ dst: SIM_IP_B, port: PORT + 1, qp: client.qp }, (e) => client.events.push(e));
    sim.clock.runUntilIdle(1_000_000);
    expect(client.events).toMatchObject([{ type: 'REJECTED', reason: RejReason.INVALID_SERVICE_ID, reasonText: 'invalid service ID' }]);
    expect(client.qp.state).toBe(6);
  });

  test('a peer that never answers: UNREACHABLE after 1 + max CM retries REQs; an address without a neighbour: UNREACHABLE at once', () => {
    const { sim, client, server } = setup();
    server.rcm.close(); // no QP 1 on the server: the REQs go nowhere
    const t0 = sim.clock.now();
    client.rcm.connect({ dst: SIM_IP_B, port: PORT, qp: client.qp, maxCmRetries: 3 }, (e) => client.events.push(e));
    sim.clock.runUntilIdle(1_000_000);
    expect(client.events).toMatchObject([{ type: 'UNREACHABLE' }]);
    expect(client.rcm.cm.counters.cm_tx_msgs.req).toBe(4);
    expect(sim.clock.now() - t0).toBe(4 * responseWaitNs(18, 20));
    const events: RdmaCmEvent[] = [];
    client.rcm.connect({ dst: '198.18.7.7', port: PORT, qp: client.qp }, (e) => events.push(e));
    sim.clock.runUntilIdle(1_000_000);
    expect(events).toMatchObject([{ type: 'UNREACHABLE' }]);
  });
});

describe('SIDR (UDP port space) between two stacks', () => {
  function udSide(dev: Device, seed: number) {
    const pd = dev.allocPd();
    const cq = dev.createCq(256);
    const qp = dev.createQp(pd, { qpType: QpType.UD, sendCq: cq, recvCq: cq });
    const mr = dev.regMr(pd, new Uint8Array(4096), Access.LOCAL_WRITE);
    return { rcm: new RdmaCm(dev, { seed }), qp, cq, mr, events: [] as RdmaCmEvent[] };
  }

  test('SIDR_REQ (lost once) -> SIDR_REP with the QPN and Q_Key; a UD datagram reaches the resolved QP', () => {
    const sim = createSimPair({ seed: 3, faults: { aToB: { rules: [{ action: 'drop', match: { qpn: 1, psn: 0 }, count: 1 }] } } });
    const client = udSide(sim.a, 1);
    const server = udSide(sim.b, 2);
    server.rcm.listen(
      PORT,
      (e) => {
        server.events.push(e);
        if (e.type === 'CONNECT_REQUEST') e.id.accept(server.qp);
      },
      PortSpace.UDP,
    );
    client.rcm.resolveUd({ dst: SIM_IP_B, port: PORT, privateData: new Uint8Array([1, 2]) }, (e) => client.events.push(e));
    sim.clock.runWhile(() => client.events.length === 0, 1_000_000);
    const est = client.events[0] as Extract<RdmaCmEvent, { type: 'ESTABLISHED' }>;
    expect(est.type).toBe('ESTABLISHED');
    expect(est.ud).toMatchObject({ qpn: server.qp.qpNum, qkey: RDMA_UDP_QKEY });
    expect(client.rcm.cm.counters.cm_tx_retries.sidr_req).toBe(1);
    const req = server.events[0] as Extract<RdmaCmEvent, { type: 'CONNECT_REQUEST' }>;
    expect([...req.privateData.subarray(0, 2)]).toEqual([1, 2]);
    // Send a datagram to what SIDR resolved.
    connectQp(
      client.qp,
      { qpn: client.qp.qpNum, psn: 0, gid: new Uint8Array(16), mac: 0 },
      { qpn: 0, psn: 0, gid: new Uint8Array(16), mac: 0 },
      { qkey: RDMA_UDP_QKEY },
    );
    server.qp.postRecv({ wrId: 1, sgList: [server.mr.sge(0, 1024)] });
    client.mr.buffer.set([0xca, 0xfe], 0);
    const ud = est.ud as NonNullable<typeof est.ud>;
    client.qp.postSend({
      wrId: 2,
      opcode: WrOpcode.SEND,
      sgList: [client.mr.sge(0, 2)],
      sendFlags: SendFlags.SIGNALED,
      ud: { ah: ud.ah, remoteQpn: ud.qpn, remoteQkey: ud.qkey },
    });
    sim.clock.runWhile(() => server.cq.size === 0, 1_000_000);
    expect(server.cq.poll().map((w) => [w.status, w.byteLen])).toEqual([[WcStatus.SUCCESS, 42]]);
    expect([...server.mr.buffer.subarray(40, 42)]).toEqual([0xca, 0xfe]);
  });

  test('nobody listens on the UDP port: UNREACHABLE with the SIDR_REP status (1, service ID not supported)', () => {
    const sim = createSimPair({ seed: 3 });
    const client = udSide(sim.a, 1);
    udSide(sim.b, 2);
    client.rcm.resolveUd({ dst: SIM_IP_B, port: PORT }, (e) => client.events.push(e));
    sim.clock.runUntilIdle(1_000_000);
    expect(client.events).toMatchObject([{ type: 'UNREACHABLE', why: 'SIDR_REP status 1 (service ID not supported)' }]);
  });
});

describe('over IPv6', () => {
  test('connect and disconnect between two IPv6 addresses: the GIDs are the addresses, the IP CM header says IP version 6', () => {
    const clock = new VirtualClock();
    const link = createMemoryLink({
      clock,
      seed: 1,
      mtu: 4200,
      macA: SIM_MAC_A,
      macB: SIM_MAC_B,
      faults: { aToB: { delayNs: 2000 }, bToA: { delayNs: 2000 } },
    });
    const A6 = '2001:db8::1';
    const B6 = '2001:db8::2';
    const a = new Device({ driver: link.a, clock, ipv6: [A6], neighbors: { [B6]: SIM_MAC_B }, seed: 1 });
    const b = new Device({ driver: link.b, clock, ipv6: [B6], neighbors: { [A6]: SIM_MAC_A }, seed: 2 });
    const client = side(a, 1);
    const server = side(b, 2);
    server.rcm.listen(PORT, (e) => {
      server.events.push(e);
      if (e.type === 'CONNECT_REQUEST') e.id.accept(server.qp);
    });
    const id = client.rcm.connect({ dst: B6, port: PORT, qp: client.qp }, (e) => client.events.push(e));
    clock.runWhile(() => server.events.length < 2, 1_000_000);
    expect(names(client.events)).toEqual(['ESTABLISHED']);
    const req = server.events[0] as Extract<RdmaCmEvent, { type: 'CONNECT_REQUEST' }>;
    expect([req.id.peerAddr, req.id.localAddr]).toEqual([A6, B6]);
    expect(id.localAddr).toBe(A6);
    id.disconnect();
    clock.runUntilIdle(1_000_000);
    expect(names(server.events)).toEqual(['CONNECT_REQUEST', 'ESTABLISHED', 'DISCONNECTED', 'TIMEWAIT_EXIT']);
  });
});
