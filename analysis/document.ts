/**
 * The JSON document of `roce analyze --json`: one object with
 * `conversations[]`, `messages[]`, `episodes[]`, `violations[]` and the
 * per-frame `frames[]` flags. Keys are stable and documented in
 * docs/analysis.md; bump ANALYSIS_FORMAT_VERSION when one changes meaning.
 */
import type { CongestionReport } from './congestion-track';
import { secondsText } from '../base/exact-time';
import { type AnalysisResult, type AnalysisStop, flowKey } from './analyzer';
import type { CmConnection } from './cm-connections';
import type { Diagnosis } from './connection-doctor';
import type { RecoveryCounts } from '../base/recovery-trigger';
import type { Conversation } from './conversations';
import { FLAG_NAMES, type FlagName } from './flags';
import type { RequesterFlow } from './flow';
import type { TimeSeries } from './figures';
import type { CaptureGap, Episode, FrameResult, Message, Side, Violation } from './types';
import type { RxeBehaviour, RxeBehaviourId } from './rxe-behaviours';

/** 2: `startTime` is a decimal string with the capture's decimals (it was a number of seconds). */
export const ANALYSIS_FORMAT_VERSION = 2;

export interface SeriesJson {
  binNs: number;
  values: number[];
}

export interface FlowJson {
  /** The requester's side; the responder is the other one. */
  requester: Side;
  responderQpn: number | null;
  requests: number;
  responses: number;
  newRequests: number;
  retransmissions: number;
  messages: number;
  flags: Record<FlagName, number>;
  /** True when the capture does not hold every request (lost before the capture point, or by the capture): requester rules are then not checked. */
  lossBeforeCapture: boolean;
  /** Capture gaps in this flow: runs of requests the responder got that the capture does not hold. */
  captureGaps: number;
  /** Requests (PSNs) in those gaps. */
  unseenPsns: number;
  /** The capture joined this flow after it started. */
  startedMidway: boolean;
  pathMtu: number | null;
  rttMinNs: number | null;
  goodputBytes: number;
  /** New payload bytes per bin; Gbit/s = values[i] * 8 / binNs. */
  goodput: SeriesJson;
  /** Most PSNs outstanding (sent, not acknowledged) in each bin. */
  outstanding: SeriesJson;
  ackReqPackets: number;
  acks: number;
  /** AckReq requests per ACK: 1 = every AckReq answered by its own ACK; higher = coalesced. */
  ackCoalescingRatio: number | null;
  /** Message sizes: count of messages of at most `upTo` bytes (and more than upTo/2). */
  messageSizes: { upTo: number; count: number }[];
  completion: { count: number; minNs: number | null; meanNs: number | null; maxNs: number | null };
  readLatency: { count: number; minNs: number | null; meanNs: number | null; maxNs: number | null };
  atomicLatency: { count: number; minNs: number | null; meanNs: number | null; maxNs: number | null };
}

export interface ConversationJson {
  id: number;
  type: string;
  a: { ip: string; qpn: number | null };
  b: { ip: string; qpn: number | null };
  frames: number;
  firstFrame: number;
  lastFrame: number;
  startNs: number;
  durationNs: number;
  cnps: number;
  /** The conversation that took one of its endpoints over (a QPN reused by a new connection), or null. */
  closedBy: number | null;
  /** Established by an RDMA CM exchange (REQ and REP) the capture holds: QPNs and first PSNs from it. */
  cmEstablished: boolean;
  /** The id of that CM connection (`cmConnections[]`), or null. */
  cmConnection: number | null;
  /** The frame of the DREP (or REJ) that ended it, after which its QPNs start a new conversation; or null. */
  cmEndedFrame: number | null;
  flows: FlowJson[];
  /** Per requester with ECN marks or CNPs: the marks, the CNPs, CE-to-CNP delay, CNP interval and its rate around each CNP (analysis/congestion-track.ts). */
  congestion: (CongestionReport & { requester: 'a' | 'b' })[];
}

/** The analysis as `roce analyze --json` prints it (keys in docs/analysis.md). */
export interface AnalysisDocument {
  format: 'roce-analysis';
  version: number;
  file: string;
  /** The first frame's capture time: seconds since the epoch as a decimal string with the capture's decimals (6 for µs, 9 for ns). */
  startTime: string;
  durationNs: number;
  frameCounts: AnalysisResult['frames'];
  summary: {
    conversations: number;
    messages: number;
    retransmissions: number;
    episodes: RecoveryCounts;
    violations: number;
    /** Findings of the `rxe` class (rxe-behaviours.ts) by kind: behaviour IBTA leaves to the implementation, never violations. */
    rxeBehaviours: Record<RxeBehaviourId, number>;
    flags: Record<FlagName, number>;
    /** RDMA CM connections (communication-ID pairs), and how many ended in each state. */
    cmConnections: number;
    cmStates: Record<string, number>;
  };
  conversations: ConversationJson[];
  messages: Message[];
  episodes: Episode[];
  violations: Violation[];
  /** The `rxe` class: what rxe chooses where IBTA is silent, each with the rxe source that does it. */
  rxeBehaviours: RxeBehaviour[];
  /** Per-frame results with their `flags`: flagged frames only (every RoCE frame with --all-frames). */
  frames: FrameResult[];
  captureError: string | null;
  /** Why the analysis ended before the capture did: past the conversation limit (`AnalyzerOptions.maxConversations`); null when it did not. */
  stopped: AnalysisStop | null;
  /** 'unknown', or 'sent' (frames captured as sent, dropped after the capture point: --capture-point sent). */
  capturePoint: AnalysisResult['capturePoint'];
  /** Rules not checked on this capture because of its capture point. */
  rulesNotChecked: AnalysisResult['rulesNotChecked'];
  /** Frames captured versus implied, truncated frames, ICRC preserved or not, where the capture started. */
  captureQuality: AnalysisResult['captureQuality'];
  /** Requests the capture missed although the responder got them (flags notCaptured / ackedUnseen). */
  captureGaps: CaptureGap[];
  /** RDMA CM connections: hosts, QPNs, start PSNs, service, timing, retries, MRA, REJ, DREQ/DREP, SIDR, final state. */
  cmConnections: CmConnection[];
  /** Why a connection never came up (connection-doctor.ts): present only when the frames show a cause. */
  diagnosis?: Diagnosis[];
}

