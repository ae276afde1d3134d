/**
 * What a queue pair's roles (requester.ts, responder.ts, completer.ts) need from the device the
 * QP lives on, and nothing more: the clock for timers, the tuning of the request window, the
 * memory-key checks, a way to send a packet (the device's port builds the frame and queues it
 * for the next burst), a way to ask for the requester to run, and the trace. The roles reach it
 * as `qp.ctx`; the device implements it (stack/device.ts), and a test may give a QP another.
 *
 *   transmit:  post -> requester -> ctx.transmit -> port -> driver
 *   receive:   driver -> port (decode, ICRC) -> responder | completer -> completion queue
 */
import type { Clock } from '../base/clock';
import type { TransportSpec } from '../packets/build';
import type { Path } from './address';
import type { MrLookup } from './memory-region';
import type { AhAttr } from './qp-attributes';
import type { QueuePair } from './queue-pair';
import type { TraceEvent } from './trace';
import type { Mtu } from './mtu';
import type { TxScratch } from './tx-scratch';
import type { InflightBound } from './inflight-bound';
import type { TxGate } from './tx-gate';

/** How the requester paces itself (rxe module parameters). */
export interface QpTuning {
  /** Outstanding PSNs per QP (rxe: RXE_MAX_UNACKED_PSNS = 128). */
  readonly maxUnackedPsns: number;
  /** Packets between AckReq bits inside a long message (rxe: RXE_MAX_PKT_PER_ACK = 64). */
  readonly maxPktsPerAck: number;
  /** Packets a requester sends before yielding to other work. */
  readonly burst: number;
}

export interface QpContext {
  readonly clock: Clock;
  readonly tuning: QpTuning;
  /** The device's memory regions, checked by key (R_Key for remote access, L_Key for SGEs). */
  readonly mrs: MrLookup;
  /** Builds the frame of a packet of `qp` on `path` and queues it for the next burst (keeps no reference to `t`). */
  transmit(qp: QueuePair, t: TransportSpec, path: Path): void;
  /** Hands the queued frames to the driver now (the device also does so after every burst of work). */
  flush(): void;
  /** Asks for the requester of `qp` to run soon. */
  kick(qp: QueuePair): void;
  /**
   * Takes the frames the driver holds already (a host driver's receive ring) through the receive
   * path now: a local ACK timer that comes due calls it before it acts, since an answer may have
   * arrived while the process was held up. Nothing happens on a simulated link.
   */
  pollReceived(): void;
  /** The specs the roles fill in to build a packet (see tx-scratch.ts). */
  readonly scratch: TxScratch;
  /** Reports a protocol event; `make` runs only when someone listens. */
  trace(make: () => TraceEvent): void;
  /** The device-wide bound on packets in flight across QPs (stack/inflight-bound.ts), or null for none. */
  readonly inflight: InflightBound | null;
  /**
   * The gate of a driver with transmit backpressure (stack/tx-gate.ts): no new request packets while
   * its transmit queue is full or paused. Null for a driver without it (the memory link, the host drivers).
   */
  readonly txGate: TxGate | null;
  /** Where the responder holds the ACKs it owes (stack/ack-coalescer.ts, stack/ack-deferral.ts), or null: each goes at once. */
  readonly acks: AckHold | null;
}

/**
 * Where the responder holds ACKs for a while instead of sending each at once: coalesced per receive
 * burst (stack/ack-coalescer.ts), or each kept and sent after the device's next transmit work
 * (stack/ack-deferral.ts). A QP holding any has `resp.ackHeld` set, and the responder releases them
 * before anything else it sends the QP.
 */
export interface AckHold {
  /** True when the responder should hold the ACK it owes now (false: send it at once). */
  readonly holding: boolean;
  /** `qp` owes an ACK for `psn`; `syndrome` is its AETH syndrome (the credits) as of now. */
  hold(qp: QueuePair, psn: number, syndrome: number): void;
  /** Sends what `qp` holds now. */
  release(qp: QueuePair): void;
  /** Sends everything held. */
  releaseAll(): void;
}

/** What the queue pair's own verbs entry points need besides (modify checks the MTU and resolves the path). */
export interface QpHost extends QpContext {
  /** The largest path MTU the link carries. */
  maxMtu(): Mtu;
  /** Turns an address vector into a path (throws VerbsError when it cannot). */
  resolvePath(ah: AhAttr): Path;
}
