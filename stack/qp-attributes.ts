/**
 * QP attributes and the modify-QP state machine (IBTA vol. 1 §10.3.1,
 * figure 124 and table 91: which attributes each transition requires and
 * which it allows; the same table as the kernel's `qp_state_table`).
 */
import { QpState, QpType, QP_STATE_NAMES } from './qp-type-and-state';
import { Access } from './access-flags';
import type { Mtu } from './mtu';
import { invalid } from './errors';

/** Address vector: where a connected QP (or a UD work request) sends. */
export interface AhAttr {
  /** Destination GID: 16 bytes or text (an IPv4-mapped GID such as `::ffff:198.18.0.2` means RoCE v2 over IPv4). */
  dgid: Uint8Array | string;
  /** Index of the local GID to send from (default 0). */
  sgidIndex?: number;
  hopLimit?: number;
  /** Traffic class: DSCP in the upper 6 bits, ECN in the lower 2. */
  trafficClass?: number;
  flowLabel?: number;
  /** Destination MAC; when absent the device asks its neighbour table. */
  dmac?: number;
}

/** Settable attributes, named after `struct ibv_qp_attr`. */
export interface QpAttrInput {
  qpState?: QpState;
  /** For the RTS -> RTS / SQE -> RTS style transitions: the state the caller believes the QP is in. */
  curQpState?: QpState;
  pkeyIndex?: number;
  portNum?: number;
  qpAccessFlags?: number;
  qkey?: number;
  ahAttr?: AhAttr;
  pathMtu?: Mtu;
  destQpNum?: number;
  rqPsn?: number;
  maxDestRdAtomic?: number;
  minRnrTimer?: number;
  sqPsn?: number;
  /** Local ACK timeout exponent: 4.096 us * 2^timeout; 0 = infinite. */
  timeout?: number;
  retryCnt?: number;
  rnrRetry?: number;
  maxRdAtomic?: number;
}

export type AttrName = Exclude<keyof QpAttrInput, 'qpState'>;

interface Transition {
  required: readonly AttrName[];
  optional: readonly AttrName[];
}

type Table = Partial<Record<QpState, Partial<Record<QpState, Partial<Record<QpType, Transition>>>>>>;

const S = QpState;
const T = QpType;
const tr = (required: AttrName[], optional: AttrName[] = []): Transition => ({ required, optional });
const all = (x: Transition): Partial<Record<QpType, Transition>> => ({ [T.RC]: x, [T.UC]: x, [T.UD]: x });

const RTS_OPT_RC: AttrName[] = ['curQpState', 'qpAccessFlags', 'minRnrTimer'];
const SQD_SQD_RC: AttrName[] = [
  'curQpState',
  'qpAccessFlags',
  'ahAttr',
  'timeout',
  'retryCnt',
  'rnrRetry',
  'maxRdAtomic',
  'maxDestRdAtomic',
  'minRnrTimer',
  'pkeyIndex',
];

const TABLE: Table = {
  [S.RESET]: {
    [S.RESET]: all(tr([])),
    [S.INIT]: {
      [T.RC]: tr(['pkeyIndex', 'portNum', 'qpAccessFlags']),
      [T.UC]: tr(['pkeyIndex', 'portNum', 'qpAccessFlags']),
      [T.UD]: tr(['pkeyIndex', 'portNum', 'qkey']),
    },
  },
  [S.INIT]: {
    [S.INIT]: {
      [T.RC]: tr([], ['pkeyIndex', 'portNum', 'qpAccessFlags']),
      [T.UC]: tr([], ['pkeyIndex', 'portNum', 'qpAccessFlags']),
      [T.UD]: tr([], ['pkeyIndex', 'portNum', 'qkey']),
    },
    [S.RTR]: {
      [T.RC]: tr(['ahAttr', 'pathMtu', 'destQpNum', 'rqPsn', 'maxDestRdAtomic', 'minRnrTimer'], ['qpAccessFlags', 'pkeyIndex']),
      [T.UC]: tr(['ahAttr', 'pathMtu', 'destQpNum', 'rqPsn'], ['qpAccessFlags', 'pkeyIndex']),
      [T.UD]: tr([], ['pkeyIndex', 'qkey']),
    },
  },
  [S.RTR]: {
    [S.RTS]: {
      [T.RC]: tr(['sqPsn', 'timeout', 'retryCnt', 'rnrRetry', 'maxRdAtomic'], ['curQpState', 'qpAccessFlags', 'minRnrTimer']),
      [T.UC]: tr(['sqPsn'], ['curQpState', 'qpAccessFlags']),
      [T.UD]: tr(['sqPsn'], ['curQpState', 'qkey']),
    },
  },
  [S.RTS]: {
    [S.RTS]: { [T.RC]: tr([], RTS_OPT_RC), [T.UC]: tr([], ['curQpState', 'qpAccessFlags']), [T.UD]: tr([], ['curQpState', 'qkey']) },
    [S.SQD]: all(tr([])),
  },
  [S.SQD]: {
    [S.RTS]: { [T.RC]: tr([], RTS_OPT_RC), [T.UC]: tr([], ['curQpState', 'qpAccessFlags']), [T.UD]: tr([], ['curQpState', 'qkey']) },
    [S.SQD]: { [T.RC]: tr([], SQD_SQD_RC), [T.UC]: tr([], ['curQpState', 'qpAccessFlags', 'ahAttr', 'pkeyIndex']), [T.UD]: tr([], ['pkeyIndex', 'qkey']) },
  },
  [S.SQE]: {
    [S.RTS]: { [T.UC]: tr([], ['curQpState', 'qpAccessFlags']), [T.UD]: tr([], ['curQpState', 'qkey']) },
  },
};

