/** Transport tuning for host devices from the environment. */
import { tuningFromEnv } from '../../stack/host-device';

test('window and AckReq spacing from the environment, rxe defaults otherwise', () => {
  expect(tuningFromEnv({})).toEqual({});
  expect(tuningFromEnv({ ROCE_MAX_UNACKED_PSNS: '512', ROCE_MAX_PKTS_PER_ACK: '32' })).toEqual({ maxUnackedPsns: 512, maxPktsPerAck: 32 });
  expect(() => tuningFromEnv({ ROCE_MAX_UNACKED_PSNS: 'lots' })).toThrow(/ROCE_MAX_UNACKED_PSNS must be an integer/);
  expect(() => tuningFromEnv({ ROCE_MAX_PKTS_PER_ACK: '0' })).toThrow(/ROCE_MAX_PKTS_PER_ACK must be an integer/);
});
