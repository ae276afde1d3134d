/**
 * A scenario run on the in-memory link, with a second roce-ts device as the DUT: the
 * deterministic testbed of `roce probe --driver memory` and of the probe's tests. Virtual clock,
 * infinite bandwidth (no serialization), a fixed one-way delay: the timestamps are exact and the
 * path's round trip is known (2 × the delay), so every figure can be derived from the engine's
 * parameters.
 *
 * The workload is perftest's shape: each QP moves `num-msgs-per-qp` messages of `message-size`
 * bytes of the scenario's verb, all posted at once, from one registered buffer per side; for a
 * SEND the responder posts a receive per message, except those an `rnr-nak` event holds back (its
 * message's and every later one's) until it has answered the message's PSN with that many RNR NAKs.
 */
import { VirtualClock } from '../../base/clock';
import { psnAdd } from '../../base/psn';
import { createMemoryLink } from '../../nic-driver/memory-link';
import type { FaultConfig, FaultRule } from '../../nic-driver/faults';
import { fastestIcrcBatch } from '../../nic-driver/native-icrc';
import { AethKind, decodeSyndrome } from '../../packets/aeth';
import { Access } from '../../stack/access-flags';
import { connectQp, endpointOf } from '../../stack/connect';
import { Device } from '../../stack/device';
import { type Mtu, mtuFromBytes } from '../../stack/mtu';
import type { QueuePair } from '../../stack/queue-pair';
import { localAckTimeoutNs } from '../../stack/qp-attributes';
import { RNR_TIMER_USEC } from '../../packets/aeth';
import { QpType } from '../../stack/qp-type-and-state';
import { WC_STATUS_NAMES } from '../../stack/work-completion';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import type { MemoryRegion } from '../../stack/memory-region';
import { type ProbeQp, measure } from './measurements';
import { ProbeDriver, type FrameRecord } from './probe-driver';
import { dutRequestAnswers } from './dut-request-answers';
import { ProbeError, ProbeErrorCode } from './probe-error';
import type { ProbeResult } from './probe-result';
import { DutRole, EventType, ProbeVerb, type ProbeScenario, packetsPerMessage } from './scenario';

export interface MemoryRunOptions {
  /** One-way delay of the link, ns (default 2000). */
  latencyNs?: number;
  /** Seed of the devices' QP numbers and PSNs (default 1). */
  seed?: number;
  /** Shown every frame at this stack's driver (ProbeDriver.onWire): `roce probe --pcap` and `--html` take their capture from it. */
  onWire?: ProbeDriver['onWire'];
}

interface End {
  dev: Device;
  mr: MemoryRegion;
  buf: Uint8Array;
  qps: QueuePair[];
  sendCq: ReturnType<Device['createCq']>;
}

function end(dev: Device, scenario: ProbeScenario): End {
  const t = scenario.traffic;
  const pd = dev.allocPd();
  const buf = new Uint8Array(t.messageSize);
  const mr = dev.regMr(pd, buf, Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC);
  const sendCq = dev.createCq(4096);
  const recvCq = dev.createCq(4096);
  const depth = t.numMsgsPerQp + 1;
  const qps: QueuePair[] = [];
  for (let i = 0; i < t.numQps; i++) qps.push(dev.createQp(pd, { qpType: QpType.RC, sendCq, recvCq, cap: { maxSendWr: depth, maxRecvWr: depth } }));
  return { dev, mr, buf, qps, sendCq };
}

/** How long a run may take on the virtual clock before it is declared stuck: every timer of the scenario run out, with room. */
function timeBoundNs(s: ProbeScenario): number {
  const t = s.traffic;
  const timeouts = localAckTimeoutNs(t.minRetransmitTimeout) * (t.maxRetransmitRetry + 2) * 4;
  const rnr = s.events.reduce(
    (sum, e) => sum + (e.type === EventType.RNR_NAK ? (RNR_TIMER_USEC[e.timer ?? 0] ?? 0) * 1000 * ((e.iter === 'all' ? 1 : e.iter) + 1) : 0),
    0,
  );
  const held = s.events.reduce((sum, e) => sum + (e.type === EventType.DELAY_ACK ? (e.delayUs ?? 0) * 1000 : 0), 0);
  return timeouts * t.numQps + rnr + held + 1e9;
}

