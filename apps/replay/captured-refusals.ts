/**
 * What the real responder's NAKs say about how it was set up, which the capture cannot show
 * otherwise: a responder replay builds the stack's memory regions and QP access flags from it.
 *
 * - A request answered with a Remote Access Error NAK named a key or range the real responder did
 *   not have (C9-88; rxe check_rkey()): it adds no memory region, so that the stack, given it, finds
 *   no region either (a stale R_Key of a region registered again keeps its key index and differs in
 *   the key byte: replay would otherwise build a region under it).
 * - When the first RDMA WRITE, READ, atomic or FLUSH request the capture shows drew an Invalid Request NAK,
 *   the responder's QP did not allow that kind of access (IBTA vol. 1 §10.2.4.1 access flags; rxe
 *   check_op_valid()): the stack's QP is given no such access either. Every other reason for that
 *   NAK (a bad length, a misaligned atomic) draws the same NAK from the stack with or without the
 *   access, so the inference cannot hide a difference in the answer to that request.
 */
import { Access } from '../../stack/access-flags';
import { AethKind, NakCode, decodeSyndrome } from '../../packets/aeth';
import { OpFlag } from '../../packets/opcodes';
import type { CapturedPacket } from './conversation';
import type { CapturedIndex } from './captured-index';

/** Whether the real responder answered request `c` (at its PSN, before it was sent again) with a NAK of `code`. */
export function nakedWith(code: number, c: CapturedPacket, requests: CapturedIndex, responses: CapturedIndex): boolean {
  const psn = c.p.bth?.psn;
  if (psn === undefined) return false;
  const again = requests.next(psn, c.frame)?.frame ?? Number.MAX_SAFE_INTEGER;
  return responses.someBetween(psn, c.frame, again, (r) => {
    if (r.p.aeth === null || ((r.p.info?.flags ?? 0) & (OpFlag.READ | OpFlag.ATOMIC)) !== 0) return false;
    const s = decodeSyndrome(r.p.aeth.syndrome);
    return s.kind === AethKind.NAK && s.value === code;
  });
}

/** Whether the real responder refused request `c` with a Remote Access Error NAK. */
export function refusedAccess(c: CapturedPacket, requests: CapturedIndex, responses: CapturedIndex): boolean {
  return nakedWith(NakCode.REMOTE_ACCESS_ERROR, c, requests, responses);
}

const KINDS: readonly { flag: number; access: number }[] = [
  { flag: OpFlag.WRITE, access: Access.REMOTE_WRITE },
  { flag: OpFlag.READ, access: Access.REMOTE_READ },
  { flag: OpFlag.ATOMIC, access: Access.REMOTE_ATOMIC },
  // A FLUSH refused with Invalid Request: the QP had no flush right (rxe check_qp_attr_access()).
  { flag: OpFlag.FLUSH, access: Access.FLUSH_GLOBAL | Access.FLUSH_PERSISTENT },
];

/**
 * The remote access flags the real responder's QP showed it lacked: those whose first request among
 * `reqs` it answered with an Invalid Request NAK.
 */
export function accessRefused(reqs: readonly CapturedPacket[], requests: CapturedIndex, responses: CapturedIndex): number {
  let refused = 0;
  for (const k of KINDS) {
    const first = reqs.find((c) => ((c.p.info?.flags ?? 0) & (k.flag | OpFlag.START)) === (k.flag | OpFlag.START));
    if (first !== undefined && nakedWith(NakCode.INVALID_REQUEST, first, requests, responses)) refused |= k.access;
  }
  return refused;
}
