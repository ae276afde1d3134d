/**
 * CM times. Every CM time field is a 5-bit code for 4.096 µs × 2^code (IBTA vol. 1 chapter 12, tables 106 and 107: the
 * CM response timeouts of REQ, the service timeout of MRA, the local ACK timeout of the path).
 * The kernel approximates a code as 2^(code-8) ms (cm.c cm_convert_to_ms()); this stack uses the
 * exact value. For packet life time 18 and response timeout 20 that is 2 × 1.07 s + 4.29 s = 6.44 s
 * between REQs (the kernel's formula: 6.14 s); captures/rxe/rping-req-retries.pcap shows rxe's REQs
 * 6.40 s apart.
 *
 * The defaults are librdmacm's through the kernel's cma.c: CMA_CM_RESPONSE_TIMEOUT 20,
 * CMA_MAX_CM_RETRIES 15, CMA_IBOE_PACKET_LIFETIME 18 on RoCE, and rxe's local CA ACK delay 15
 * (RXE_LOCAL_CA_ACK_DELAY), which make the local ACK timeout 19 that rxe's REQ carries.
 */

/** 4.096 µs × 2^code in nanoseconds. */
export function cmTimeNs(code: number): number {
  return 4096 * 2 ** code;
}

export const CmDefaults = Object.freeze({
  /** CM response timeout code (cma.c CMA_CM_RESPONSE_TIMEOUT). */
  responseTimeout: 20,
  /** Max CM retries (cma.c CMA_MAX_CM_RETRIES). */
  maxCmRetries: 15,
  /** Packet life time code on RoCE (cma.c CMA_IBOE_PACKET_LIFETIME). */
  packetLifeTime: 18,
  /** rxe's local CA ACK delay code (RXE_LOCAL_CA_ACK_DELAY), the REP's target ACK delay. */
  caAckDelay: 15,
  /** MRA service timeout librdmacm asks for (cma.c CMA_CM_MRA_SETTING, without the delay flag). */
  mraServiceTimeout: 24,
});

/**
 * The local ACK timeout of a path (cm.c cm_ack_timeout()): packet life time + 1, raised to the
 * CA's ACK delay when that is larger.
 */
export function ackTimeoutCode(caAckDelay: number, packetLifeTime: number): number {
  let t = Math.min(31, packetLifeTime + 1);
  if (t >= caAckDelay) t += caAckDelay >= t - 1 ? 1 : 0;
  else t = caAckDelay + (t >= caAckDelay - 1 ? 1 : 0);
  return Math.min(t, 31);
}

/**
 * How long the sender of a REQ, REP, DREQ or LAP waits for the answer before it sends again:
 * twice the packet life time (there and back) plus the time the peer said it needs to answer
 * (IBTA vol. 1 chapter 12, the REQ fields Local/Remote CM Response Timeout of table 106; cm.c
 * ib_send_cm_req() timeout_ms).
 */
export function responseWaitNs(packetLifeTime: number, peerResponseTimeout: number): number {
  return 2 * cmTimeNs(packetLifeTime) + cmTimeNs(peerResponseTimeout);
}