const series = (s: TimeSeries): SeriesJson => ({ binNs: s.binNs, values: [...s.bins] });

function flowJson(f: RequesterFlow, messages: number): FlowJson {
  const g = f.figures;
  return {
    requester: f.requester,
    responderQpn: f.responderQpn,
    requests: f.requests,
    responses: f.responses,
    newRequests: g.newRequests,
    retransmissions: f.counts.retransmission,
    messages,
    flags: { ...f.counts },
    lossBeforeCapture: f.lossBeforeCapture,
    captureGaps: f.captureGaps,
    unseenPsns: f.unseenPsns,
    startedMidway: f.startedMidway,
    pathMtu: f.pmtu === 0 ? null : f.pmtu,
    rttMinNs: Number.isFinite(f.rttMinNs) ? f.rttMinNs : null,
    goodputBytes: g.goodputBytes,
    goodput: series(g.goodput),
    outstanding: series(g.outstanding),
    ackReqPackets: g.ackReqPackets,
    acks: g.acks,
    ackCoalescingRatio: g.acks === 0 ? null : Math.round((g.ackReqPackets / g.acks) * 1000) / 1000,
    messageSizes: g.sizes.buckets(),
    completion: g.completion.toJson(),
    readLatency: g.readLatency.toJson(),
    atomicLatency: g.atomicLatency.toJson(),
  };
}

function conversationJson(c: Conversation, msgCount: (id: number, side: Side) => number): ConversationJson {
  const flows: FlowJson[] = [];
  for (const side of ['a', 'b'] as const) {
    const f = c.flows[side];
    if (f !== null) flows.push(flowJson(f, msgCount(c.id, side)));
  }
  return {
    id: c.id,
    type: c.type,
    a: { ...c.a },
    b: { ...c.b },
    frames: c.frames,
    firstFrame: c.firstFrame,
    lastFrame: c.lastFrame,
    startNs: c.firstNs,
    durationNs: c.lastNs - c.firstNs,
    cnps: c.cnps,
    closedBy: c.closedBy,
    cmEstablished: c.cmEstablished,
    cmConnection: c.cmConnection,
    cmEndedFrame: c.cmEndedFrame,
    flows,
    congestion: (['a', 'b'] as const).flatMap((side) => {
      const rep = c.congestion[side]?.report() ?? null;
      return rep === null ? [] : [{ requester: side, ...rep }];
    }),
  };
}

/**
 * The JSON document for an analysis of `file`. `report`: the conversations reported, when the
 * analysis reported only some (`AnalyzerOptions.report`, the same predicate): the document lists
 * those and the CM connections that set them up; the frame counts and the capture quality stay the
 * capture's.
 */
export function analysisDocument(r: AnalysisResult, file: string, report?: (conversation: number) => boolean): AnalysisDocument {
  const episodes = { ...r.episodesByTrigger };
  const flags = Object.fromEntries(FLAG_NAMES.map((n) => [n, r.flagCounts[n]])) as Record<FlagName, number>;
  const conversations = report === undefined ? r.conversations : r.conversations.filter((c) => report(c.id));
  const cmConnections = report === undefined ? r.cmConnections : r.cmConnections.filter((c) => c.conversation !== null && report(c.conversation));
  const cmStates: Record<string, number> = {};
  for (const c of cmConnections) cmStates[c.state] = (cmStates[c.state] ?? 0) + 1;
  return {
    format: 'roce-analysis',
    version: ANALYSIS_FORMAT_VERSION,
    file,
    startTime: secondsText(r.startTime),
    durationNs: r.durationNs,
    frameCounts: { ...r.frames },
    summary: {
      conversations: conversations.length,
      messages: r.messageCount,
      retransmissions: r.flagCounts.retransmission,
      episodes,
      violations: r.violationCount,
      rxeBehaviours: { ...r.rxeBehavioursById },
      flags,
      cmConnections: report === undefined ? r.cmConnectionCount : cmConnections.length,
      cmStates,
    },
    conversations: conversations.map((c) => conversationJson(c, (id, side) => r.messagesPerFlow.get(flowKey(id, side)) ?? 0)),
    messages: r.messages,
    episodes: r.episodes,
    violations: r.violations,
    rxeBehaviours: r.rxeBehaviours,
    frames: r.frameResults,
    captureError: r.captureError === null ? null : r.captureError.message,
    stopped: r.stopped,
    capturePoint: r.capturePoint,
    rulesNotChecked: r.rulesNotChecked,
    captureQuality: { ...r.captureQuality },
    captureGaps: r.captureGaps,
    cmConnections,
    ...(r.diagnosis.length > 0 ? { diagnosis: r.diagnosis } : {}),
  };
}
