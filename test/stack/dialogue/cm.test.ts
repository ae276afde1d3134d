/**
 * Scripted dialogues for the CM state machine (IBTA vol. 1 chapter 12 as the kernel's cm.c
 * implements it): the test plays the remote CM at 198.18.0.2 by hand, MAD by MAD, on QP 1 of one
 * device, and reads exactly the MADs the stack sends back. One rule per test: the REQ rxe sends,
 * a duplicate REQ, a REP lost then resent, MRA, REJ, a stale connection, DREQ crossing DREQ,
 * TimeWait.
 */
import { AllocationOrder } from '../../../stack/allocation-order';
import { scriptedPeer, op, PEER_GID, type ScriptedPeer } from '../../support/scripted-peer';
import { AutoMra, RdmaCm, type RdmaCmEvent, type RdmaCmId } from '../../../stack/cm/rdma-cm';
import { CmState } from '../../../stack/cm/cm-state';
import { cmTimeNs, responseWaitNs } from '../../../stack/cm/timers';
import { buildCmMad, decodeMad } from '../../../packets/mad-payload';
import { GSI_QKEY } from '../../../packets/mad';
import type { CmMessage } from '../../../packets/cm/message';
import type { CmReq } from '../../../packets/cm/req';
import { RejMessage, RejReason } from '../../../packets/cm/rej';
import { MraMessage } from '../../../packets/cm/mra';
import { emitIpCmPrivateData, ipCmAddressFromString } from '../../../packets/cm/ip-private-data';
import { rdmaServiceId, PortSpace } from '../../../packets/cm/service-id';
import { ipv6FromString } from '../../../packets/bytes';
import { QpState } from '../../../stack/qp-type-and-state';
import { RXE_REQ, RXE_SIDR_REQ } from '../../packets/cm-fixtures';

const PORT = 7174;
const PEER_GUID = 0x020000fffe000002n;
const PEER_COMM = 0x0abc0001;
const PEER_QPN = 0x99;
const PEER_PSN = 0x123456;
/** The wait for an answer with rdma_cm's defaults (packet life time 18, response timeout 20). */
const WAIT = responseWaitNs(18, 20);

interface CmSent {
  name: string;
  tid: bigint;
  fields: Record<string, unknown>;
  mad: Uint8Array;
}

function rig(o: { linkMtu?: number; autoMra?: AutoMra } = {}) {
  // rxe's order, so the device's first QP is 0x11 as rxe's (the REQ is compared with rxe's below).
  const h: ScriptedPeer = scriptedPeer({ allocation: AllocationOrder.SEQUENTIAL, ...(o.linkMtu !== undefined ? { linkMtu: o.linkMtu } : {}) });
  const rcm = new RdmaCm(h.dev, { seed: 5, ...(o.autoMra !== undefined ? { autoMra: o.autoMra } : {}) });
  const events: RdmaCmEvent[] = [];
  let psn = 0;
  /** The peer's CM sends `m` (a MAD in a UD SEND ONLY to QP 1). */
  const send = (m: CmMessage, tid = 0x77n): void => {
    h.inject({
      bth: { opcode: op('UD_SEND_ONLY'), psn: psn++, destQp: 1 },
      deth: { qkey: GSI_QKEY, srcQp: 1 },
      payload: buildCmMad(m, { transactionId: tid }),
    });
  };
  /** The CM MADs the stack sent since the last call. */
  const sent = (): CmSent[] =>
    h.sent().map((s) => {
      expect([s.op, s.destQp, s.deth]).toEqual(['UD_SEND_ONLY', 1, { qkey: GSI_QKEY, srcQp: 1 }]);
      const d = decodeMad(new DataView(s.payload.buffer, s.payload.byteOffset, s.payload.length), 0, s.payload.length);
      if (d.cm === null) throw new Error('not a CM MAD');
      return { name: d.cm.name, tid: d.header.transactionId, fields: d.cm.fields as unknown as Record<string, unknown>, mad: s.payload };
    });
  const names = (): string[] => sent().map((s) => s.name);
  return { h, rcm, events, send, sent, names };
}

