/**
 * Deliberate breaks that prove the sweep has teeth. Each is a capture point that records a real
 * run of the engine and rewrites what it records the way a broken implementation would have
 * behaved on the wire, with frames the run really sent (copied byte for byte, ICRC intact):
 *  - `early-rnr-retry`: a requester that resends the PSN an RNR NAK named at once, before the RNR
 *    timer runs out (IBTA vol. 1 §9.7.5.2.8: the requester waits the time the RNR NAK's timer code
 *    gives, table 45) -> `rnrWaitRespected`;
 *  - `resend-acked`: a requester that answers a PSN sequence error NAK by resending the request
 *    before the NAK's PSN, which the NAK acknowledged (the NAK's PSN is the responder's expected
 *    PSN, so every earlier one arrived; go-back-N resumes at it: rxe_comp.c check_ack() sets
 *    comp.psn to it for AETH_NAK_PSN_SEQ_ERROR, then retries from there) -> `retransmitFromNakPsn`;
 *  - `second-nak`: a responder that NAKs the same gap again for a request that arrives after its
 *    NAK, before the requester resends (IBTA vol. 1 §9.7.5.2.2: one NAK per gap, until the expected
 *    PSN arrives; rxe_resp.c check_psn() sends it once, `sent_psn_nak`) -> `oneNakPerGap`.
 * Requests and responses are paired by PSN: the QPs' starting PSNs are random 24-bit numbers, so
 * two QPs of a case share a PSN only by a coincidence the mutants' cases (one QP) rule out.
 */
import { decodeFrame, type RocePacket } from '../../packets/decode';
import { AethKind, NakCode, decodeSyndrome } from '../../packets/aeth';
import { OpFlag } from '../../packets/opcodes';
import { psnAdd, psnDiff } from '../../base/psn';
import type { Direction } from '../../nic-driver/faults';
import { PcapTap, type TapPoint } from '../../nic-driver/pcap-tap';
import type { CaseTap } from './case-run';

export const MUTANTS = ['early-rnr-retry', 'resend-acked', 'second-nak'] as const;
export type Mutant = (typeof MUTANTS)[number];

interface Seen {
  p: RocePacket;
  frame: Uint8Array;
  timeNs: number;
  direction: Direction;
}

const isRequest = (p: RocePacket): boolean => ((p.info?.flags ?? 0) & OpFlag.REQ) !== 0;

function syndromeOf(p: RocePacket): { kind: AethKind; value: number } | null {
  if (p.aeth === null || ((p.info?.flags ?? 0) & OpFlag.RESP) === 0) return null;
  return decodeSyndrome(p.aeth.syndrome);
}

/** A capture point that records everything, and lets a mutant add frames after what it sees. */
export class MutantTap implements CaseTap {
  readonly where: TapPoint;
  /** Frames the mutant added to the capture. */
  inserted = 0;
  private readonly inner: PcapTap;
  /** The latest request recorded at each PSN. */
  private readonly requests = new Map<number, Seen>();
  /** second-nak: the NAK waiting for a request after it. */
  private pendingNak: Seen | null = null;

  constructor(
    readonly mutant: Mutant,
    where: TapPoint,
  ) {
    this.where = where;
    this.inner = new PcapTap({ where });
  }

  record(frame: Uint8Array, timeNs: number, direction: Direction): void {
    this.inner.record(frame, timeNs, direction);
    const p = decodeFrame(frame, undefined, { verifyIcrc: false });
    if (!p.roce || p.bth === null || p.error !== null) return;
    const seen: Seen = { p, frame: frame.slice(), timeNs, direction };
    if (isRequest(p)) {
      this.onRequest(seen);
      this.requests.set(p.bth.psn, seen);
      return;
    }
    const s = syndromeOf(p);
    if (s !== null) this.onResponse(seen, s);
  }

  private insert(s: Seen, timeNs: number): void {
    this.inner.record(s.frame.slice(), timeNs, s.direction);
    this.inserted++;
  }

  private onRequest(r: Seen): void {
    const n = this.pendingNak;
    if (this.mutant !== 'second-nak' || n === null || r.p.bth === null || n.p.bth === null) return;
    const d = psnDiff(r.p.bth.psn, n.p.bth.psn);
    if (d === 0) {
      this.pendingNak = null; // the resend arrived first: the gap is closed
    } else if (d > 0) {
      // A request behind the gap, before the resend: a responder that NAKs it again breaks the rule.
      this.pendingNak = null;
      this.insert(n, r.timeNs);
    }
  }

  private onResponse(r: Seen, s: { kind: AethKind; value: number }): void {
    const psn = (r.p.bth as { psn: number }).psn;
    switch (this.mutant) {
      case 'early-rnr-retry': {
        if (s.kind !== AethKind.RNR_NAK) return;
        const q = this.requests.get(psn);
        if (q !== undefined) this.insert(q, r.timeNs);
        return;
      }
      case 'resend-acked': {
        if (s.kind !== AethKind.NAK || s.value !== NakCode.PSN_SEQUENCE_ERROR) return;
        const q = this.requests.get(psnAdd(psn, -1));
        // A READ re-read after a NAK past it is right (an implied NAK for its missing responses).
        if (q !== undefined && ((q.p.info?.flags ?? 0) & OpFlag.READ) === 0) this.insert(q, r.timeNs);
        return;
      }
      case 'second-nak':
        if (s.kind === AethKind.NAK && s.value === NakCode.PSN_SEQUENCE_ERROR) this.pendingNak = r;
        return;
    }
  }

  bytes(): Uint8Array {
    return this.inner.bytes();
  }

  close(): void {
    this.inner.close();
  }
}
