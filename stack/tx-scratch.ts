/**
 * The transport specs a device's roles fill in to build a packet: one request spec with its
 * extension headers (requester) and one ACK spec (responder). Building a frame copies what it
 * needs before `transmit` returns and keeps no reference, so one set per device serves every
 * packet without an allocation each; it lives in the device, not in a module, so two devices
 * share nothing.
 */
import type { AtomicEthHeader } from '../packets/atomic-eth';
import type { TransportSpec } from '../packets/build';
import type { DethHeader } from '../packets/deth';
import type { RethHeader } from '../packets/reth';
import type { FethHeader } from '../packets/feth';

/** A request spec whose BTH fields the requester writes in place. */
export type RequestSpec = TransportSpec & { bth: { opcode: number; destQp: number; psn: number; ackReq: boolean; se: boolean } };
/** The spec every ACK and NAK is built from. */
export type AckSpec = TransportSpec & { bth: { opcode: number; destQp: number; psn: number }; aeth: { syndrome: number; msn: number } };

export class TxScratch {
  readonly request: RequestSpec = {
    bth: { opcode: 0, destQp: 0, psn: 0, ackReq: false, se: false },
    reth: undefined,
    feth: undefined,
    atomicEth: undefined,
    immDt: undefined,
    ieth: undefined,
    deth: undefined,
    payload: undefined,
    payloadOffset: undefined,
    payloadLength: undefined,
  };
  readonly reth: RethHeader = { va: 0n, rkey: 0, dmaLength: 0 };
  readonly feth: FethHeader = { selectivity: 0, placementType: 0 };
  readonly atomicEth: AtomicEthHeader = { va: 0n, rkey: 0, swapAdd: 0n, compare: 0n };
  readonly deth: DethHeader = { qkey: 0, srcQp: 0 };
  readonly ack: AckSpec;
  constructor(ackOpcode: number) {
    this.ack = { bth: { opcode: ackOpcode, destQp: 0, psn: 0 }, aeth: { syndrome: 0, msn: 0 } };
  }
}