/** A REQ as rxe sends it (captures/rxe), from the peer to us, for `PORT`. */
function peerReq(over: Partial<CmReq> = {}): CmMessage {
  const d = decodeMad(new DataView(RXE_REQ.buffer, RXE_REQ.byteOffset, RXE_REQ.length), 0, RXE_REQ.length);
  if (d.cm?.name !== 'REQ') throw new Error('fixture is not a REQ');
  const pd = new Uint8Array(92);
  emitIpCmPrivateData(
    {
      majorVersion: 0,
      minorVersion: 0,
      ipVersion: 4,
      reserved: 0,
      srcPort: 40000,
      srcAddr: ipCmAddressFromString('198.18.0.2').addr,
      dstAddr: ipCmAddressFromString('198.18.0.1').addr,
    },
    new DataView(pd.buffer),
    0,
  );
  pd.set([1, 2, 3], 36);
  const fields: CmReq = {
    ...d.cm.fields,
    localCommId: PEER_COMM,
    serviceId: rdmaServiceId(PortSpace.TCP, PORT),
    localCaGuid: PEER_GUID,
    localQpn: PEER_QPN,
    startingPsn: PEER_PSN,
    primaryLocalGid: ipv6FromString(PEER_GID),
    primaryRemoteGid: ipv6FromString('::ffff:198.18.0.1'),
    privateData: pd,
    ...over,
  };
  return { name: 'REQ', fields };
}

/** The passive side: listening on PORT; accepts at once unless `hold`. */
function passive(o: { hold?: boolean; autoMra?: AutoMra } = {}) {
  const r = rig(o.autoMra !== undefined ? { autoMra: o.autoMra } : {});
  let conn: RdmaCmId | null = null;
  r.rcm.listen(PORT, (e) => {
    r.events.push(e);
    if (e.type === 'CONNECT_REQUEST') {
      conn = e.id;
      if (o.hold !== true) e.id.accept(r.h.qp, { privateData: new Uint8Array([9, 9]) });
    }
  });
  return { ...r, conn: () => conn as unknown as RdmaCmId };
}

/** The active side: connect to the peer from port 42777 (the rxe capture's). */
function active(o: { linkMtu?: number; maxCmRetries?: number } = {}) {
  const r = rig(o);
  const id = r.rcm.connect(
    { dst: '198.18.0.2', port: PORT, qp: r.h.qp, srcPort: 42777, ...(o.maxCmRetries !== undefined ? { maxCmRetries: o.maxCmRetries } : {}) },
    (e) => r.events.push(e),
  );
  return { ...r, id };
}

function rep(to: CmSent, over: Record<string, unknown> = {}): CmMessage {
  return {
    name: 'REP',
    fields: {
      localCommId: PEER_COMM,
      remoteCommId: to.fields['localCommId'] as number,
      localQkey: 0,
      localQpn: PEER_QPN,
      localEecn: 0,
      startingPsn: PEER_PSN,
      responderResources: 1,
      initiatorDepth: 1,
      targetAckDelay: 15,
      failoverAccepted: 0,
      endToEndFlowControl: false,
      rnrRetryCount: 7,
      srq: false,
      localCaGuid: PEER_GUID,
      privateData: new Uint8Array([4, 5]),
      ...over,
    },
  };
}

/** Active side, connected: REQ out, REP in, RTU out. */
function established() {
  const a = active();
  const [req] = a.sent();
  a.send(rep(req as CmSent), (req as CmSent).tid);
  const rtu = a.sent();
  expect(rtu.map((s) => s.name)).toEqual(['RTU']);
  return { ...a, req: req as CmSent };
}

const dreq = (ourId: number, ourQpn: number): CmMessage => ({
  name: 'DREQ',
  fields: { localCommId: PEER_COMM, remoteCommId: ourId, remoteQpnEecn: ourQpn, privateData: new Uint8Array(0) },
});
const drep = (ourId: number): CmMessage => ({ name: 'DREP', fields: { localCommId: PEER_COMM, remoteCommId: ourId, privateData: new Uint8Array(0) } });

