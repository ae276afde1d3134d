/** ecnAt: the ECN bits of IPv4 (TOS) and IPv6 (traffic class straddling bytes 0 and 1). */
import { buildRoceV2Frame } from '../../packets/build';
import { Ecn, ecnAt } from '../../packets/ecn';
import { Opcode } from '../../packets/opcodes';
import { ETH_LEN } from '../../packets/ethernet';

const bth = { opcode: Opcode.RC_ACKNOWLEDGE, destQp: 0x11, psn: 1 };
const aeth = { syndrome: 0x1f, msn: 0 };
const eth = { src: 0x020000000001, dst: 0x020000000002 };

describe('ecnAt', () => {
  test.each([Ecn.NOT_ECT, Ecn.ECT1, Ecn.ECT0, Ecn.CE])('IPv4 ECN %i, DSCP 46 around it', (e) => {
    const f = buildRoceV2Frame({ eth, ip: { version: 4, src: '198.18.0.1', dst: '198.18.0.2', dscp: 46, ecn: e }, bth, aeth });
    expect(ecnAt(f, ETH_LEN)).toBe(e);
  });

  test.each([Ecn.NOT_ECT, Ecn.ECT1, Ecn.ECT0, Ecn.CE])('IPv6 ECN %i, DSCP 63 and flow label around it', (e) => {
    const f = buildRoceV2Frame({ eth, ip: { version: 6, src: 'fd00::1', dst: 'fd00::2', trafficClass: (63 << 2) | e, flowLabel: 0xfffff }, bth, aeth });
    expect(ecnAt(f, ETH_LEN)).toBe(e);
  });

  test('anything but IPv4 or IPv6 has no ECN', () => {
    expect(ecnAt(new Uint8Array([0x00, 0xff]), 0)).toBe(Ecn.NOT_ECT);
    expect(ecnAt(new Uint8Array(0), 0)).toBe(Ecn.NOT_ECT);
  });
});
