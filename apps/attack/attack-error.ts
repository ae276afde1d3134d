/** The typed error of `roce attack`: the target's PSN could not be learned, or the driver stopped taking frames. */
import { RoceError } from '../../base/roce-error';

export const AttackErrorCode = {
  /** The target's PSN could not be learned (nothing came back from it in time). */
  NO_PSN: 'ROCE_ERR_ATTACK_NO_PSN',
  /** The driver stopped taking frames. */
  TX_STALLED: 'ROCE_ERR_ATTACK_TX_STALLED',
} as const;
export type AttackErrorCode = (typeof AttackErrorCode)[keyof typeof AttackErrorCode];
export class AttackError extends RoceError<AttackErrorCode> {}
