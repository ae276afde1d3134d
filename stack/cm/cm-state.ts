/**
 * The states of a communication (IBTA vol. 1 chapter 12, its CM state diagram), numbered
 * as the kernel's `enum ib_cm_state` (include/rdma/ib_cm.h), with a name table for traces.
 */
export const CmState = {
  IDLE: 0,
  LISTEN: 1,
  REQ_SENT: 2,
  REQ_RCVD: 3,
  MRA_REQ_SENT: 4,
  MRA_REQ_RCVD: 5,
  REP_SENT: 6,
  REP_RCVD: 7,
  MRA_REP_SENT: 8,
  MRA_REP_RCVD: 9,
  ESTABLISHED: 10,
  DREQ_SENT: 11,
  DREQ_RCVD: 12,
  TIMEWAIT: 13,
  SIDR_REQ_SENT: 14,
  SIDR_REQ_RCVD: 15,
} as const;
export type CmState = (typeof CmState)[keyof typeof CmState];

export const CM_STATE_NAMES: readonly string[] = Object.freeze(
  Object.entries(CmState)
    .sort((a, b) => a[1] - b[1])
    .map(([name]) => name),
);

export function cmStateName(s: CmState): string {
  return CM_STATE_NAMES[s] ?? `state ${s}`;
}