describe('active side', () => {
  test('the REQ carries what rxe puts in its REQ (captures/rxe): the same fields but for IDs, QPN, PSN and GUID', () => {
    const a = active({ linkMtu: 1500 });
    const ours = a.sent();
    expect(ours.map((s) => s.name)).toEqual(['REQ']);
    const theirs = decodeMad(new DataView(RXE_REQ.buffer, RXE_REQ.byteOffset, RXE_REQ.length), 0, RXE_REQ.length).cm?.fields as unknown as Record<
      string,
      unknown
    >;
    const differ = Object.keys(theirs).filter(
      (k) =>
        JSON.stringify(theirs[k], (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? [...v] : v)) !==
        JSON.stringify((ours[0] as CmSent).fields[k], (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? [...v] : v)),
    );
    // rxe's QP was 0x11 too (both are a device's first QP), so the QPN does not differ either.
    expect(differ.sort()).toEqual(['localCaGuid', 'localCommId', 'startingPsn']);
    expect((ours[0] as CmSent).fields['localQpn']).toBe(a.h.qp.qpNum);
    expect((ours[0] as CmSent).fields['localCaGuid']).toBe(a.rcm.cm.caGuid);
    expect(a.h.qp.state).toBe(QpState.INIT);
  });

  test('a REQ not answered is resent, the same MAD, every response wait; an MRA stretches the wait to its service timeout', () => {
    const a = active();
    const [first] = a.sent();
    a.h.advance(WAIT - 1);
    expect(a.sent()).toEqual([]);
    a.h.advance(1);
    const [again] = a.sent();
    expect(again?.mad).toEqual(first?.mad);
    // MRA for the REQ, service timeout 24: the next REQ waits 4.096 us x (2^24 + 2^19) instead.
    a.send({
      name: 'MRA',
      fields: {
        localCommId: PEER_COMM,
        remoteCommId: first?.fields['localCommId'] as number,
        messageMraed: MraMessage.REQ,
        serviceTimeout: 24,
        privateData: new Uint8Array(0),
      },
    });
    expect(a.id.cmState).toBe(CmState.MRA_REQ_RCVD);
    a.h.advance(cmTimeNs(24) + cmTimeNs(19) - 1);
    expect(a.sent()).toEqual([]);
    a.h.advance(1);
    expect(a.names()).toEqual(['REQ']);
    expect(a.rcm.cm.counters.cm_tx_retries.req).toBe(2);
  });

  test('REP: the QP goes to RTR and RTS with the negotiated attributes, RTU out, ESTABLISHED; a REP resent (our RTU lost) gets the RTU again', () => {
    const a = active();
    const [req] = a.sent();
    a.send(rep(req as CmSent, { responderResources: 4, initiatorDepth: 2, rnrRetryCount: 3 }), (req as CmSent).tid);
    const [rtu] = a.sent();
    expect(rtu?.name).toBe('RTU');
    expect(rtu?.tid).toBe(req?.tid);
    expect(rtu?.fields).toMatchObject({ localCommId: req?.fields['localCommId'], remoteCommId: PEER_COMM });
    expect(a.events).toMatchObject([{ type: 'ESTABLISHED', privateData: expect.any(Uint8Array) }]);
    expect(a.id.cmState).toBe(CmState.ESTABLISHED);
    expect(a.h.qp.state).toBe(QpState.RTS);
    // A Starting PSN is what its sender's receive queue expects (ib_cm: cm_rep_handler() takes the REP's as the active side's sq_psn).
    expect(a.h.qp.attr).toMatchObject({
      destQpNum: PEER_QPN,
      rqPsn: req?.fields['startingPsn'],
      sqPsn: PEER_PSN,
      maxRdAtomic: 4,
      maxDestRdAtomic: 2,
      rnrRetry: 3,
      retryCnt: 7,
      timeout: 19,
    });
    // The peer did not hear our RTU and resends its REP.
    a.send(rep(req as CmSent, { responderResources: 4, initiatorDepth: 2, rnrRetryCount: 3 }), (req as CmSent).tid);
    const [rtu2] = a.sent();
    expect(rtu2?.mad).toEqual(rtu?.mad);
    expect(a.rcm.cm.counters.cm_rx_duplicates.rep).toBe(1);
    expect(a.events).toHaveLength(1);
  });

  test('REJ with a consumer reason: REJECTED with reason and private data, the QP in ERR, no more REQs', () => {
    const a = active();
    const [req] = a.sent();
    a.send({
      name: 'REJ',
      fields: {
        localCommId: PEER_COMM,
        remoteCommId: req?.fields['localCommId'] as number,
        messageRejected: RejMessage.REQ,
        rejectedInfoLength: 0,
        reason: RejReason.CONSUMER_DEFINED,
        ari: new Uint8Array(0),
        privateData: new Uint8Array([7, 7, 7]),
      },
    });
    expect(a.events).toMatchObject([{ type: 'REJECTED', reason: 28, reasonText: 'consumer reject' }]);
    const ev = a.events[0] as Extract<RdmaCmEvent, { type: 'REJECTED' }>;
    expect([...ev.privateData.subarray(0, 3)]).toEqual([7, 7, 7]);
    expect(a.id.cmState).toBe(CmState.IDLE);
    expect(a.h.qp.state).toBe(QpState.ERR);
    a.h.advance(2 * WAIT);
    expect(a.sent()).toEqual([]);
  });

  test('REJ "stale connection" to our REQ: TimeWait first, then TIMEWAIT_EXIT', () => {
    const a = active();
    const [req] = a.sent();
    a.send({
      name: 'REJ',
      fields: {
        localCommId: 0,
        remoteCommId: req?.fields['localCommId'] as number,
        messageRejected: RejMessage.REQ,
        rejectedInfoLength: 0,
        reason: RejReason.STALE_CONN,
        ari: new Uint8Array(0),
        privateData: new Uint8Array(0),
      },
    });
    expect(a.id.cmState).toBe(CmState.TIMEWAIT);
    a.h.advance(cmTimeNs(19));
    expect(a.events.map((e) => e.type)).toEqual(['REJECTED', 'TIMEWAIT_EXIT']);
  });

  test('destroyed while the REQ is unanswered: REJ reason timeout with our CA GUID, as rxe sends it (captures/rxe)', () => {
    const a = active();
    const [req] = a.sent();
    a.id.destroy();
    const [rej] = a.sent();
    expect(rej?.name).toBe('REJ');
    const guid = new Uint8Array(8);
    new DataView(guid.buffer).setBigUint64(0, a.rcm.cm.caGuid);
    expect(rej?.fields).toMatchObject({
      localCommId: req?.fields['localCommId'],
      remoteCommId: 0,
      messageRejected: RejMessage.OTHER,
      reason: RejReason.TIMEOUT,
      rejectedInfoLength: 8,
    });
    expect([...((rej?.fields['ari'] as Uint8Array | undefined) ?? new Uint8Array(0)).subarray(0, 8)]).toEqual([...guid]);
  });
});

