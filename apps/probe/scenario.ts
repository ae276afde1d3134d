/**
 * A `roce probe` scenario: what the device under test (DUT) runs, the traffic, the QP attributes
 * the DUT is asked for, and the events this stack makes happen on the wire, keyed as Lumina keys
 * its injected events (lumina-test/lumina conf/example.yml: relative QP number, relative PSN and
 * iteration, counted from 1). The keys of `traffic` are Lumina's where it has one
 * (`num-qps`, `num-msgs-per-qp`, `message-size`, `mtu`, `min-retransmit-timeout`,
 * `max-retransmit-retry`).
 *
 * A relative PSN counts the request packets of the QP's data direction from the requester's first
 * PSN (0 = its first packet), whichever end the DUT is: an ACK, NAK or READ response carries the
 * PSN of the request it answers, so one number names the request and its answer.
 */
import { type RpParams, RP_DEFAULTS, resolveCongestion } from '../../stack/congestion/parameters';
import { RPING_MAX_BUFSIZE, RPING_MIN_BUFSIZE } from '../rping/ping-data';
import { RPING_DEFAULT_SIZE } from '../rping/rping';
import { ProbeError, ProbeErrorCode } from './probe-error';
import { RpingOp, describeRpingPsn, rpingPsnAt, rpingPsnsPerPing } from './rping-layout';
import { parseYaml, type YamlNode } from './yaml-subset';

/** Which end of the data transfer the DUT is: the requester (ib_*_bw's client) or the responder (its server). */
export const DutRole = { REQUESTER: 'requester', RESPONDER: 'responder' } as const;
export type DutRole = (typeof DutRole)[keyof typeof DutRole];

/** `atomic`: 8-byte fetch-and-add requests (ib_atomic_bw's default, -A FETCH_AND_ADD), each answered by an ATOMIC ACKNOWLEDGE. */
export const ProbeVerb = { WRITE: 'write', READ: 'read', SEND: 'send', ATOMIC: 'atomic' } as const;
export type ProbeVerb = (typeof ProbeVerb)[keyof typeof ProbeVerb];

/**
 * The stock tools a DUT runs, with the verb each moves. rping's server moves a READ, a SEND, a
 * WRITE and a SEND per ping (rping-layout.ts); its verb is READ, the one its data starts with.
 */
export const DUT_TOOLS = {
  ib_write_bw: 'write',
  ib_read_bw: 'read',
  ib_send_bw: 'send',
  ib_atomic_bw: 'atomic',
  rping: 'read',
} as const satisfies Record<string, ProbeVerb>;
export type DutTool = keyof typeof DUT_TOOLS;

/**
 * Whether the DUT's tool is the server this stack connects to (`--dut`), not the client it waits
 * for: perftest's server is the responder, rping's (`rping -s`) the requester of its READs and WRITEs.
 */
export function dutIsServer(dut: { role: DutRole; tool: DutTool }): boolean {
  return dut.tool === 'rping' ? dut.role === DutRole.REQUESTER : dut.role === DutRole.RESPONDER;
}

/**
 * What an event does. On the DUT's frames: `drop` (lost before this stack sees it). On this stack's
 * frames: `skip` (one of our request PSNs never sent), `duplicate` (sent twice), `ecn` (CE set),
 * `withhold-ack` (our ACK for the PSN not sent), `drop-read-response` (our READ response not
 * sent), `delay-ack`, `rnr-nak` (answer a SEND with an RNR NAK), `seq-nak` (answer with a PSN
 * sequence NAK), `cnp` (send CNPs to the DUT's QP when its request at the PSN arrives).
 */
export const EventType = {
  DROP: 'drop',
  SKIP: 'skip',
  DUPLICATE: 'duplicate',
  ECN: 'ecn',
  WITHHOLD_ACK: 'withhold-ack',
  DROP_READ_RESPONSE: 'drop-read-response',
  DELAY_ACK: 'delay-ack',
  RNR_NAK: 'rnr-nak',
  SEQ_NAK: 'seq-nak',
  CNP: 'cnp',
} as const;
export type EventType = (typeof EventType)[keyof typeof EventType];
const EVENT_TYPES: readonly string[] = Object.values(EventType);

