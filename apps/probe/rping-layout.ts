/**
 * The request PSNs of an rping run (librdmacm examples/rping.c) as a scenario counts them, and the
 * events that fit each. rping has one RC QP, and only its server (`rping -s`) moves data: each ping
 * of rping_test_server() is, on the server's send queue, in this order and each only once the one
 * before has completed (sem_wait on the CQ thread's state):
 *
 *   an RDMA READ of the client's start buffer (remote_len = the client's -S bytes),
 *   a SEND "go ahead" (16 bytes, struct rping_rdma_info),
 *   an RDMA WRITE of what it read into the client's rdma buffer (strlen(rdma_buf) + 1 bytes: the
 *     client fills its start buffer with -S - 1 letters and a NUL, so -S bytes),
 *   a SEND "go ahead".
 *
 * The client (`rping -c`) only SENDs its two buffer advertisements per ping; those are requests of
 * the other direction, on the client's own PSNs, and no event names them. So a scenario's relative
 * PSN counts the server's request packets from its first PSN: with P = ceil(-S / path MTU) the ping
 * takes 2P + 2 PSNs, the READ the first P (one request, P response PSNs), the first SEND one, the
 * WRITE P, the second SEND one. The DUT is the requester when it runs `rping -s`, the responder
 * when it runs `rping -c`.
 */
import { type OpcodeName, Opcode } from '../../packets/opcodes';

/** The four operations of a ping, in the order rping_test_server() posts them. */
export const RpingOp = { READ: 'read', READ_GO_AHEAD: 'read-go-ahead', WRITE: 'write', WRITE_GO_AHEAD: 'write-go-ahead' } as const;
export type RpingOp = (typeof RpingOp)[keyof typeof RpingOp];

/** Where a relative PSN falls: which ping, which operation, the packet within it and the opcodes on the wire there. */
export interface RpingPsn {
  ping: number;
  op: RpingOp;
  /** The operation's first relative PSN. */
  first: number;
  /** Packets (PSNs) of the operation. */
  packets: number;
  /** The PSN's place in the operation, from 0. */
  offset: number;
  /** The server's request at the PSN, or null (a READ's PSNs past its first carry only its responses). */
  request: number | null;
  /** The client's answer at the PSN: a READ response, or the ACK of a SEND or WRITE (null for a SEND or WRITE packet a later one's ACK covers). */
  response: number | null;
}

/** Packets of one message of `size` bytes at `mtu` (a zero-byte message is one packet). */
function packets(size: number, mtu: number): number {
  return Math.max(1, Math.ceil(size / mtu));
}

/** PSNs one ping takes on the server's send queue. */
export function rpingPsnsPerPing(size: number, mtu: number): number {
  return 2 * packets(size, mtu) + 2;
}

const op = (name: OpcodeName): number => Opcode[name];

/** The k-th of n packets of a multi-packet operation: FIRST, MIDDLE, LAST, or ONLY when n is 1. */
function part(k: number, n: number, only: OpcodeName, first: OpcodeName, middle: OpcodeName, last: OpcodeName): number {
  if (n === 1) return op(only);
  return op(k === 0 ? first : k === n - 1 ? last : middle);
}

/** What relative PSN `rel` of an rping run of pings of `size` bytes at path MTU `mtu` is. */
export function rpingPsnAt(rel: number, size: number, mtu: number): RpingPsn {
  const p = packets(size, mtu);
  const per = rpingPsnsPerPing(size, mtu);
  const ping = Math.floor(rel / per);
  const at = rel % per;
  if (at < p)
    return {
      ping,
      op: RpingOp.READ,
      first: ping * per,
      packets: p,
      offset: at,
      request: at === 0 ? op('RC_RDMA_READ_REQUEST') : null,
      response: part(at, p, 'RC_RDMA_READ_RESPONSE_ONLY', 'RC_RDMA_READ_RESPONSE_FIRST', 'RC_RDMA_READ_RESPONSE_MIDDLE', 'RC_RDMA_READ_RESPONSE_LAST'),
    };
  if (at === p)
    return { ping, op: RpingOp.READ_GO_AHEAD, first: ping * per + p, packets: 1, offset: 0, request: op('RC_SEND_ONLY'), response: op('RC_ACKNOWLEDGE') };
  if (at < 2 * p + 1) {
    const k = at - p - 1;
    return {
      ping,
      op: RpingOp.WRITE,
      first: ping * per + p + 1,
      packets: p,
      offset: k,
      request: part(k, p, 'RC_RDMA_WRITE_ONLY', 'RC_RDMA_WRITE_FIRST', 'RC_RDMA_WRITE_MIDDLE', 'RC_RDMA_WRITE_LAST'),
      // The WRITE's last packet asks for the ACK that completes it (AckReq); the responder may coalesce the rest.
      response: k === p - 1 ? op('RC_ACKNOWLEDGE') : null,
    };
  }
  return {
    ping,
    op: RpingOp.WRITE_GO_AHEAD,
    first: ping * per + 2 * p + 1,
    packets: 1,
    offset: 0,
    request: op('RC_SEND_ONLY'),
    response: op('RC_ACKNOWLEDGE'),
  };
}

const NAMES: Record<RpingOp, string> = {
  [RpingOp.READ]: 'RDMA READ',
  [RpingOp.READ_GO_AHEAD]: 'SEND "go ahead" after the READ',
  [RpingOp.WRITE]: 'RDMA WRITE',
  [RpingOp.WRITE_GO_AHEAD]: 'SEND "go ahead" after the WRITE',
};

/** "the RDMA WRITE of ping 0 (PSNs 5-8)": the operation a PSN falls in, for messages. */
export function describeRpingPsn(w: RpingPsn): string {
  const span = w.packets === 1 ? `PSN ${w.first}` : `PSNs ${w.first}-${w.first + w.packets - 1}`;
  return `the ${NAMES[w.op]} of ping ${w.ping} (${span})`;
}
