/**
 * What a peer's address message may name: checked on arrival, so that a broken or hostile
 * peer gets a MALFORMED error naming the field, not an internal error deep in modifyQp.
 *
 * - QPN: 24 bits (IBTA vol. 1 §9.2, BTH DestQP), and neither QP0 (the SMI) nor QP1 (the GSI):
 *   those are the special QPs of §3.5.4 / §14.2.5, which a connected (RC, UC) or user UD QP
 *   never addresses (ib_modify_qp of an RC QP with dest_qp_num 1 would aim its traffic at the
 *   peer's management agent).
 * - LID: RoCE has no LIDs and rc_pingpong/perftest send their port's LID, 0 on RoCE. A unicast
 *   LID (1..0xBFFF) is tolerated (an IB port's); the multicast range 0xC000..0xFFFE and the
 *   permissive LID 0xFFFF (IBTA vol. 1 §4.1, Table 5 "LID usage") never name one peer port.
 */
import { malformed } from './tcp-channel';

export const MIN_PEER_QPN = 2;
export const MAX_QPN = 0xffffff;
export const MAX_UNICAST_LID = 0xbfff;

export function checkPeerAddress(message: string, a: { lid: number; qpn: number }): void {
  if (!Number.isInteger(a.qpn) || a.qpn < MIN_PEER_QPN || a.qpn > MAX_QPN) {
    const why = a.qpn === 0 || a.qpn === 1 ? ` (QP${a.qpn} is the ${a.qpn === 0 ? 'SMI' : 'GSI'}, a special QP no data QP connects to)` : '';
    throw malformed(message, 'qpn', `must be a QP number in 0x${MIN_PEER_QPN.toString(16)}..0x${MAX_QPN.toString(16)}, got 0x${a.qpn.toString(16)}${why}`);
  }
  if (!Number.isInteger(a.lid) || a.lid < 0 || a.lid > MAX_UNICAST_LID) {
    throw malformed(
      message,
      'lid',
      `must be 0 (RoCE) or a unicast LID up to 0x${MAX_UNICAST_LID.toString(16)}, got 0x${a.lid.toString(16)} (${a.lid === 0xffff ? 'the permissive LID' : 'a multicast LID'})`,
    );
  }
}