/** Events on this stack's requests: they need this stack as the requester, the DUT as the responder. */
const OUR_REQUEST_EVENTS: readonly EventType[] = [EventType.SKIP, EventType.DUPLICATE, EventType.ECN];
/** Events on this stack's answers: they need the DUT as the requester. */
const OUR_ANSWER_EVENTS: readonly EventType[] = [
  EventType.WITHHOLD_ACK,
  EventType.DROP_READ_RESPONSE,
  EventType.DELAY_ACK,
  EventType.RNR_NAK,
  EventType.SEQ_NAK,
  EventType.CNP,
];

export interface ProbeEvent {
  type: EventType;
  /** Relative QP number: 0 is the first QP. */
  qpn: number;
  /** Relative PSN (see the file's comment). */
  psn: number;
  /** Which transmissions of that PSN: 1 = the first, 2 = the first retransmission...; 'all' = every one. */
  iter: number | 'all';
  /** `rnr-nak`: the RNR timer code of our NAK (IBTA vol. 1 table 45; 0..31; default 12, 0.64 ms). */
  timer?: number;
  /** `delay-ack`: how long to hold the ACK, µs. */
  delayUs?: number;
  /** `cnp`: how many CNPs to send, the first when the DUT's request arrives. */
  count?: number;
  /** `cnp`: µs between them. */
  intervalUs?: number;
  /** The scenario line the event starts on. */
  line: number;
}

export interface ProbeTraffic {
  verb: ProbeVerb;
  numQps: number;
  numMsgsPerQp: number;
  messageSize: number;
  /** Path MTU in bytes: 256, 512, 1024, 2048 or 4096. */
  mtu: number;
  /** The DUT's local ACK timeout exponent: 4.096 µs × 2^timeout (IBTA vol. 1 §9.7.6.1.3). */
  minRetransmitTimeout: number;
  /** The DUT's retry_cnt. */
  maxRetransmitRetry: number;
  /** The DUT's rnr_retry (7 = forever). */
  rnrRetry: number;
  /** The DUT's min_rnr_timer (a code of IBTA vol. 1 table 45). */
  minRnrTimer: number;
  /** The DUT's np_min_time_between_cnps, µs: at most one CNP per QP in that time (0: one per CE-marked packet). */
  minTimeBetweenCnps: number;
  /** The rate our requester paces its requests at on the in-memory link, Mb/s, when an `ecn` event needs them apart. */
  rateMbps: number;
}

export interface ProbeScenario {
  name: string;
  description: string;
  dut: { role: DutRole; tool: DutTool };
  traffic: ProbeTraffic;
  /**
   * The DUT's DCQCN reaction point parameters that differ from mlx5's defaults (`dcqcn:` with the
   * mlx5 cc_params names, rp_time_reset...): the in-memory DUT is set so; a live DUT must be.
   */
  dcqcn: Partial<RpParams>;
  events: ProbeEvent[];
}

const TRAFFIC_DEFAULTS = {
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
} as const;
const MTUS = [256, 512, 1024, 2048, 4096];
/** An atomic moves one 64-bit word (IBTA vol. 1 §9.3.4: the AtomicETH carries no length); perftest refuses any other size for atomics. */
export const ATOMIC_MESSAGE_SIZE = 8;
/**
 * Events that mean nothing for atomics: our answer to an atomic is an ATOMIC ACKNOWLEDGE carrying
 * the original value, not a plain ACK (`withhold-ack` and `delay-ack` name ACKs); an atomic
 * requester keeps at most max_rd_atomic requests outstanding, so its rate follows the round trip,
 * not its rate limiter (`cnp` reads the rate limiter).
 */
const NOT_FOR_ATOMICS: Partial<Record<EventType, string>> = {
  [EventType.WITHHOLD_ACK]: 'our answer to an atomic is an ATOMIC ACKNOWLEDGE carrying the original value, not the ACK this event withholds',
  [EventType.DELAY_ACK]: 'our answer to an atomic is an ATOMIC ACKNOWLEDGE carrying the original value, not the ACK this event holds',
  [EventType.CNP]:
    'an atomic requester keeps at most max_rd_atomic requests outstanding, so its rate follows the round trip, not the rate limiter a CNP acts on',
};
const DEFAULT_RNR_NAK_TIMER = 12;

function bad(line: number, message: string): never {
  throw new ProbeError(ProbeErrorCode.SCENARIO, message, line);
}

type MapNode = Extract<YamlNode, { kind: 'map' }>;

function asMap(n: YamlNode, what: string): MapNode {
  if (n.kind !== 'map') bad(n.line, `${what} must be a mapping (key: value lines)`);
  return n;
}

