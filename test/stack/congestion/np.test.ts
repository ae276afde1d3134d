/**
 * The notification point on its own: the CNP's headers per path (VLAN priority by
 * np_cnp_prio_mode, DSCP, ECT(0), UDP source port 0, IPv6 traffic class) and the per-QP
 * rate limit on the clock.
 */
import { VirtualClock } from '../../../base/clock';
import { NotificationPoint } from '../../../stack/congestion/np';
import { resolveCongestion, type NpParams } from '../../../stack/congestion/parameters';
import type { Path } from '../../../stack/address';
import { decodeFrame, type RocePacket } from '../../../packets/decode';
import { Opcode } from '../../../packets/opcodes';
import { Ecn } from '../../../packets/ecn';
import { ipv6FromString } from '../../../packets/bytes';

function np(params: Partial<NpParams> = {}): { clock: VirtualClock; n: NotificationPoint } {
  const clock = new VirtualClock(0);
  return { clock, n: new NotificationPoint(clock, resolveCongestion({ np: true, params }).params) };
}

function path(over: Partial<Path> = {}): Path {
  return {
    srcMac: 0x020000000001,
    dstMac: 0x020000000002,
    ipVersion: 4,
    srcIp: new Uint8Array([198, 18, 0, 1]),
    dstIp: new Uint8Array([198, 18, 0, 2]),
    trafficClass: 0,
    flowLabel: 0,
    hopLimit: 64,
    vlan: null,
    ...over,
  };
}

function cnpOn(n: NotificationPoint, p: Path): RocePacket {
  const t = n.packet(0x123);
  const tpl = n.template(p);
  const f = new Uint8Array(tpl.frameLength(t));
  tpl.emitInto(t, f, new DataView(f.buffer), 0, true);
  const d = decodeFrame(f);
  if (!d.roce || d.error !== null) throw new Error('the CNP does not decode');
  return d;
}

describe('notification point', () => {
  test('VLAN priority: the path’s own in mode 1 (default), np_cnp_prio in mode 0', () => {
    const tagged = path({ vlan: { vid: 100, pcp: 3, dei: 0, tpid: 0x8100 } });
    expect(cnpOn(np().n, tagged).eth?.vlan).toMatchObject({ vid: 100, pcp: 3 });
    expect(cnpOn(np({ npCnpPrioMode: 0 }).n, tagged).eth?.vlan).toMatchObject({ vid: 100, pcp: 6 });
    expect(cnpOn(np({ npCnpPrioMode: 0, npCnpPrio: 5 }).n, tagged).eth?.vlan).toMatchObject({ vid: 100, pcp: 5 });
  });

  test('IPv6: traffic class = np_cnp_dscp and ECT(0); UDP source port 0; ICRC good', () => {
    const p6 = path({ ipVersion: 6, srcIp: ipv6FromString('fd00::1'), dstIp: ipv6FromString('fd00::2'), flowLabel: 0x12345 });
    const d = cnpOn(np({ npCnpDscp: 46 }).n, p6);
    expect(d.ipv6?.trafficClass).toBe((46 << 2) | Ecn.ECT0);
    expect(d.ipv6?.flowLabel).toBe(0x12345);
    expect(d.udp?.srcPort).toBe(0);
    expect(d.bth).toMatchObject({ opcode: Opcode.CNP, becn: true, psn: 0, destQp: 0x123 });
    expect(d.icrcOk).toBe(true);
  });

  test('one CNP per np_min_time_between_cnps on the clock', () => {
    const { clock, n } = np({ npMinTimeBetweenCnps: 4 });
    expect(n.due()).toBe(true);
    clock.runUntil(3999);
    expect(n.due()).toBe(false);
    clock.runUntil(4000);
    expect(n.due()).toBe(true);
    expect(n.due()).toBe(false);
  });
});
