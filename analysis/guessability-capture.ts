/**
 * The names a capture shows each host handing out, for the guessability report (guessability.ts):
 *  - R_Keys and VAs: of RETH and AtomicETH requests (a zero-length RDMA request names no memory,
 *    C9-88, and is left out), owned by the responder they go to; a region's VA is the lowest
 *    address seen with its R_Key (requests name offsets inside it, and READs resumed by go-back-N
 *    start inside it);
 *  - QP numbers: the destination QP of every RC, UC, XRC and UD frame (owned by its receiver) and
 *    the DETH source QP of UD frames (owned by its sender), QP 0 and 1 (SMI, GSI) aside, and the
 *    local QPN of CM REQs and REPs;
 *  - starting PSNs: the PSN of a connected flow's first request (owned by the requester), and the
 *    Starting PSN of CM REQs and REPs (owned by their sender, which chose it for its receive queue:
 *    the flow that then starts there is not counted again for its requester). UD PSNs are left
 *    out: a UD QP takes any PSN, so they protect nothing.
 */
import { type DecodedFrame, type DecodeOptions, decodeFrame, packetAddresses } from '../packets/decode';
import { OpFlag, Transport } from '../packets/opcodes';
import { iterateCapture } from '../packets/pcap';
import type { WireError } from '../packets/errors';
import { streamCaptureFile } from './capture-stream';
import { GuessCollector, GuessKind, type GuessReport, guessReport } from './guessability';

/** QPs 0 and 1 are the SMI and GSI QPs of every port (IBTA vol. 1 §3.5.8.1): fixed, not handed out. */
const FIRST_HANDED_OUT_QPN = 2;

export class CaptureGuessCollector {
  readonly values = new GuessCollector();
  /** Flows (requester, responder, responder QPN) whose first request has been seen. */
  private readonly flows = new Set<string>();
  /** Starting PSNs a CM message announced: `${user} ${chooser} ${psn}`. */
  private readonly cmPsns = new Set<string>();
  /** Per (responder, R_Key): the lowest VA seen, in the order the keys were first seen. */
  private readonly regions = new Map<string, { host: string; va: bigint }>();
  frames = 0;
  roceFrames = 0;

  push(d: DecodedFrame): void {
    this.frames++;
    if (!d.roce) return;
    const b = d.bth;
    if (b === null) return;
    this.roceFrames++;
    const { src, dst } = packetAddresses(d);
    const cm = d.mad?.cm ?? null;
    if (cm !== null && (cm.name === 'REQ' || cm.name === 'REP')) {
      this.values.add(src, GuessKind.QPN, cm.fields.localQpn);
      this.values.add(src, GuessKind.START_PSN, cm.fields.startingPsn);
      this.cmPsns.add(`${dst} ${src} ${cm.fields.startingPsn}`);
    }
    const info = d.info;
    if (info === undefined) return;
    if (b.destQp >= FIRST_HANDED_OUT_QPN) this.values.add(dst, GuessKind.QPN, b.destQp);
    if (info.transport === Transport.UD) {
      const s = d.deth?.srcQp;
      if (s !== undefined && s >= FIRST_HANDED_OUT_QPN) this.values.add(src, GuessKind.QPN, s);
      return;
    }
    if ((info.flags & OpFlag.REQ) === 0) return;
    const flow = `${src} ${dst} ${b.destQp}`;
    if (!this.flows.has(flow)) {
      this.flows.add(flow);
      if (!this.cmPsns.has(`${src} ${dst} ${b.psn}`)) this.values.add(src, GuessKind.START_PSN, b.psn);
    }
    const memory = d.reth !== null && d.reth.dmaLength > 0 ? d.reth : d.atomicEth;
    if (memory === null) return;
    this.values.add(dst, GuessKind.RKEY, memory.rkey >>> 0);
    const key = `${dst} ${memory.rkey >>> 0}`;
    const r = this.regions.get(key);
    if (r === undefined) this.regions.set(key, { host: dst, va: memory.va });
    else if (memory.va < r.va) r.va = memory.va;
  }

  report(): GuessReport {
    const all = new GuessCollector();
    for (const s of this.values.all()) for (const v of s.values) all.add(s.host, s.kind, v);
    for (const r of this.regions.values()) all.add(r.host, GuessKind.VA, r.va);
    return guessReport(all.all());
  }
}

export interface CaptureGuessResult {
  report: GuessReport;
  frames: number;
  roceFrames: number;
  /** Why the capture ended early, or null: the frames before it are counted. */
  captureError: WireError | null;
}

/** The guessability report of a capture held whole, or of the file at `path`. */
export function guessabilityOfCapture(source: Uint8Array | string, decode: DecodeOptions = {}): CaptureGuessResult {
  const c = new CaptureGuessCollector();
  let captureError: WireError | null;
  if (typeof source === 'string') {
    const it = streamCaptureFile(source);
    for (;;) {
      const step = it.next();
      if (step.done === true) {
        captureError = step.value.error;
        break;
      }
      c.push(decodeFrame(step.value.data, step.value.linkType, decode));
    }
  } else {
    const it = iterateCapture(source);
    for (;;) {
      const step = it.next();
      if (step.done === true) {
        captureError = step.value;
        break;
      }
      c.push(decodeFrame(step.value.data, step.value.linkType, decode));
    }
  }
  return { report: c.report(), frames: c.frames, roceFrames: c.roceFrames, captureError };
}
