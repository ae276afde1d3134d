/**
 * CM times: 4.096 µs × 2^code, cm.c's cm_ack_timeout(), and the wait for an answer with
 * librdmacm's defaults on RoCE.
 */
import { CmDefaults, ackTimeoutCode, cmTimeNs, responseWaitNs } from '../../../stack/cm/timers';

test('a code is 4.096 us x 2^code', () => {
  expect(cmTimeNs(0)).toBe(4096);
  expect(cmTimeNs(20)).toBe(4096 * 2 ** 20); // 4.29 s, the REQ's CM response timeouts from rdma_cm
});

test("cm_ack_timeout(): packet life time 18 and rxe ACK delay 15 give 19, the local ACK timeout of rxe's REQ", () => {
  expect(ackTimeoutCode(CmDefaults.caAckDelay, CmDefaults.packetLifeTime)).toBe(19);
  expect(ackTimeoutCode(15, 10)).toBe(15); // the CA's delay dominates
  expect(ackTimeoutCode(15, 13)).toBe(16); // 14 >= 15 - 1: one more
  expect(ackTimeoutCode(0, 31)).toBe(31);
});

test("the REQ wait with rdma_cm defaults is 6.44 s (rxe's REQs in captures/rxe are 6.40 s apart; cm.c's formula gives 6.14 s)", () => {
  const ns = responseWaitNs(CmDefaults.packetLifeTime, CmDefaults.responseTimeout);
  expect(ns / 1e9).toBeCloseTo(6.442, 3);
});
