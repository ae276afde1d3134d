/**
 * This stack's end of a live `roce probe` run: the peer of the DUT's stock perftest tool, through
 * perftest's own out-of-band exchange (apps/oob/perftest-session.ts) and its resources
 * (apps/perftest/perftest-side.ts), with the scenario's workload instead of perftest's loop:
 *  - the DUT is the requester (the tool's client): this side is the server; its responder answers
 *    the DUT's requests, and for SENDs it posts the receives itself, holding back the ones an
 *    `rnr-nak` event names until it has answered the message that many times with RNR NAKs;
 *  - the DUT is the responder (the tool's server): this side is the client and posts every
 *    message of each QP at once (the memory runner's shape), then waits for their completions.
 *
 * Once the key messages have given both ends' QP numbers and first PSNs, the QPs connect with
 * perftest's attributes (ctx_modify_qp_to_rtr / _rts: retry_cnt 7, rnr_retry 7, min_rnr_timer 12,
 * timeout -u), except the min_rnr_timer an `rnr-nak` event gives our RNR NAKs, and the probe
 * driver is armed with the events at the absolute QP numbers and PSNs.
 */
import { internalError } from '../../base/programming-error';
import { psnAdd } from '../../base/psn';
import { AethKind, decodeSyndrome } from '../../packets/aeth';
import type { FaultRule } from '../../nic-driver/faults';
import type { Device } from '../../stack/device';
import { QpState } from '../../stack/qp-type-and-state';
import type { QueuePair } from '../../stack/queue-pair';
import { WC_STATUS_NAMES } from '../../stack/work-completion';
import { PerftestSide } from '../perftest/perftest-side';
import type { CmTestConnection } from '../perftest/cm-test-connection';
import { dutRequestAnswers } from './dut-request-answers';
import { DEVICE_MAX_RD_ATOMIC, type PerftestConfig, type ResolvedConfig } from '../perftest/config';
import type { PerftestDest } from '../oob/perftest-messages';
import type { ProbeQp } from './measurements';
import type { FrameRecord, ProbeDriver } from './probe-driver';
import { DutRole, EventType, type ProbeEvent, type ProbeScenario, packetsPerMessage } from './scenario';

/** perftest's min_rnr_timer, retry_cnt and rnr_retry on the TCP exchange (perftest_resources.c ctx_modify_qp_to_rtr / _rts). */
export const PERFTEST_MIN_RNR_TIMER = 12;
export const PERFTEST_RETRY_CNT = 7;
export const PERFTEST_RNR_RETRY = 7;

/** What this side learned and did, for the runner. */
export interface ProbeSideState {
  /** The QPs as numbers on the wire, once connected. */
  qps: ProbeQp[];
  /** How this side's work requests ended, per QP: sends (client) or receives (server of SEND). */
  ourCompletions: string[][];
  /** Device clock (ns) of the first request of the workload and of the last completion. */
  startNs: number | null;
  endNs: number | null;
}

export class ProbeSide extends PerftestSide {
  readonly state: ProbeSideState;
  /** Called once the QPs are connected and the events armed: the data phase starts. */
  onConnected: (() => void) | null = null;
  private readonly dutIsRequester: boolean;

  constructor(
    dev: Device,
    rc: ResolvedConfig,
    cfg: PerftestConfig,
    private readonly scenario: ProbeScenario,
    private readonly probe: ProbeDriver,
    /** Messages per QP the tool moves (perftest's -n, at least 5). */
    private readonly messages: number,
    private readonly seed: number,
    /** -R: the test QP's RDMA CM connection (perftest's create_rdma_cm_connection()). */
    cmTest: CmTestConnection | null = null,
  ) {
    super(dev, rc, cfg, cmTest);
    this.dutIsRequester = scenario.dut.role === DutRole.REQUESTER;
    this.state = { qps: [], ourCompletions: Array.from({ length: rc.qps }, () => []), startNs: null, endNs: null };
  }