/** The keys of `m`, each checked against `known` (a typo is an error naming the keys there are). */
function checkKeys(m: MapNode, known: readonly string[], what: string): void {
  for (const [k, e] of m.entries) if (!known.includes(k)) bad(e.keyLine, `unknown key '${k}' in ${what} (known: ${known.join(', ')})`);
}

function scalarAt(m: MapNode, key: string): { value: unknown; line: number } | null {
  const e = m.entries.get(key);
  if (e === undefined) return null;
  if (e.value.kind !== 'scalar') bad(e.keyLine, `'${key}' must be a single value`);
  return { value: e.value.value, line: e.keyLine };
}

function str(m: MapNode, key: string, what: string): string | null {
  const s = scalarAt(m, key);
  if (s === null) return null;
  if (typeof s.value !== 'string' || s.value === '') bad(s.line, `${what}.${key} must be text`);
  return s.value;
}

function int(m: MapNode, key: string, what: string, min: number, max: number): number | null {
  const s = scalarAt(m, key);
  if (s === null) return null;
  if (typeof s.value !== 'number' || !Number.isInteger(s.value) || s.value < min || s.value > max)
    bad(s.line, `${what}.${key} must be an integer in ${min}..${max}, not ${JSON.stringify(s.value)}`);
  return s.value;
}

function oneOf<T extends string>(m: MapNode, key: string, what: string, values: readonly T[]): T | null {
  const s = scalarAt(m, key);
  if (s === null) return null;
  if (typeof s.value !== 'string' || !(values as readonly string[]).includes(s.value))
    bad(s.line, `${what}.${key} must be one of ${values.join(', ')}, not ${JSON.stringify(s.value)}`);
  return s.value as T;
}

/** Request packets of one message at the path MTU (a zero-byte message is one packet). */
export function packetsPerMessage(t: Pick<ProbeTraffic, 'messageSize' | 'mtu'>): number {
  return Math.max(1, Math.ceil(t.messageSize / t.mtu));
}

/**
 * The request PSNs of one QP's whole run: every message's packets, or with rping every ping's READ,
 * SEND, WRITE and SEND (rping-layout.ts).
 */
export function requestPsns(s: { tool: DutTool; traffic: ProbeTraffic }): number {
  const t = s.traffic;
  return (s.tool === 'rping' ? rpingPsnsPerPing(t.messageSize, t.mtu) : packetsPerMessage(t)) * t.numMsgsPerQp;
}

