/**
 * QP numbers of new QPs.
 *
 * RANDOM: uniform over the free numbers of 0x11..0xffffff, drawn from the device's random source
 * (about 24 bits: a peer that knows one QPN of the device learns nothing of the next). Numbers
 * below 0x11 are never handed out: 0 and 1 are the SMI and GSI QPs (IBTA vol. 1 §3.5.8.1) and rxe
 * keeps 2..0x10 (RXE_MIN_QP_INDEX 16 + 1).
 * SEQUENTIAL: rxe's order, the next free number from 0x11 upward (rxe_pool.c xa_alloc_cyclic()),
 * wrapping to 0x11 after 0xffffff.
 */
import { ProgrammingError, ProgrammingErrorCode } from '../base/programming-error';
import { type RandomSource, uniformBelow } from '../base/random-source';
import { AllocationOrder } from './allocation-order';

/** rxe's first user QP number. */
export const FIRST_QPN = 0x11;
export const QPN_LIMIT = 1 << 24;
const QPNS = QPN_LIMIT - FIRST_QPN;
/** Random draws before a linear search from the last one (reached only when nearly every number is in use). */
const RANDOM_TRIES = 64;

export class QpnAllocator {
  private nextQpn = FIRST_QPN;

  /** `random` is needed for the RANDOM order only. */
  constructor(
    readonly order: AllocationOrder,
    private readonly random: RandomSource | null = null,
  ) {
    if (order === AllocationOrder.RANDOM && random === null)
      throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'QpnAllocator: the random order needs a random source');
  }

  /** A QP number that is not in use (`inUse(qpn)`), or null when every one is; `live` is how many are. */
  next(inUse: (qpn: number) => boolean, live: number): number | null {
    if (live >= QPNS) return null;
    if (this.order === AllocationOrder.SEQUENTIAL) {
      let qpn = this.nextQpn;
      for (let n = 0; inUse(qpn); n++) {
        if (n >= QPNS) return null;
        qpn = qpn + 1 === QPN_LIMIT ? FIRST_QPN : qpn + 1;
      }
      this.nextQpn = qpn + 1 === QPN_LIMIT ? FIRST_QPN : qpn + 1;
      return qpn;
    }
    const r = this.random as RandomSource;
    let qpn = FIRST_QPN;
    for (let t = 0; t < RANDOM_TRIES; t++) {
      qpn = FIRST_QPN + uniformBelow(r, QPNS);
      if (!inUse(qpn)) return qpn;
    }
    for (let n = 0; n < QPNS; n++) {
      qpn = qpn + 1 === QPN_LIMIT ? FIRST_QPN : qpn + 1;
      if (!inUse(qpn)) return qpn;
    }
    return null;
  }
}
