/** The typed errors of `roce probe`: a scenario file outside the YAML subset, a scenario that does not validate, a run that could not be made, a live run its checks refused. */
import { RoceError } from '../../base/roce-error';

export const ProbeErrorCode = {
  /** The scenario text uses YAML outside the subset `roce probe` reads (anchors, tags, block scalars, flow mappings, tabs...), or is malformed. */
  YAML: 'ROCE_ERR_PROBE_YAML',
  /** The scenario parsed but names an unknown key, a value of the wrong type or range, or an event the DUT's role cannot see. */
  SCENARIO: 'ROCE_ERR_PROBE_SCENARIO',
  /** The run could not set up or drive the DUT (a QP that did not connect, a run that did not end in its time bound). */
  RUN: 'ROCE_ERR_PROBE_RUN',
  /** A live run's checks before any traffic (the doctor's: interface, MTU, GIDs, neighbour, RoCE at the DUT) found a problem. */
  DOCTOR: 'ROCE_ERR_PROBE_DOCTOR',
} as const;
export type ProbeErrorCode = (typeof ProbeErrorCode)[keyof typeof ProbeErrorCode];

/** An error of `roce probe`; `line` is the scenario line it is about, when there is one (1-based). */
export class ProbeError extends RoceError<ProbeErrorCode> {
  readonly line: number | null;
  constructor(code: ProbeErrorCode, message: string, line: number | null = null) {
    super(code, line === null ? message : `line ${line}: ${message}`);
    this.line = line;
  }
}