describe('passive side', () => {
  test('REQ -> CONNECT_REQUEST with the IP CM header read; accept: REP with the REQ transaction ID, the QP in RTS', () => {
    const p = passive();
    p.send(peerReq(), 0x1234n);
    expect(p.events).toMatchObject([{ type: 'CONNECT_REQUEST', responderResources: 1, initiatorDepth: 1 }]);
    const ev = p.events[0] as Extract<RdmaCmEvent, { type: 'CONNECT_REQUEST' }>;
    expect([...ev.privateData.subarray(0, 3)]).toEqual([1, 2, 3]);
    expect([p.conn().peerAddr, p.conn().peerPort, p.conn().localAddr, p.conn().localPort]).toEqual(['198.18.0.2', 40000, '198.18.0.1', PORT]);
    const [r] = p.sent();
    expect(r?.name).toBe('REP');
    expect(r?.tid).toBe(0x1234n);
    expect(r?.fields).toMatchObject({
      remoteCommId: PEER_COMM,
      localQpn: p.h.qp.qpNum,
      responderResources: 1,
      initiatorDepth: 1,
      targetAckDelay: 15,
      rnrRetryCount: 7,
      localCaGuid: p.rcm.cm.caGuid,
    });
    expect(p.h.qp.state).toBe(QpState.RTS);
    // ib_cm: cm_req_handler() takes the REQ's Starting PSN as the passive side's sq_psn, ib_send_cm_rep() the REP's as its rq_psn.
    expect(p.h.qp.attr).toMatchObject({ destQpNum: PEER_QPN, rqPsn: r?.fields['startingPsn'], sqPsn: PEER_PSN, timeout: 19 });
    expect(p.conn().cmState).toBe(CmState.REP_SENT);
  });

  test('a duplicate REQ in REP_SENT gets the same REP again; the RTU establishes; a duplicate RTU is counted and dropped', () => {
    const p = passive();
    p.send(peerReq(), 0x1234n);
    const [r1] = p.sent();
    p.send(peerReq(), 0x1234n);
    const [r2] = p.sent();
    expect(r2?.mad).toEqual(r1?.mad);
    expect(p.rcm.cm.counters.cm_rx_duplicates.req).toBe(1);
    expect(p.events.map((e) => e.type)).toEqual(['CONNECT_REQUEST']);
    const rtu: CmMessage = {
      name: 'RTU',
      fields: { localCommId: PEER_COMM, remoteCommId: r1?.fields['localCommId'] as number, privateData: new Uint8Array(0) },
    };
    p.send(rtu, 0x1234n);
    expect(p.events.map((e) => e.type)).toEqual(['CONNECT_REQUEST', 'ESTABLISHED']);
    p.send(rtu, 0x1234n);
    expect(p.rcm.cm.counters.cm_rx_duplicates.rtu).toBe(1);
    expect(p.sent()).toEqual([]);
  });

  test('the REP is lost: resent after the response wait the REQ asked for, up to max CM retries; then UNREACHABLE', () => {
    const p = passive();
    p.send(peerReq({ maxCmRetries: 2, localCmResponseTimeout: 16 }));
    const [r1] = p.sent();
    const wait = responseWaitNs(18, 16); // the REQ's local ACK timeout 19 = packet life time 18 + 1
    p.h.advance(wait - 1);
    expect(p.sent()).toEqual([]);
    p.h.advance(1);
    expect(p.sent().map((s) => s.mad)).toEqual([r1?.mad]);
    p.h.advance(wait);
    expect(p.names()).toEqual(['REP']);
    p.h.advance(wait);
    expect(p.sent()).toEqual([]);
    expect(p.events.map((e) => e.type)).toEqual(['CONNECT_REQUEST', 'UNREACHABLE']);
    expect(p.h.qp.state).toBe(QpState.ERR);
    expect(p.rcm.cm.counters.cm_tx_retries.rep).toBe(2);
  });

  test('slow to accept: MRA for the REQ; a duplicate REQ then gets the MRA again; the accept later sends the REP', () => {
    const p = passive({ hold: true });
    p.send(peerReq());
    expect(p.sent()).toEqual([]);
    p.conn().delay(24);
    const [mra] = p.sent();
    expect(mra?.name).toBe('MRA');
    expect(mra?.fields).toMatchObject({ remoteCommId: PEER_COMM, messageMraed: MraMessage.REQ, serviceTimeout: 24 });
    expect(p.conn().cmState).toBe(CmState.MRA_REQ_SENT);
    p.send(peerReq());
    expect(p.sent().map((s) => s.mad)).toEqual([mra?.mad]);
    p.conn().accept(p.h.qp);
    expect(p.names()).toEqual(['REP']);
  });

  test("automatic MRA, as the kernel's rdma_cm (delayed): a slow accept answers nothing at first, the peer's REQ retry gets an MRA (service timeout 24), the accept the REP", () => {
    const p = passive({ hold: true });
    p.send(peerReq(), 0x1234n);
    // cma.c cma_ib_req_handler(): the consumer has not accepted, so ib_prepare_cm_mra(): MRA_REQ_SENT, no MAD yet.
    expect(p.sent()).toEqual([]);
    expect(p.conn().cmState).toBe(CmState.MRA_REQ_SENT);
    // The peer's REQ timer runs out (its response wait) and it resends: cm_dup_req_handler() answers with the MRA.
    p.h.advance(WAIT);
    p.send(peerReq(), 0x1234n);
    const [mra] = p.sent();
    expect(mra?.name).toBe('MRA');
    expect(mra?.tid).toBe(0x1234n);
    expect(mra?.fields).toMatchObject({ localCommId: p.conn().cmId.localId, remoteCommId: PEER_COMM, messageMraed: MraMessage.REQ, serviceTimeout: 24 });
    expect(p.rcm.cm.counters.cm_tx_msgs.mra).toBe(1);
    // Each further duplicate gets the same MRA; the accept, however late, sends the REP.
    p.send(peerReq(), 0x1234n);
    expect(p.sent().map((s) => s.mad)).toEqual([mra?.mad]);
    p.h.advance(20 * WAIT);
    p.conn().accept(p.h.qp);
    expect(p.names()).toEqual(['REP']);
    expect(p.conn().cmState).toBe(CmState.REP_SENT);
  });

  test('automatic MRA "immediate": the MRA goes out with the connect request, before the peer\'s REQ timeout', () => {
    const p = passive({ hold: true, autoMra: AutoMra.IMMEDIATE });
    p.send(peerReq(), 0x1234n);
    const [mra] = p.sent();
    expect(mra?.name).toBe('MRA');
    expect(mra?.fields).toMatchObject({ remoteCommId: PEER_COMM, messageMraed: MraMessage.REQ, serviceTimeout: 24 });
    expect(p.conn().cmState).toBe(CmState.MRA_REQ_SENT);
    p.conn().accept(p.h.qp);
    expect(p.names()).toEqual(['REP']);
  });

  test('automatic MRA off, or an accept inside the connect request event: no MRA; a duplicate REQ in REQ_RCVD is dropped', () => {
    const off = passive({ hold: true, autoMra: AutoMra.OFF });
    off.send(peerReq());
    off.send(peerReq());
    expect(off.sent()).toEqual([]);
    expect(off.conn().cmState).toBe(CmState.REQ_RCVD);
    const quick = passive();
    quick.send(peerReq());
    expect(quick.names()).toEqual(['REP']);
    expect(quick.conn().cmState).toBe(CmState.REP_SENT);
  });

  test('reject: REJ reason 28 for the REQ with the private data; no REP ever', () => {
    const p = passive({ hold: true });
    p.send(peerReq());
    p.conn().reject(new Uint8Array([1]));
    const [rej] = p.sent();
    expect(rej?.fields).toMatchObject({ remoteCommId: PEER_COMM, messageRejected: RejMessage.REQ, reason: RejReason.CONSUMER_DEFINED });
    expect(p.conn().cmState).toBe(CmState.IDLE);
    p.h.advance(2 * WAIT);
    expect(p.sent()).toEqual([]);
  });

  test('stale connection: a new REQ from the QP of a connection in TimeWait, and a duplicate of its old REQ, are rejected "stale connection"', () => {
    const p = passive();
    p.send(peerReq(), 0x10n);
    const [r] = p.sent();
    const ourId = r?.fields['localCommId'] as number;
    p.send({ name: 'RTU', fields: { localCommId: PEER_COMM, remoteCommId: ourId, privateData: new Uint8Array(0) } });
    p.send(dreq(ourId, p.h.qp.qpNum));
    expect(p.names()).toEqual(['DREP']);
    expect(p.conn().cmState).toBe(CmState.TIMEWAIT);
    // The peer's QP 0x99 asks again with a new communication ID.
    p.send(peerReq({ localCommId: PEER_COMM + 1 }), 0x11n);
    const [stale] = p.sent();
    expect(stale?.fields).toMatchObject({ remoteCommId: PEER_COMM + 1, messageRejected: RejMessage.REQ, reason: RejReason.STALE_CONN });
    expect(stale?.tid).toBe(0x11n);
    // Its old REQ again (same communication ID): the connection it names is in TimeWait.
    p.send(peerReq(), 0x10n);
    const [dup] = p.sent();
    expect(dup?.fields).toMatchObject({ localCommId: ourId, remoteCommId: PEER_COMM, reason: RejReason.STALE_CONN });
    expect(p.events.map((e) => e.type)).toEqual(['CONNECT_REQUEST', 'ESTABLISHED', 'DISCONNECTED']);
    // After TimeWait the QP number is free again: the same REQ is a new connection.
    p.h.advance(cmTimeNs(19));
    p.send(peerReq({ localCommId: PEER_COMM + 2 }), 0x12n);
    expect(p.events.map((e) => e.type)).toEqual(['CONNECT_REQUEST', 'ESTABLISHED', 'DISCONNECTED', 'TIMEWAIT_EXIT', 'CONNECT_REQUEST']);
  });

  test('the REQ of a service nobody listens on: REJ reason 8 (invalid service ID), no ID kept', () => {
    const p = passive();
    p.send(peerReq({ serviceId: rdmaServiceId(PortSpace.TCP, PORT + 1) }), 0x99n);
    const [rej] = p.sent();
    expect(rej?.fields).toMatchObject({ localCommId: 0, remoteCommId: PEER_COMM, messageRejected: RejMessage.REQ, reason: RejReason.INVALID_SERVICE_ID });
    expect(rej?.tid).toBe(0x99n);
    expect(p.rcm.cm.ids.size).toBe(0);
  });
});

