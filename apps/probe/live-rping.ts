/**
 * A live DUT running librdmacm's rping (examples/rping.c), with this stack as the other end of
 * rping's own exchange over the RDMA CM (apps/rping/rping.ts): the probe driver applies the events
 * and records the frames as for perftest, and the same measurements judge them.
 *
 * Only rping's server moves data: per ping it RDMA READs the client's start buffer, SENDs "go
 * ahead", RDMA WRITEs what it read into the client's rdma buffer and SENDs "go ahead" again, each
 * once the one before has completed (rping_test_server()); the client SENDs its two buffer
 * advertisements (rping_test_client()). So:
 *  - `dut.role: requester`: the DUT runs `rping -s`, the requester of the READs, WRITEs and SENDs;
 *    this stack is rping's client and connects to it (`--dut`). The DUT's QP takes its retry_cnt,
 *    rnr_retry and local ACK timeout from our CM REQ (the kernel's cm_req_handler(),
 *    cm_init_qp_rts_attr()): the scenario's retry counts reach it, its timeout is the REQ's.
 *  - `dut.role: responder`: the DUT runs `rping -c -C N`, the responder of our READs, WRITEs and
 *    SENDs; this stack is rping's server and waits for it.
 * The relative PSNs count the server's requests (rping-layout.ts).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { ipv6ToString } from '../../packets/bytes';
import { defaultGidIndex, isIpv4MappedGid } from '../../stack/address';
import { CmDefaults, ackTimeoutCode } from '../../stack/cm/timers';
import { mtuBytes } from '../../stack/mtu';
import type { QueuePair } from '../../stack/queue-pair';
import { WC_STATUS_NAMES, WcOpcode } from '../../stack/work-completion';
import { noProgressBound } from '../host/no-progress-bound';
import { RPING_DEFAULT_PORT, type RpingConfig, runRping } from '../rping/rping';
import { armProbeEvents } from './live-side';
import type { DutAttribute, LiveExchange, LiveHost, LiveRunOptions } from './live-runner';
import type { ProbeQp } from './measurements';
import { ProbeError, ProbeErrorCode } from './probe-error';
import { rpingPsnAt } from './rping-layout';
import { DutRole, EventType, type ProbeEvent, type ProbeScenario } from './scenario';

/** rping_init_conn_param(): the retry count and RNR retry count rping asks its CM for. */
export const RPING_RETRY_COUNT = 7;
export const RPING_RNR_RETRY_COUNT = 7;
/**
 * The local ACK timeout the RDMA CM gives an rping QP on RoCE: the path's packet lifetime
 * (cma.c CMA_IBOE_PACKET_LIFETIME 18) raised by the CA's ACK delay (rxe's 15) as cm_ack_timeout()
 * does: 19, 2.1 s. rping never calls rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT).
 */
export const RPING_CM_TIMEOUT = ackTimeoutCode(CmDefaults.caAckDelay, CmDefaults.packetLifeTime);
/** The kernel CM's min_rnr_timer at RTR (cm.c cm_init_qp_rtr_attr()). */
export const CM_MIN_RNR_TIMER = 0;
/** monitorEventLoopDelay's sampling interval, ms (as live-runner.ts). */
const LOOP_SAMPLE_MS = 1;

/** What the DUT runs for `s`: `rping -s` (DUT requester) or `rping -c` towards us (DUT responder), with -C and -S from the scenario. */
export function rpingDutCommand(s: ProbeScenario, o: { port: number; dutIp: string | null; ourIp: string | null }): string {
  const t = s.traffic;
  const port = o.port !== RPING_DEFAULT_PORT ? ` -p ${o.port}` : '';
  // The server serves until its client disconnects (rping_test_server() has no count): -C is the client's.
  if (s.dut.role === DutRole.REQUESTER) return `rping -s -a ${o.dutIp ?? 'DUT_IP'}${port} -S ${t.messageSize} -v`;
  return `rping -c -a ${o.ourIp ?? 'OUR_IP'}${port} -C ${t.numMsgsPerQp} -S ${t.messageSize} -v`;
}