function readTraffic(n: YamlNode | undefined, fileLine: number, tool: DutTool): ProbeTraffic {
  const what = 'traffic';
  const toolVerb: ProbeVerb = DUT_TOOLS[tool];
  const atomic = toolVerb === ProbeVerb.ATOMIC;
  const rping = tool === 'rping';
  // rping's -S defaults to 64 bytes (rping.c main()).
  const defaultSize = atomic ? ATOMIC_MESSAGE_SIZE : rping ? RPING_DEFAULT_SIZE : TRAFFIC_DEFAULTS.messageSize;
  if (n === undefined) return { verb: toolVerb, ...TRAFFIC_DEFAULTS, messageSize: defaultSize };
  const m = asMap(n, what);
  checkKeys(
    m,
    [
      'verb',
      'num-qps',
      'num-msgs-per-qp',
      'message-size',
      'mtu',
      'min-retransmit-timeout',
      'max-retransmit-retry',
      'rnr-retry',
      'min-rnr-timer',
      'min-time-between-cnps',
      'rate-mbps',
    ],
    what,
  );
  const verb = oneOf(m, 'verb', what, Object.values(ProbeVerb)) ?? toolVerb;
  if (verb !== toolVerb) bad(m.entries.get('verb')?.keyLine ?? fileLine, `traffic.verb ${verb} is not what the DUT's tool moves (${toolVerb})`);
  const mtu = int(m, 'mtu', what, 256, 4096) ?? TRAFFIC_DEFAULTS.mtu;
  if (!MTUS.includes(mtu)) bad(m.entries.get('mtu')!.keyLine, `traffic.mtu must be one of ${MTUS.join(', ')}, not ${mtu}`);
  // Message sizes up to 16 MiB: one buffer of that size per side, reused for every message (as perftest does).
  const messageSize = int(m, 'message-size', what, 1, 16 << 20) ?? defaultSize;
  if (atomic && messageSize !== ATOMIC_MESSAGE_SIZE)
    bad(m.entries.get('message-size')!.keyLine, `traffic.message-size of an atomic is ${ATOMIC_MESSAGE_SIZE} (one 64-bit word), not ${messageSize}`);
  // rping's -S range (rping.c main(): "Invalid size"); the size is both ends' buffers, the READ's and the WRITE's length.
  if (rping && (messageSize < RPING_MIN_BUFSIZE || messageSize > RPING_MAX_BUFSIZE))
    bad(m.entries.get('message-size')!.keyLine, `traffic.message-size is rping's -S, ${RPING_MIN_BUFSIZE}..${RPING_MAX_BUFSIZE}, not ${messageSize}`);
  const numQps = int(m, 'num-qps', what, 1, 64) ?? TRAFFIC_DEFAULTS.numQps;
  // rping connects one QP (one rdma_cm_id per client).
  if (rping && numQps !== 1) bad(m.entries.get('num-qps')!.keyLine, `rping connects one QP: traffic.num-qps is 1, not ${numQps}`);
  return {
    verb,
    numQps,
    numMsgsPerQp: int(m, 'num-msgs-per-qp', what, 1, 1024) ?? TRAFFIC_DEFAULTS.numMsgsPerQp,
    messageSize,
    mtu,
    // timeout 0 means "no timer" (IBTA vol. 1 §9.7.6.1.3); a probe needs one.
    minRetransmitTimeout: int(m, 'min-retransmit-timeout', what, 1, 31) ?? TRAFFIC_DEFAULTS.minRetransmitTimeout,
    maxRetransmitRetry: int(m, 'max-retransmit-retry', what, 0, 7) ?? TRAFFIC_DEFAULTS.maxRetransmitRetry,
    rnrRetry: int(m, 'rnr-retry', what, 0, 7) ?? TRAFFIC_DEFAULTS.rnrRetry,
    minRnrTimer: int(m, 'min-rnr-timer', what, 0, 31) ?? TRAFFIC_DEFAULTS.minRnrTimer,
    // mlx5's np_min_time_between_cnps (µs) and the pacing rate of our requests.
    minTimeBetweenCnps: int(m, 'min-time-between-cnps', what, 0, 1_000_000) ?? TRAFFIC_DEFAULTS.minTimeBetweenCnps,
    rateMbps: int(m, 'rate-mbps', what, 1, 400_000) ?? TRAFFIC_DEFAULTS.rateMbps,
  };
}

/**
 * Why an event of `type` at relative PSN `psn` does not fit an rping run (rping-layout.ts), or
 * null. rping's server posts each operation only once the one before has completed, so a loss is
 * revealed by a later packet only inside a multi-packet WRITE; every answer the client gives is to
 * one operation.
 */
function rpingEventProblem(type: EventType, psn: number, role: DutRole, t: ProbeTraffic): string | null {
  const w = rpingPsnAt(psn, t.messageSize, t.mtu);
  const where = `PSN ${psn} is in ${describeRpingPsn(w)}`;
  const dutFrame = role === DutRole.REQUESTER ? 'the DUT (rping -s) sends' : 'we (the rping server) send';
  switch (type) {
    case EventType.RNR_NAK:
      return "an rnr-nak event is not driven with rping: this stack's end keeps its one receive posted, as rping does (rping_cq_event_handler() reposts it as each SEND arrives)";
    case EventType.CNP:
      return 'a cnp event reads the rate limiter, but rping posts one operation at a time, each after the last completed (rping_test_server()): its rate follows the round trip';
    case EventType.DROP:
      if (role === DutRole.REQUESTER)
        return w.request === null
          ? `${where}: only its first PSN carries a request of the DUT's; the others are our READ responses (drop-read-response drops one)`
          : null;
      return w.response === null ? `${where}: the DUT (rping -c) ACKs a WRITE at its last PSN (${w.first + w.packets - 1}), not at this one` : null;
    case EventType.SEQ_NAK:
      return w.request === null ? `${where}: only its first PSN carries a request ${dutFrame}` : null;
    case EventType.SKIP:
    case EventType.DUPLICATE:
    case EventType.ECN:
      if (w.request === null) return `${where}: only its first PSN carries a request ${dutFrame}`;
      // After a READ request, a SEND or a WRITE's last packet rping's server waits for the
      // completion: nothing follows to show the DUT the gap (our own timeout resends it).
      if (type === EventType.SKIP && (w.op !== RpingOp.WRITE || w.offset === w.packets - 1))
        return `${where}, and nothing follows it until it completes (rping_test_server() waits for each completion), so the DUT never sees a gap: skip a WRITE packet before its last (traffic.message-size above traffic.mtu)`;
      return null;
    case EventType.WITHHOLD_ACK:
    case EventType.DELAY_ACK:
      if (w.op === RpingOp.READ) return `${where}: our answer there is a READ response, not an ACK`;
      return w.response === null ? `${where}: the ACK that completes it is for its last PSN (${w.first + w.packets - 1})` : null;
    case EventType.DROP_READ_RESPONSE:
      return w.op === RpingOp.READ
        ? null
        : `${where}: a drop-read-response event names a PSN of a ping's RDMA READ (PSNs ${w.ping * rpingPsnsPerPing(t.messageSize, t.mtu)}..)`;
    default:
      return null;
  }
}

