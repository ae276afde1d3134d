/** The typed error of the self-consistency sweep: a case line or a script option it cannot read, a worker that stopped. */
import { RoceError } from '../../base/roce-error';

export const SweepErrorCode = {
  /** A case's one-line form names an unknown key or a value out of range. */
  CASE: 'ROCE_ERR_SWEEP_CASE',
  /** An option of the sweep script (`npm run sweep -- ...`) is unknown or out of range, or a capture it names cannot be read. */
  USAGE: 'ROCE_ERR_SWEEP_USAGE',
  /** A worker thread of the sweep script ended before it had judged all its cases. */
  WORKER: 'ROCE_ERR_SWEEP_WORKER',
} as const;
export type SweepErrorCode = (typeof SweepErrorCode)[keyof typeof SweepErrorCode];

export class SweepError extends RoceError<SweepErrorCode> {
  constructor(message: string, code: SweepErrorCode = SweepErrorCode.CASE) {
    super(code, message);
  }
}