/** The DUT's QP attributes when it runs rping, and where each comes from: rping takes none on its command line; its CM sets them. */
export function rpingDutAttributes(s: ProbeScenario): DutAttribute[] {
  const t = s.traffic;
  const server = s.dut.role === DutRole.REQUESTER;
  const cmTimeout = server
    ? `our CM REQ's local ACK timeout (${RPING_CM_TIMEOUT}: packet lifetime ${CmDefaults.packetLifeTime} and CA ACK delay ${CmDefaults.caAckDelay}, cm_ack_timeout()), which the DUT's CM gives its QP (cm_req_handler(), cm_init_qp_rts_attr())`
    : `its CM: the path's packet lifetime on RoCE (CMA_IBOE_PACKET_LIFETIME ${CmDefaults.packetLifeTime}) and its CA's ACK delay (rxe: ${CmDefaults.caAckDelay}), cm_ack_timeout(): ${RPING_CM_TIMEOUT} on rxe`;
  const fixed = (name: DutAttribute['name'], value: number, toolValue: number, from: string): DutAttribute => ({
    name,
    value,
    option: null,
    toolValue,
    source: value === toolValue ? `${from}, as the scenario asks` : `the scenario; rping cannot be told: ${from}`,
  });
  const fromOurCm = (name: DutAttribute['name'], value: number, field: string): DutAttribute => ({
    name,
    value,
    option: null,
    toolValue: null,
    source: `${field} (${value}), which the DUT's CM gives its QP (the kernel's cm_req_handler() or cm_rep_handler(), cm_init_qp_rts_attr())`,
  });
  return [
    fixed('timeout', t.minRetransmitTimeout, RPING_CM_TIMEOUT, cmTimeout),
    server
      ? fromOurCm('retry_cnt', t.maxRetransmitRetry, "our CM REQ's retry count")
      : fixed('retry_cnt', t.maxRetransmitRetry, RPING_RETRY_COUNT, `its REQ's retry count, ${RPING_RETRY_COUNT} (rping_init_conn_param())`),
    fromOurCm('rnr_retry', t.rnrRetry, server ? "our CM REQ's RNR retry count" : "our CM REP's RNR retry count"),
    fixed('min_rnr_timer', t.minRnrTimer, CM_MIN_RNR_TIMER, `its CM sets ${CM_MIN_RNR_TIMER} at RTR (cm_init_qp_rtr_attr())`),
  ];
}

/** The no-progress bound of a wait: the DUT's retries at the larger of the scenario's timeout and the CM's, and ours. */
export function rpingBound(s: ProbeScenario): ReturnType<typeof noProgressBound> {
  const t = s.traffic;
  return noProgressBound({
    timeout: Math.max(t.minRetransmitTimeout, RPING_CM_TIMEOUT),
    retryCnt: Math.max(t.maxRetransmitRetry, RPING_RETRY_COUNT),
    rnrRetry: t.rnrRetry,
    minRnrTimer: t.minRnrTimer,
  });
}

/**
 * The opcode of the frame an event acts on at its PSN: a request (the DUT's for a drop or seq-nak
 * when it is the requester, ours for skip, duplicate and ecn) or the answer to one. rping's QP
 * carries requests both ways, each direction on its own PSNs, so a PSN alone may name two frames.
 */
export function rpingEventOpcode(s: ProbeScenario, e: ProbeEvent): number | undefined {
  const w = rpingPsnAt(e.psn, s.traffic.messageSize, s.traffic.mtu);
  const request =
    e.type === EventType.SKIP ||
    e.type === EventType.DUPLICATE ||
    e.type === EventType.ECN ||
    e.type === EventType.SEQ_NAK ||
    (e.type === EventType.DROP && s.dut.role === DutRole.REQUESTER);
  return (request ? w.request : w.response) ?? undefined;
}

