/** Memory window types, with the numbers of libibverbs (`verbs.h`). */

/**
 * Memory window types (`enum ibv_mw_type`): type 1 is bound by the bind verb (ibv_bind_mw) and answers
 * on any QP of its PD; type 2 is bound by a BIND_MW work request and answers only on the QP that bound
 * it (IBTA vol. 1 §10.6.7).
 */
export const MwType = { TYPE_1: 1, TYPE_2: 2 } as const;
export type MwType = (typeof MwType)[keyof typeof MwType];