const ALL_ATTRS: readonly AttrName[] = [
  'curQpState',
  'pkeyIndex',
  'portNum',
  'qpAccessFlags',
  'qkey',
  'ahAttr',
  'pathMtu',
  'destQpNum',
  'rqPsn',
  'maxDestRdAtomic',
  'minRnrTimer',
  'sqPsn',
  'timeout',
  'retryCnt',
  'rnrRetry',
  'maxRdAtomic',
];

/** The access flags a QP takes: local write, remote write, read and atomic, and the two flush rights (rxe check_qp_attr_access()). */
const QP_ACCESS_SUPPORTED =
  Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ | Access.REMOTE_ATOMIC | Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT;

/** Range checks of single attributes (values the wire or the spec cannot carry). */
const RANGES: Partial<Record<AttrName, [number, number]>> = {
  pkeyIndex: [0, 0],
  portNum: [1, 1],
  qpAccessFlags: [0, QP_ACCESS_SUPPORTED],
  qkey: [0, 0xffff_ffff],
  pathMtu: [1, 5],
  destQpNum: [1, 0xffffff],
  rqPsn: [0, 0xffffff],
  sqPsn: [0, 0xffffff],
  maxDestRdAtomic: [0, 128],
  maxRdAtomic: [0, 128],
  minRnrTimer: [0, 31],
  timeout: [0, 31],
  retryCnt: [0, 7],
  rnrRetry: [0, 7],
};

/**
 * Checks a modify request against the transition table. Returns the target
 * state. Throws a VerbsError (EINVAL) naming the missing or unexpected attribute.
 */
export function checkTransition(type: QpType, cur: QpState, attr: QpAttrInput): QpState {
  const target = attr.qpState ?? cur;
  if (attr.curQpState !== undefined && attr.curQpState !== cur) {
    throw invalid(`modifyQp: curQpState is ${QP_STATE_NAMES[attr.curQpState]} but the QP is in ${QP_STATE_NAMES[cur]}`);
  }
  const given = ALL_ATTRS.filter((a) => attr[a] !== undefined);
  for (const a of given) {
    const r = RANGES[a];
    const v = attr[a];
    if (r !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v < r[0] || v > r[1])) {
      throw invalid(`modifyQp: ${a} must be an integer in ${r[0]}..${r[1]}, got ${String(v)}`);
    }
    if (a === 'qpAccessFlags' && ((v as number) & ~QP_ACCESS_SUPPORTED) !== 0) {
      throw invalid(
        `modifyQp: qpAccessFlags 0x${(v as number).toString(16)} has bits other than 0x${QP_ACCESS_SUPPORTED.toString(16)} (local write, remote write, read, atomic, flush global, flush persistent)`,
      );
    }
  }
  // Any state may go to RESET or ERR with no attributes (IBTA figure 124).
  if (target === S.RESET || target === S.ERR) {
    const extra = given.filter((a) => a !== 'curQpState');
    if (extra.length > 0) throw invalid(`modifyQp to ${QP_STATE_NAMES[target]} takes no attributes, got ${extra.join(', ')}`);
    return target;
  }
  const t = TABLE[cur]?.[target]?.[type];
  if (t === undefined) {
    throw invalid(`modifyQp: ${QP_STATE_NAMES[cur]} -> ${QP_STATE_NAMES[target]} is not a valid transition for this QP type`);
  }
  const missing = t.required.filter((a) => attr[a] === undefined);
  if (missing.length > 0) throw invalid(`modifyQp ${QP_STATE_NAMES[cur]} -> ${QP_STATE_NAMES[target]} needs ${missing.join(', ')}`);
  const allowed = new Set<AttrName>([...t.required, ...t.optional, 'curQpState']);
  const extra = given.filter((a) => !allowed.has(a));
  if (extra.length > 0) {
    throw invalid(`modifyQp ${QP_STATE_NAMES[cur]} -> ${QP_STATE_NAMES[target]} does not take ${extra.join(', ')}`);
  }
  return target;
}

/** Local ACK timeout in nanoseconds: 4.096 us * 2^timeout (IBTA vol. 1 §9.7.6.1.3); 0 means none. */
export function localAckTimeoutNs(timeout: number): number {
  return ACK_TIMEOUT_NS[timeout] ?? 0;
}

const ACK_TIMEOUT_NS: readonly number[] = Array.from({ length: 32 }, (_, t) => (t === 0 ? 0 : 4096 * 2 ** t));