/** Runs `scenario` against another roce-ts device on the in-memory link; the figures are measured at this stack's driver. */
export function runInMemory(scenario: ProbeScenario, o: MemoryRunOptions = {}): ProbeResult {
  // This runner moves perftest's workload (every message of one verb posted at once); rping's ping
  // (a READ, a SEND, a WRITE, a SEND, each after the last completed, over the RDMA CM) is driven
  // against a live DUT only (live-rping.ts).
  if (scenario.dut.tool === 'rping')
    throw new ProbeError(
      ProbeErrorCode.RUN,
      "an rping DUT runs live (--driver xdp|packet): the in-memory link moves perftest's workload, not rping's exchange over the RDMA CM",
    );
  const latencyNs = o.latencyNs ?? 2000;
  const seed = o.seed ?? 1;
  const clock = new VirtualClock();
  const link = createMemoryLink({
    clock,
    seed,
    mtu: 4200,
    macA: 0x02_00_00_00_00_01,
    macB: 0x02_00_00_00_00_02,
    bandwidthBps: 0,
    faults: { aToB: { delayNs: latencyNs }, bToA: { delayNs: latencyNs } },
  });
  // An ecn event: the DUT answers CE marks as a notification point with the scenario's CNP interval
  // (stack/congestion/np.ts), and our requester paces its requests at the scenario's rate (a DCQCN
  // reaction point, so it also slows at the DUT's CNPs), so that a run of marks arrives spread in time.
  const ecn = scenario.events.some((e) => e.type === EventType.ECN);
  // A cnp event: the DUT's requester is a DCQCN reaction point with the scenario's parameters, paced
  // at the scenario's rate from the start (a NIC's scheduler never runs ahead of its wire), so its
  // rate before, during and after our CNPs shows in the gaps between its frames (rate-levels.ts).
  const cnp = scenario.events.some((e) => e.type === EventType.CNP);
  const probe = new ProbeDriver(link.a, clock);
  probe.onWire = o.onWire ?? null;
  const icrc = fastestIcrcBatch();
  const ourDev = new Device({
    driver: probe,
    clock,
    ipv4: ['198.18.0.1'],
    neighbors: { '198.18.0.2': 0x02_00_00_00_00_02 },
    name: 'probe',
    seed: seed * 2 + 1,
    icrc,
    ...(ecn ? { congestion: { rp: true, paceUnlimited: true, lineRateMbps: scenario.traffic.rateMbps } } : {}),
  });
  const dutDev = new Device({
    driver: link.b,
    clock,
    ipv4: ['198.18.0.2'],
    neighbors: { '198.18.0.1': 0x02_00_00_00_00_01 },
    name: 'dut',
    seed: seed * 2 + 2,
    icrc,
    ...(ecn ? { congestion: { np: true, params: { npMinTimeBetweenCnps: scenario.traffic.minTimeBetweenCnps } } } : {}),
    ...(cnp ? { congestion: { rp: true, paceUnlimited: true, lineRateMbps: scenario.traffic.rateMbps, params: scenario.dcqcn } } : {}),
  });
  const t = scenario.traffic;
  const dutIsRequester = scenario.dut.role === DutRole.REQUESTER;
  const us = end(ourDev, scenario);
  const dut = end(dutDev, scenario);
  const pathMtu = mtuFromBytes(t.mtu) as Mtu;
  const qps: ProbeQp[] = [];
  for (let i = 0; i < t.numQps; i++) {
    const ourPsn = ourDev.randomPsn();
    const dutPsn = dutDev.randomPsn();
    const ourQp = us.qps[i]!;
    const dutQp = dut.qps[i]!;
    const eUs = endpointOf(ourDev, ourQp, ourPsn);
    const eDut = endpointOf(dutDev, dutQp, dutPsn);
    // The DUT gets the attributes the scenario asks for; our QP answers RNR with the timer its rnr-nak event names.
    const rnrEvent = scenario.events.find((e) => e.type === EventType.RNR_NAK && e.qpn === i);
    connectQp(dutQp, eDut, eUs, { pathMtu, timeout: t.minRetransmitTimeout, retryCnt: t.maxRetransmitRetry, rnrRetry: t.rnrRetry, minRnrTimer: t.minRnrTimer });
    connectQp(ourQp, eUs, eDut, { pathMtu, ...(rnrEvent?.timer !== undefined ? { minRnrTimer: rnrEvent.timer } : {}) });
    qps.push({ ourQpn: ourQp.qpNum, dutQpn: dutQp.qpNum, requestStartPsn: dutIsRequester ? dutPsn : ourPsn });
  }

  // The events as fault rules on this stack's frames (tx) and the DUT's (rx), at absolute QP numbers and PSNs.
  const txRules: FaultRule[] = [];
  const rxRules: FaultRule[] = [];
  for (const e of scenario.events) {
    const q = qps[e.qpn]!;
    const psn = psnAdd(q.requestStartPsn, e.psn);
    const round = e.iter === 'all' ? {} : { round: e.iter - 1 };
    const ours = { qpn: q.dutQpn, psn, ...round };
    switch (e.type) {
      case EventType.DROP:
        rxRules.push({ action: 'drop', match: { qpn: q.ourQpn, psn, ...round } });
        break;
      case EventType.SKIP:
      case EventType.DROP_READ_RESPONSE:
        txRules.push({ action: 'drop', match: ours });
        break;
      case EventType.WITHHOLD_ACK:
        txRules.push({ action: 'drop', match: { ...ours, opcode: 'ACKNOWLEDGE' } });
        break;
      case EventType.DUPLICATE:
        txRules.push({ action: 'duplicate', match: ours });
        break;
      case EventType.ECN:
        txRules.push({ action: 'ecnCe', match: ours });
        break;
      case EventType.DELAY_ACK:
        txRules.push({ action: 'delay', delayNs: (e.delayUs ?? 0) * 1000, match: { ...ours, opcode: 'ACKNOWLEDGE' } });
        break;
      case EventType.SEQ_NAK:
        // The request never reaches our responder; the hook below answers it with the NAK.
        rxRules.push({ action: 'drop', match: { qpn: q.ourQpn, psn, ...round } });
        break;
      default:
        break;
    }
  }
  // seq-nak and cnp: what this stack does itself when the DUT's request arrives (dut-request-answers.ts).
  probe.onReceived = dutRequestAnswers(scenario, qps, us.qps, ourDev);
  const txConfig: FaultConfig = { rules: txRules };
  const rxConfig: FaultConfig = { rules: rxRules };
  probe.arm(txConfig, rxConfig, seed);

  // Receives: every SEND message gets one. Receive WQEs are taken in order, whichever message comes
  // (IBTA vol. 1 §9.7.5.2.8: a SEND with no receive WQE gets an RNR NAK), so holding back one
  // message's receive means holding back its and every later one's: an rnr-nak event's message and
  // those after it are posted once its last RNR NAK has left (up to the next such event's message).
  const perMsg = packetsPerMessage(t);
  if (t.verb === ProbeVerb.SEND) {
    const responder = dutIsRequester ? us : dut;
    const post = (qp: QueuePair, from: number, to: number): void => {
      for (let m = from; m < to; m++) qp.postRecv({ wrId: m, sgList: [responder.mr.sge(0, t.messageSize)] });
    };
    const pending: { e: ProbeScenario['events'][number]; seen: number; psn: number; dutQpn: number; from: number; to: number }[] = [];
    for (let i = 0; i < t.numQps; i++) {
      const qp = responder.qps[i]!;
      const holds = dutIsRequester ? scenario.events.filter((e) => e.type === EventType.RNR_NAK && e.qpn === i).sort((x, y) => x.psn - y.psn) : [];
      const firstHeld = holds.length === 0 ? t.numMsgsPerQp : holds[0]!.psn / perMsg;
      post(qp, 0, firstHeld);
      holds.forEach((e, k) => {
        const next = holds[k + 1];
        pending.push({
          e,
          seen: 0,
          psn: psnAdd(qps[i]!.requestStartPsn, e.psn),
          dutQpn: qps[i]!.dutQpn,
          from: e.psn / perMsg,
          to: next === undefined ? t.numMsgsPerQp : next.psn / perMsg,
        });
      });
    }
    if (pending.length > 0) {
      probe.onSent = (r: FrameRecord): void => {
        if (r.syndrome < 0 || decodeSyndrome(r.syndrome).kind !== AethKind.RNR_NAK) return;
        for (const p of pending) {
          if (p.psn !== r.psn || p.dutQpn !== r.destQp) continue;
          if (++p.seen !== p.e.iter) continue;
          // Posted after the stack's transmit call returns: the next try of the PSN finds it.
          const qp = us.qps[p.e.qpn]!;
          clock.schedule(clock.now(), () => post(qp, p.from, p.to));
        }
      };
    }
  }

  // The requester's messages, all posted at once (perftest's tx depth of the whole run).
  const requester = dutIsRequester ? dut : us;
  const responder = dutIsRequester ? us : dut;
  const opcode = {
    [ProbeVerb.WRITE]: WrOpcode.RDMA_WRITE,
    [ProbeVerb.READ]: WrOpcode.RDMA_READ,
    [ProbeVerb.SEND]: WrOpcode.SEND,
    [ProbeVerb.ATOMIC]: WrOpcode.ATOMIC_FETCH_AND_ADD,
  }[t.verb];
  const remote = { remoteAddr: responder.mr.addr(0), rkey: responder.mr.rkey };
  // Atomics: every fetch-and-add of 1 on the same word, so the value each returns shows how many
  // times the responder executed the ones before it (a duplicate executed twice adds 2).
  const target = t.verb === ProbeVerb.SEND ? {} : t.verb === ProbeVerb.ATOMIC ? { atomic: { ...remote, compareAdd: 1n, swap: 0n } } : { rdma: remote };
  for (let i = 0; i < t.numQps; i++) {
    const wrs = Array.from({ length: t.numMsgsPerQp }, (_, m) => ({
      wrId: m,
      opcode,
      sgList: [requester.mr.sge(0, t.messageSize)],
      sendFlags: SendFlags.SIGNALED,
      ...target,
    }));
    requester.qps[i]!.postSend(wrs);
  }

  // Until every requester work request has completed, well or not.
  const want = t.numQps * t.numMsgsPerQp;
  const completions: string[][] = Array.from({ length: t.numQps }, () => []);
  const qpIndex = new Map(requester.qps.map((q, i) => [q.qpNum, i]));
  let done = 0;
  const bound = timeBoundNs(scenario);
  clock.runWhile(() => {
    for (const wc of requester.sendCq.poll()) {
      done++;
      if (dutIsRequester) completions[qpIndex.get(wc.qpNum) ?? 0]!.push(WC_STATUS_NAMES[wc.status] ?? String(wc.status));
    }
    return done < want && clock.now() < bound;
  });
  const doneAt = clock.now();
  // The frames on the link when the last WR completed still arrive (a resend the DUT's timer sent
  // while our held ACK was on its way), and a held ACK still leaves: the records are whole.
  clock.runUntil(doneAt + latencyNs);
  clock.runWhile(() => probe.holding > 0 && clock.now() < bound);
  clock.runUntil(clock.now() + latencyNs);
  if (done < want)
    throw new ProbeError(ProbeErrorCode.RUN, `${want - done} of ${want} messages had not completed after ${(bound / 1e9).toFixed(3)} s of virtual time`);
  if (!dutIsRequester) {
    // Our requester's completions say nothing of the DUT; the DUT responder has no send completions.
    for (let i = 0; i < t.numQps; i++) completions[i] = [];
  }

  const pathRttNs = 2 * latencyNs;
  const figures = measure({ scenario, qps, records: probe.records, pathRttNs });
  const recs = probe.records;
  return {
    scenario: scenario.name,
    dut: { role: scenario.dut.role, tool: scenario.dut.tool, driver: 'memory' },
    timestamps: {
      where: "this stack's driver, at its transmit and receive calls, on the in-memory link's virtual clock (the link's own instants)",
      errorNs: 0,
    },
    pathRttNs,
    figures,
    dutCompletions: completions,
    frames: {
      tx: recs.filter((r) => r.dir === 'tx' && r.fate === 'delivered').length,
      rx: recs.filter((r) => r.dir === 'rx').length,
      dropped: recs.filter((r) => r.fate === 'dropped').length,
    },
    durationNs: doneAt,
  };
}
