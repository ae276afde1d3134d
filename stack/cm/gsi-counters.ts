/**
 * Counters of the GSI (QP 1) and of the CM on it.
 *
 * The CM counters are the kernel's (drivers/infiniband/core/cm.c `cm_counter_groups`, shown in
 * /sys/class/infiniband/<dev>/ports/<n>/cm_tx_msgs/, cm_tx_retries/, cm_rx_msgs/ and
 * cm_rx_duplicates/), one per message: req, mra, rej, rep, rtu, dreq, drep, sidr_req, sidr_rep,
 * lap, apr.
 *
 * The kernel's MAD layer (ib_mad.c) keeps no counters of the MADs it drops; those below name the
 * place in ib_mad.c where the kernel drops or answers the same MAD, so a count here says which rule
 * applied:
 *   gsi_rcvd_mads             MADs received and handed to a class (after every check)
 *   gsi_sent_mads             MADs sent (responses included)
 *   gsi_bad_length            a datagram that is not one 256-byte MAD (the receive buffer's
 *                             length check, or validate_mad()'s size check)
 *   gsi_bad_base_version      base version not 1 (validate_mad(): IB_MGMT_BASE_VERSION)
 *   gsi_unmatched             no agent for the class, class version and method (find_mad_agent()
 *                             found none): dropped, or answered when a Get or Set
 *   gsi_unsupported_resp_sent the GetResp with status "unsupported method/attribute" sent for such a
 *                             Get or Set (generate_unmatched_resp())
 *   gsi_unknown_attribute     a CM MAD whose attribute has no handler (cm_recv_handler() drops it)
 *   gsi_send_err              a MAD that could not be sent (no route to the peer, no send buffer)
 */
import { CmAttr, type CmAttrName } from '../../packets/mad';
import { zeroCounters } from '../../base/counter-set';

export const GSI_COUNTER_NAMES = [
  'gsi_rcvd_mads',
  'gsi_sent_mads',
  'gsi_bad_length',
  'gsi_bad_base_version',
  'gsi_unmatched',
  'gsi_unsupported_resp_sent',
  'gsi_unknown_attribute',
  'gsi_send_err',
] as const;
export type GsiCounterName = (typeof GSI_COUNTER_NAMES)[number];
export type GsiCounters = Record<GsiCounterName, number>;

export const newGsiCounters = (): GsiCounters => zeroCounters(GSI_COUNTER_NAMES);

/** The kernel's per-message counter names (cm.c `cm_counter_attr`): `req`, `sidr_req`, ... */
export type CmCounterKey = Lowercase<Exclude<CmAttrName, 'CLASS_PORT_INFO'>>;
export const CM_COUNTER_KEYS: readonly CmCounterKey[] = Object.freeze(
  (Object.keys(CmAttr) as CmAttrName[]).filter((n) => n !== 'CLASS_PORT_INFO').map((n) => n.toLowerCase() as CmCounterKey),
);
export type CmMessageCounters = Record<CmCounterKey, number>;

/** The kernel's four CM counter groups. */
export interface CmCounters {
  cm_tx_msgs: CmMessageCounters;
  cm_tx_retries: CmMessageCounters;
  cm_rx_msgs: CmMessageCounters;
  cm_rx_duplicates: CmMessageCounters;
}

function group(): CmMessageCounters {
  return Object.fromEntries(CM_COUNTER_KEYS.map((k) => [k, 0])) as CmMessageCounters;
}

export function newCmCounters(): CmCounters {
  return { cm_tx_msgs: group(), cm_tx_retries: group(), cm_rx_msgs: group(), cm_rx_duplicates: group() };
}