  /** ctx_connect with perftest's attributes (our RNR NAK timer from the scenario), then the events armed. */
  override async connect(): Promise<void> {
    const { qps, remotes, rc } = this;
    const first = remotes[0];
    if (first?.gid == null || remotes.length !== qps.length) throw internalError('connect before the key exchange');
    if (this.cfg.beforeConnect !== undefined) await this.cfg.beforeConnect(first.gid);
    for (let q = 0; q < qps.length; q++) {
      const qp = qps[q] as QueuePair;
      const remote = remotes[q] as PerftestDest;
      const rnr = this.scenario.events.find((e) => e.type === EventType.RNR_NAK && e.qpn === q);
      qp.modify({
        qpState: QpState.RTR,
        ahAttr: { dgid: remote.gid as Uint8Array, sgidIndex: rc.gidIndex, hopLimit: 0xff, trafficClass: rc.trafficClass },
        pathMtu: this.agreedMtu,
        destQpNum: remote.qpn,
        rqPsn: remote.psn,
        maxDestRdAtomic: rc.outReads,
        // Our responder's RNR NAKs carry this timer (IBTA vol. 1 §9.7.5.2.8): the rnr-nak event's.
        minRnrTimer: rnr?.timer ?? PERFTEST_MIN_RNR_TIMER,
      });
      if (!this.dutIsRequester)
        qp.modify({
          qpState: QpState.RTS,
          sqPsn: this.psns[q] ?? 0,
          timeout: rc.qpTimeout,
          retryCnt: PERFTEST_RETRY_CNT,
          rnrRetry: PERFTEST_RNR_RETRY,
          maxRdAtomic: Math.min(remote.outReads, DEVICE_MAX_RD_ATOMIC),
        });
      this.state.qps.push({
        ourQpn: qp.qpNum,
        dutQpn: remote.qpn,
        requestStartPsn: this.dutIsRequester ? remote.psn : (this.psns[q] ?? 0),
      });
    }
    this.armEvents();
    this.onConnected?.();
  }

  /**
   * -R: the CM connects the QP (REQ, REP, RTU: its RTR and RTS with the CM's attributes, the
   * retry count the REQ carried); then, as after ctx_connect, our RNR NAK timer from the scenario
   * (RTS to RTS) and the events armed.
   */
  override async cmConnect(): Promise<void> {
    await super.cmConnect();
    const qp = this.qps[0] as QueuePair;
    const rnr = this.scenario.events.find((e) => e.type === EventType.RNR_NAK && e.qpn === 0);
    if (rnr?.timer !== undefined && qp.state === QpState.RTS) qp.modify({ qpState: QpState.RTS, minRnrTimer: rnr.timer });
    this.state.qps.push({
      ourQpn: qp.qpNum,
      dutQpn: qp.attr.destQpNum,
      // The DUT's first PSN is the one our QP receives from; ours, the one it sends from.
      requestStartPsn: this.dutIsRequester ? qp.attr.rqPsn : (this.psns[0] ?? 0),
    });
    this.armEvents();
    this.onConnected?.();
  }

  /** The events as fault rules at absolute QP numbers and PSNs (the memory runner's rules, the same keys). */
  private armEvents(): void {
    armProbeEvents(this.scenario, this.state.qps, this.qps, this.dev, this.probe, this.seed);
  }

  /**
   * The receives of a SEND test's server. Receive WQEs are taken in order, whichever message
   * comes, so holding back one message's receive means holding back its and every later one's:
   * those are posted once our responder has sent the rnr-nak event's last RNR NAK for the message.
   */
  override postReceives(): void {
    const { mr, layout } = this;
    if (!this.dutIsRequester || mr === null || layout === null) return;
    const perMsg = packetsPerMessage(this.scenario.traffic);
    const hooks: { qp: number; psn: number; dutQpn: number; tries: number; seen: number; rest: () => void }[] = [];
    this.qps.forEach((qp, q) => {
      const post = (from: number, to: number): void => {
        for (let j = from; j < to; j++) qp.postRecv({ wrId: j * this.rc.qps + q, sgList: [mr.sge(layout.recvOffset(j, q), layout.recvLength)] });
      };
      const ev = this.scenario.events.find((e) => e.type === EventType.RNR_NAK && e.qpn === q);
      const held = ev === undefined ? this.messages : Math.floor(ev.psn / perMsg);
      post(0, held);
      const info = this.state.qps[q];
      if (ev !== undefined && info !== undefined)
        hooks.push({
          qp: q,
          psn: psnAdd(info.requestStartPsn, ev.psn),
          dutQpn: info.dutQpn,
          tries: ev.iter === 'all' ? 1 : ev.iter,
          seen: 0,
          rest: () => post(held, this.messages),
        });
    });
    if (hooks.length === 0) return;
    this.probe.onSent = (r: FrameRecord): void => {
      if (r.syndrome < 0 || decodeSyndrome(r.syndrome).kind !== AethKind.RNR_NAK) return;
      for (const h of hooks) {
        if (h.psn !== r.psn || h.dutQpn !== r.destQp || ++h.seen !== h.tries) continue;
        // After the stack's transmit call has returned: the DUT's next try of the PSN finds the receive.
        setImmediate(h.rest);
      }
    };
  }