/** Runs rping's exchange with the DUT for `s`, the events armed once the QP is connected; what it learned, for the figures. */
export async function rpingExchange(s: ProbeScenario, host: LiveHost, o: LiveRunOptions): Promise<LiveExchange> {
  const t = s.traffic;
  const dutIsServer = s.dut.role === DutRole.REQUESTER;
  if (dutIsServer && o.dut === undefined)
    throw new ProbeError(
      ProbeErrorCode.RUN,
      "--dut is needed: the DUT runs rping -s (the requester of rping's READs and WRITEs), and this stack connects to it as rping's client",
    );
  const port = o.port ?? RPING_DEFAULT_PORT;
  const gids = host.device.gids;
  const gid = gids[o.gidIndex ?? defaultGidIndex(gids)];
  const ourIp = gid === undefined ? null : isIpv4MappedGid(gid) ? `${gid[12]}.${gid[13]}.${gid[14]}.${gid[15]}` : ipv6ToString(gid);
  const command = rpingDutCommand(s, { port, dutIp: o.dut ?? null, ourIp });
  const qps: ProbeQp[] = [];
  const ours: string[] = [];
  const bound = rpingBound(s);
  const loop = monitorEventLoopDelay({ resolution: LOOP_SAMPLE_MS });
  const onConnected = (qp: QueuePair): void => {
    // rping cannot be told the path MTU: the CM gives the QP the smaller of both ends' (the REQ's path MTU).
    const mtu = mtuBytes(qp.attr.pathMtu);
    if (mtu !== t.mtu)
      throw new ProbeError(
        ProbeErrorCode.RUN,
        `the RDMA CM gave the QP a path MTU of ${mtu} bytes (both ends' active MTU), the scenario's traffic.mtu is ${t.mtu}: rping cannot be told; give traffic.mtu ${mtu}`,
      );
    // The server's first PSN: the DUT's (the one our QP receives from) or ours.
    qps.push({ ourQpn: qp.qpNum, dutQpn: qp.attr.destQpNum, requestStartPsn: dutIsServer ? qp.attr.rqPsn : qp.attr.sqPsn });
    armProbeEvents(s, qps, [qp], host.device, host.probe, o.seed ?? 1, (e) => rpingEventOpcode(s, e));
    loop.reset();
  };
  const cfg: RpingConfig = {
    role: dutIsServer ? 'client' : 'server',
    addr: dutIsServer ? (o.dut as string) : (ourIp ?? '0.0.0.0'),
    port,
    count: t.numMsgsPerQp,
    size: t.messageSize,
    // Our client's REQ carries the scenario's retry counts to the DUT's QP; our server's REP its RNR retry count.
    retryCount: t.maxRetransmitRetry,
    rnrRetryCount: t.rnrRetry,
    stepTimeoutMs: bound.ms,
    listenTimeoutMs: o.connectTimeoutMs ?? 300_000,
    beforeConnect: host.ensureNeighbor,
    idleWait: host.idleWait,
    onListening: (p) => o.onListening?.(p, command),
    onConnected,
    // Our send queue's work requests (READs, WRITEs, SENDs), as they completed.
    onCompletion: (wc) => {
      if (wc.opcode !== WcOpcode.RECV) ours.push(WC_STATUS_NAMES[wc.status] ?? String(wc.status));
    },
  };
  const t0 = host.device.clock.now();
  let error: string | null = null;
  loop.enable();
  try {
    const r = await runRping(host.device, cfg);
    if (r.pings !== t.numMsgsPerQp) error = `${r.pings} pings completed, the scenario asks for ${t.numMsgsPerQp}: run the DUT with -C ${t.numMsgsPerQp}`;
  } catch (e) {
    // Nothing was exchanged with the DUT: no run to report.
    if (qps.length === 0) throw e;
    error = e instanceof Error ? e.message : String(e);
  } finally {
    loop.disable();
  }
  const warnings: string[] = [];
  // Our server READs the buffer the DUT's client advertises, -S bytes (rping_format_send()): its
  // length says whether the DUT ran the scenario's -S (a DUT server READs our buffer, ours).
  const read = host.probe.records.find((r) => r.dir === 'tx' && r.reth !== null && r.destQp === qps[0]?.dutQpn);
  if (!dutIsServer && read?.reth != null && read.reth.length !== t.messageSize)
    error ??= `the DUT's client advertises ${read.reth.length} bytes, the scenario's message-size is ${t.messageSize}: run rping with -S ${t.messageSize}`;
  return {
    durationNs: host.device.clock.now() - t0,
    messagesPerQp: t.numMsgsPerQp,
    dutCommand: command,
    dutAttributes: rpingDutAttributes(s),
    warnings,
    qps,
    ourCompletions: [ours],
    pollingDelayNs: loop.count > 0 ? Math.max(0, loop.max - LOOP_SAMPLE_MS * 1e6) : 0,
    error,
  };
}