function readEvent(n: YamlNode, s: { role: DutRole; tool: DutTool; traffic: ProbeTraffic }): ProbeEvent {
  const what = 'event';
  const m = asMap(n, 'an event');
  checkKeys(m, ['type', 'qpn', 'psn', 'iter', 'timer', 'delay-us', 'count', 'interval-us'], what);
  const type = oneOf(m, 'type', what, EVENT_TYPES as EventType[]);
  if (type === null) bad(m.line, `an event needs a type (${EVENT_TYPES.join(', ')})`);
  const t = s.traffic;
  const qpn = int(m, 'qpn', what, 0, t.numQps - 1) ?? 0;
  const lastPsn = requestPsns({ tool: s.tool, traffic: t }) - 1;
  const psn = int(m, 'psn', what, 0, lastPsn);
  if (psn === null) bad(m.line, `an event needs a psn (relative, 0..${lastPsn})`);
  const it = m.entries.get('iter');
  let iter: number | 'all' = 1;
  if (it !== undefined) {
    if (it.value.kind === 'scalar' && it.value.value === 'all') iter = 'all';
    else iter = int(m, 'iter', what, 1, 64) ?? 1;
  }
  if (OUR_REQUEST_EVENTS.includes(type) && s.role !== DutRole.RESPONDER)
    bad(m.line, `a ${type} event acts on this stack's requests: it needs dut.role responder`);
  if (type === EventType.CNP && s.role !== DutRole.REQUESTER) bad(m.line, "a cnp event tells the DUT's requester to slow down: it needs dut.role requester");
  else if (OUR_ANSWER_EVENTS.includes(type) && s.role !== DutRole.REQUESTER)
    bad(m.line, `a ${type} event acts on this stack's answers: it needs dut.role requester`);
  if (s.tool === 'rping') {
    const why = rpingEventProblem(type, psn, s.role, t);
    if (why !== null) bad(m.line, why);
  }
  if (type === EventType.DROP_READ_RESPONSE && t.verb !== ProbeVerb.READ) bad(m.line, 'a drop-read-response event needs traffic.verb read');
  const notAtomic = NOT_FOR_ATOMICS[type];
  if (t.verb === ProbeVerb.ATOMIC && notAtomic !== undefined) bad(m.line, `a ${type} event does not apply to atomics: ${notAtomic}`);
  if (type === EventType.RNR_NAK) {
    // Only a SEND consumes a receive WQE, so only a SEND can find none (IBTA vol. 1 §9.7.5.2.8).
    if (t.verb !== ProbeVerb.SEND) bad(m.line, 'an rnr-nak event needs traffic.verb send');
    if (psn % packetsPerMessage(t) !== 0)
      bad(m.line, `an rnr-nak event names the first PSN of a message (a multiple of ${packetsPerMessage(t)} here), not ${psn}`);
    if (iter === 'all') bad(m.line, "an rnr-nak event answers a number of tries (iter: N), not 'all'");
  }
  const timer = int(m, 'timer', what, 0, 31);
  if (timer !== null && type !== EventType.RNR_NAK) bad(m.entries.get('timer')!.keyLine, 'timer belongs to rnr-nak events');
  const delayUs = int(m, 'delay-us', what, 0, 10_000_000);
  if (delayUs !== null && type !== EventType.DELAY_ACK) bad(m.entries.get('delay-us')!.keyLine, 'delay-us belongs to delay-ack events');
  const count = int(m, 'count', what, 1, 10_000);
  if (count !== null && type !== EventType.CNP) bad(m.entries.get('count')!.keyLine, 'count belongs to cnp events');
  const intervalUs = int(m, 'interval-us', what, 0, 10_000_000);
  if (intervalUs !== null && type !== EventType.CNP) bad(m.entries.get('interval-us')!.keyLine, 'interval-us belongs to cnp events');
  return {
    type,
    qpn,
    psn,
    iter,
    // Our RNR NAK's timer, by default the min_rnr_timer perftest and rc_pingpong set (12: 0.64 ms).
    ...(type === EventType.RNR_NAK ? { timer: timer ?? DEFAULT_RNR_NAK_TIMER } : {}),
    ...(type === EventType.DELAY_ACK ? { delayUs: delayUs ?? 100 } : {}),
    // One CNP by default; a train of them 50 µs apart (DCQCN's N, one CNP per flow per 50 µs).
    ...(type === EventType.CNP ? { count: count ?? 1, intervalUs: intervalUs ?? 50 } : {}),
    line: m.line,
  };
}