describe('disconnect', () => {
  test('DREQ -> DREP -> TimeWait for 4.096 us x 2^(local ACK timeout), then TIMEWAIT_EXIT; a DREQ repeated in TimeWait gets a DREP again', () => {
    const e = established();
    const ourId = e.req.fields['localCommId'] as number;
    e.id.disconnect();
    const [d] = e.sent();
    expect(d?.name).toBe('DREQ');
    expect(d?.fields).toMatchObject({ localCommId: ourId, remoteCommId: PEER_COMM, remoteQpnEecn: PEER_QPN });
    expect(e.h.qp.state).toBe(QpState.ERR);
    e.send(drep(ourId), d?.tid);
    expect(e.id.cmState).toBe(CmState.TIMEWAIT);
    e.send(dreq(ourId, e.h.qp.qpNum), 0x5n);
    const [again] = e.sent();
    expect(again?.name).toBe('DREP');
    expect(again?.tid).toBe(0x5n);
    e.h.advance(cmTimeNs(19) - 1);
    expect(e.events.map((x) => x.type)).toEqual(['ESTABLISHED', 'DISCONNECTED']);
    e.h.advance(1);
    expect(e.events.map((x) => x.type)).toEqual(['ESTABLISHED', 'DISCONNECTED', 'TIMEWAIT_EXIT']);
    expect(e.id.cmState).toBe(CmState.IDLE);
    // Still known (IDLE, not destroyed): a DREQ is dropped, as cm_dreq_handler() drops it in IDLE.
    e.send(dreq(ourId, e.h.qp.qpNum), 0x6n);
    expect(e.sent()).toEqual([]);
    // Destroyed: a DREQ for a communication no longer known is still answered (cm_issue_drep()).
    e.id.destroy();
    e.send(dreq(ourId, e.h.qp.qpNum), 0x7n);
    expect(e.names()).toEqual(['DREP']);
  });

  test('DREQ crossing DREQ: ours is cancelled, theirs answered with a DREP, their DREP to ours dropped; one DISCONNECTED', () => {
    const e = established();
    const ourId = e.req.fields['localCommId'] as number;
    e.id.disconnect();
    expect(e.names()).toEqual(['DREQ']);
    e.send(dreq(ourId, e.h.qp.qpNum), 0x42n);
    const [answer] = e.sent();
    expect(answer?.name).toBe('DREP');
    expect(answer?.tid).toBe(0x42n);
    expect(e.id.cmState).toBe(CmState.TIMEWAIT);
    e.send(drep(ourId));
    expect(e.sent()).toEqual([]);
    e.h.advance(2 * WAIT); // our DREQ is not resent
    expect(e.sent()).toEqual([]);
    expect(e.events.map((x) => x.type)).toEqual(['ESTABLISHED', 'DISCONNECTED', 'TIMEWAIT_EXIT']);
  });

  test('a DREQ never answered: resent up to max CM retries, then TimeWait and DISCONNECTED', () => {
    const a = active({ maxCmRetries: 1 });
    const [req] = a.sent();
    a.send(rep(req as CmSent), req?.tid);
    a.sent();
    a.id.disconnect();
    expect(a.names()).toEqual(['DREQ']);
    a.h.advance(WAIT);
    expect(a.names()).toEqual(['DREQ']);
    a.h.advance(WAIT);
    expect(a.sent()).toEqual([]);
    expect(a.id.cmState).toBe(CmState.TIMEWAIT);
    expect(a.events.map((x) => x.type)).toEqual(['ESTABLISHED', 'DISCONNECTED']);
  });

  test('a DREQ naming another QP is dropped', () => {
    const e = established();
    e.send(dreq(e.req.fields['localCommId'] as number, 0x4242));
    expect(e.sent()).toEqual([]);
    expect(e.id.cmState).toBe(CmState.ESTABLISHED);
  });
});