  /** The workload: the client posts every message at once and waits for them; the server of SEND waits for its receives. */
  override async run(): Promise<void> {
    const { rc } = this;
    const { sendCq, recvCq } = this.resources();
    const want = this.messages * rc.qps;
    const index = new Map(this.qps.map((qp, i) => [qp.qpNum, i]));
    const take = (wcs: readonly { qpNum: number; status: number }[]): void => {
      for (const wc of wcs) this.state.ourCompletions[index.get(wc.qpNum) ?? 0]?.push(WC_STATUS_NAMES[wc.status] ?? String(wc.status));
    };
    const count = (): number => this.state.ourCompletions.reduce((n, c) => n + c.length, 0);
    if (this.dutIsRequester) {
      // ib_send_bw's server: the receives complete as the DUT's messages arrive.
      while (count() < want) take(await this.waits.pollSome(recvCq as NonNullable<typeof recvCq>, 'the DUT’s SEND messages'));
      this.state.endNs = this.dev.clock.now();
      return;
    }
    this.state.startNs = this.dev.clock.now();
    for (let q = 0; q < rc.qps; q++) {
      const qp = this.qps[q] as QueuePair;
      const wrs = Array.from({ length: this.messages }, (_, k) => this.sendWr(k, true, q));
      // perftest spreads its atomics over cache-line slots; here every atomic of a QP goes to its
      // first slot, so the value each returns shows how many times the DUT executed the ones before
      // it (a duplicate executed twice shows in the next one's answer).
      const word = wrs[0]?.atomic?.remoteAddr;
      if (word !== undefined) for (const wr of wrs) if (wr.atomic !== undefined) wr.atomic = { ...wr.atomic, remoteAddr: word };
      qp.postSend(wrs);
    }
    // Every completion, well or not: an error completion is part of what the DUT did, not the end of the probe.
    while (count() < want) take(await this.waits.pollSome(sendCq as NonNullable<typeof sendCq>, 'the messages’ completions'));
    this.state.endNs = this.dev.clock.now();
    const s = (this.state.endNs - this.state.startNs) / 1e9 || 1e-9;
    const bytes = want * rc.size;
    this.myReport = { size: BigInt(rc.size), iters: BigInt(this.messages), bwPeak: 0, bwAvg: bytes / s / 2 ** 20, msgRateAvg: want / s / 1e6 };
  }
}

/**
 * The events of `scenario` as the probe driver's fault rules at the QPs' absolute numbers and PSNs
 * (the memory runner's rules, the same keys), and its answers to the DUT's requests (seq-nak, cnp).
 * `frameOpcode` narrows a rule to the opcode of the frame the event names, where the QP carries
 * requests both ways (rping: a PSN of one direction may be the number of a frame of the other).
 */
export function armProbeEvents(
  scenario: ProbeScenario,
  qps: readonly ProbeQp[],
  ours: readonly QueuePair[],
  dev: Device,
  probe: ProbeDriver,
  seed: number,
  frameOpcode: (e: ProbeEvent) => number | undefined = () => undefined,
): void {
  const tx: FaultRule[] = [];
  const rx: FaultRule[] = [];
  for (const e of scenario.events) {
    const q = qps[e.qpn];
    if (q === undefined) continue;
    const psn = psnAdd(q.requestStartPsn, e.psn);
    const round = e.iter === 'all' ? {} : { round: e.iter - 1 };
    const op = frameOpcode(e);
    const opcode = op === undefined ? {} : { opcode: op };
    const ours = { qpn: q.dutQpn, psn, ...round };
    switch (e.type) {
      case EventType.DROP:
        rx.push({ action: 'drop', match: { qpn: q.ourQpn, psn, ...round, ...opcode } });
        break;
      case EventType.SKIP:
      case EventType.DROP_READ_RESPONSE:
        tx.push({ action: 'drop', match: { ...ours, ...opcode } });
        break;
      case EventType.WITHHOLD_ACK:
        tx.push({ action: 'drop', match: { ...ours, opcode: 'ACKNOWLEDGE' } });
        break;
      case EventType.DUPLICATE:
        tx.push({ action: 'duplicate', match: { ...ours, ...opcode } });
        break;
      case EventType.ECN:
        tx.push({ action: 'ecnCe', match: { ...ours, ...opcode } });
        break;
      case EventType.DELAY_ACK:
        // Held on the host's clock by the probe driver, recorded when it leaves.
        tx.push({ action: 'delay', delayNs: (e.delayUs ?? 0) * 1000, match: { ...ours, opcode: 'ACKNOWLEDGE' } });
        break;
      case EventType.SEQ_NAK:
        // The request never reaches our responder; dutRequestAnswers() answers it with the NAK.
        rx.push({ action: 'drop', match: { qpn: q.ourQpn, psn, ...round, ...opcode } });
        break;
      default:
        break;
    }
  }
  probe.arm({ rules: tx }, { rules: rx }, seed);
  // seq-nak and cnp: what this side does itself when the DUT's request arrives.
  probe.onReceived = dutRequestAnswers(scenario, qps, ours, dev);
}