/** mlx5's cc_params name of an RP parameter (rp_time_reset for rpTimeReset). */
export const mlx5Name = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** `dcqcn:`: the DUT's reaction point parameters by their mlx5 names, each checked as the stack checks it. */
function readDcqcn(n: YamlNode | undefined): Partial<RpParams> {
  if (n === undefined) return {};
  const m = asMap(n, 'dcqcn');
  const byName = new Map(Object.keys(RP_DEFAULTS).map((k) => [mlx5Name(k), k as keyof RpParams]));
  checkKeys(m, [...byName.keys()], 'dcqcn');
  const out: Partial<Record<keyof RpParams, number>> = {};
  for (const [name, key] of byName) {
    const v = int(m, name, 'dcqcn', 0, 0xffffffff);
    if (v === null) continue;
    try {
      resolveCongestion({ params: { [key]: v } });
    } catch (e) {
      bad(m.entries.get(name)!.keyLine, `dcqcn.${name}: ${(e as Error).message.replace(/^congestion: \w+ /, '')}`);
    }
    out[key] = v;
  }
  return out as Partial<RpParams>;
}

/** The scenario a YAML node holds, validated; a `ProbeError` (`ROCE_ERR_PROBE_SCENARIO`) names the line of anything wrong. */
export function scenarioFromNode(root: YamlNode): ProbeScenario {
  const m = asMap(root, 'a scenario');
  checkKeys(m, ['name', 'description', 'dut', 'traffic', 'dcqcn', 'events'], 'the scenario');
  const name = str(m, 'name', 'scenario') ?? bad(m.line, 'a scenario needs a name');
  const description = str(m, 'description', 'scenario') ?? '';
  const dutEntry = m.entries.get('dut') ?? bad(m.line, 'a scenario needs dut: (role, tool)');
  const dut = asMap(dutEntry.value, 'dut');
  checkKeys(dut, ['role', 'tool'], 'dut');
  const role = oneOf(dut, 'role', 'dut', Object.values(DutRole)) ?? bad(dutEntry.keyLine, `dut needs a role (${Object.values(DutRole).join(', ')})`);
  const tool =
    oneOf(dut, 'tool', 'dut', Object.keys(DUT_TOOLS) as DutTool[]) ?? bad(dutEntry.keyLine, `dut needs a tool (${Object.keys(DUT_TOOLS).join(', ')})`);
  const traffic = readTraffic(m.entries.get('traffic')?.value, m.line, tool);
  const dcqcn = readDcqcn(m.entries.get('dcqcn')?.value);
  const ev = m.entries.get('events');
  const events: ProbeEvent[] = [];
  if (ev !== undefined && !(ev.value.kind === 'scalar' && ev.value.value === null)) {
    if (ev.value.kind !== 'seq') bad(ev.keyLine, 'events must be a sequence (- type: ...)');
    for (const item of ev.value.items) events.push(readEvent(item, { role, tool, traffic }));
  }
  return { name, description, dut: { role, tool }, traffic, dcqcn, events };
}

/** The scenario a YAML text holds (`ROCE_ERR_PROBE_YAML` or `ROCE_ERR_PROBE_SCENARIO` with the line otherwise). */
export function parseScenario(text: string): ProbeScenario {
  return scenarioFromNode(parseYaml(text));
}