describe('SIDR', () => {
  test("the SIDR_REQ is rxe's (captures/rxe udaddy) but for the request ID; the SIDR_REP returns the ID to IDLE; an unanswered one is resent", () => {
    const r = rig();
    const id = r.rcm.resolveUd({ dst: '198.18.0.2', port: PORT, srcPort: 53807 }, (e) => r.events.push(e));
    const [ours] = r.sent();
    const theirs = decodeMad(new DataView(RXE_SIDR_REQ.buffer, RXE_SIDR_REQ.byteOffset, RXE_SIDR_REQ.length), 0, RXE_SIDR_REQ.length).cm
      ?.fields as unknown as Record<string, unknown>;
    expect({ ...ours?.fields, requestId: 0 }).toEqual({ ...theirs, requestId: 0 });
    expect(ours?.fields['requestId']).toBe(id.cmId.localId);
    expect(id.cmState).toBe(CmState.SIDR_REQ_SENT);
    r.h.advance(cmTimeNs(20));
    expect(r.sent().map((s) => s.mad)).toEqual([ours?.mad]);
    r.send({
      name: 'SIDR_REP',
      fields: {
        requestId: id.cmId.localId,
        status: 0,
        additionalInfoLength: 0,
        qpn: 0x55,
        serviceId: rdmaServiceId(PortSpace.UDP, PORT),
        qkey: 0x01234567,
        additionalInfo: new Uint8Array(0),
        privateData: new Uint8Array(0),
      },
    });
    expect(r.events).toMatchObject([{ type: 'ESTABLISHED', ud: { qpn: 0x55, qkey: 0x01234567 } }]);
    expect(id.cmState).toBe(CmState.IDLE);
    r.h.advance(10 * cmTimeNs(20));
    expect(r.sent()).toEqual([]);
  });

  test('passive: a repeated SIDR_REQ while the first is being answered is counted and dropped; reject answers status 2', () => {
    const r = rig();
    const held: RdmaCmId[] = [];
    r.rcm.listen(PORT, (e) => (e.type === 'CONNECT_REQUEST' ? held.push(e.id) : undefined), PortSpace.UDP);
    const d = decodeMad(new DataView(RXE_SIDR_REQ.buffer, RXE_SIDR_REQ.byteOffset, RXE_SIDR_REQ.length), 0, RXE_SIDR_REQ.length);
    const req = d.cm as CmMessage;
    r.send(req, 7n);
    r.send(req, 7n);
    expect(held).toHaveLength(1);
    expect(r.rcm.cm.counters.cm_rx_duplicates.sidr_req).toBe(1);
    held[0]?.reject();
    const [rep] = r.sent();
    expect(rep?.name).toBe('SIDR_REP');
    expect(rep?.tid).toBe(7n);
    expect(rep?.fields).toMatchObject({ requestId: 0x6520f457, status: 2 });
  });
});

describe('stale REP', () => {
  test('a REP from a remote QP another connection here still has is refused "stale connection" (REJ for the REP); our REQ keeps waiting', () => {
    const e = established(); // connection 1 with the peer's QP 0x99
    const pd = e.h.dev.allocPd();
    const cq = e.h.dev.createCq(16);
    const qp2 = e.h.dev.createQp(pd, { qpType: 2, sendCq: cq, recvCq: cq });
    const id2 = e.rcm.connect({ dst: '198.18.0.2', port: PORT, qp: qp2 }, (x) => e.events.push(x));
    const [req2] = e.sent();
    e.send(rep(req2 as CmSent, { localCommId: PEER_COMM + 5 }), req2?.tid);
    const [rej] = e.sent();
    expect(rej?.name).toBe('REJ');
    expect(rej?.fields).toMatchObject({
      localCommId: req2?.fields['localCommId'],
      remoteCommId: PEER_COMM + 5,
      messageRejected: RejMessage.REP,
      reason: RejReason.STALE_CONN,
    });
    expect(id2.cmState).toBe(CmState.REQ_SENT);
    e.h.advance(WAIT);
    expect(e.names()).toEqual(['REQ']);
  });
});
