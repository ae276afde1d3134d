/**
 * A queue pair's transport type and state, with the numbers of libibverbs (`verbs.h`) so figures and
 * logs compare directly with rdma-core programs.
 */

/** QP transport types (`enum ibv_qp_type`): RC, UC and UD. */
export const QpType = { RC: 2, UC: 3, UD: 4 } as const;
export type QpType = (typeof QpType)[keyof typeof QpType];

/** QP states (`enum ibv_qp_state`). */
export const QpState = { RESET: 0, INIT: 1, RTR: 2, RTS: 3, SQD: 4, SQE: 5, ERR: 6 } as const;
export type QpState = (typeof QpState)[keyof typeof QpState];
export const QP_STATE_NAMES: readonly string[] = ['RESET', 'INIT', 'RTR', 'RTS', 'SQD', 'SQE', 'ERR'];
