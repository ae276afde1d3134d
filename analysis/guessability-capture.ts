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
 * A key whose every use the responder refused with a NAK remote access error (an R_Key check that
 * failed: IBTA vol. 1 §9.7.5.1, §9.9.3 class C) is not one the responder handed out: a scanner's guess or an
 * auditor's deliberately wrong key. Such keys, and the VAs named with them, stay out of the series
 * and are counted apart (refusedRkeys). A NAK is matched to its request by the two hosts and the
 * PSN (a response names the requester's QP, the request the responder's, so the QP pair is not
 * on both).
 */
import { type DecodedFrame, type DecodeOptions, decodeFrame, packetAddresses } from '../packets/decode';
import { AethKind, NakCode, decodeSyndrome } from '../packets/aeth';
import { OpFlag, Transport } from '../packets/opcodes';
import type { WireError } from '../packets/errors';
import { forEachRecord } from './capture-stream';
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
  /** Per (responder, R_Key): its uses, each `${responder} ${requester} ${psn}` of the request that named it. */
  private readonly keyUses = new Map<string, { host: string; rkey: number; uses: Set<string> }>();
  /** Requests the responder refused with a NAK remote access error: `${responder} ${requester} ${psn}`. */
  private readonly refusedUses = new Set<string>();
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
    if ((info.flags & OpFlag.REQ) === 0) {
      const a = d.aeth;
      if (a === null) return;
      const syn = decodeSyndrome(a.syndrome);
      if (syn.kind === AethKind.NAK && syn.value === NakCode.REMOTE_ACCESS_ERROR) this.refusedUses.add(`${src} ${dst} ${b.psn}`);
      return;
    }
    const flow = `${src} ${dst} ${b.destQp}`;
    if (!this.flows.has(flow)) {
      this.flows.add(flow);
      if (!this.cmPsns.has(`${src} ${dst} ${b.psn}`)) this.values.add(src, GuessKind.START_PSN, b.psn);
    }
    const memory = d.reth !== null && d.reth.dmaLength > 0 ? d.reth : d.atomicEth;
    if (memory === null) return;
    const rkey = memory.rkey >>> 0;
    const key = `${dst} ${rkey}`;
    let u = this.keyUses.get(key);
    if (u === undefined) {
      u = { host: dst, rkey, uses: new Set() };
      this.keyUses.set(key, u);
    }
    u.uses.add(`${dst} ${src} ${b.psn}`);
    const r = this.regions.get(key);
    if (r === undefined) this.regions.set(key, { host: dst, va: memory.va });
    else if (memory.va < r.va) r.va = memory.va;
  }

  /** Keys (responder and R_Key) whose every use was refused with a NAK remote access error. */
  private refused(): Set<string> {
    const out = new Set<string>();
    for (const [key, u] of this.keyUses) if ([...u.uses].every((use) => this.refusedUses.has(use))) out.add(key);
    return out;
  }

  /** How many keys the responders refused at every use, per responder; they are not in the report. */
  refusedRkeys(): { host: string; count: number }[] {
    const per = new Map<string, number>();
    for (const key of this.refused()) {
      const host = this.keyUses.get(key)?.host as string;
      per.set(host, (per.get(host) ?? 0) + 1);
    }
    return [...per].map(([host, count]) => ({ host, count }));
  }

  report(): GuessReport {
    const all = new GuessCollector();
    const refused = this.refused();
    // R_Keys first, in the order first seen, so the series keeps the order of the kinds.
    for (const [key, u] of this.keyUses) if (!refused.has(key)) all.add(u.host, GuessKind.RKEY, u.rkey);
    for (const s of this.values.all()) for (const v of s.values) all.add(s.host, s.kind, v);
    for (const [key, r] of this.regions) if (!refused.has(key)) all.add(r.host, GuessKind.VA, r.va);
    return guessReport(all.all());
  }
}

export interface CaptureGuessResult {
  report: GuessReport;
  /** Per responder, the R_Keys it refused at every use (NAK remote access error): left out of the report, which counts only keys it handed out. */
  refusedRkeys: { host: string; count: number }[];
  frames: number;
  roceFrames: number;
  /** Why the capture ended early, or null: the frames before it are counted. */
  captureError: WireError | null;
}

/** The guessability report of a capture held whole, or of the file at `path`. */
export function guessabilityOfCapture(source: Uint8Array | string, decode: DecodeOptions = {}): CaptureGuessResult {
  const c = new CaptureGuessCollector();
  const captureError = forEachRecord(source, (rec) => c.push(decodeFrame(rec.data, rec.linkType, decode)));
  return { report: c.report(), refusedRkeys: c.refusedRkeys(), frames: c.frames, roceFrames: c.roceFrames, captureError };
}
