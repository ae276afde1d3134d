/**
 * `roce attack --driver xdp`: the same hostile frames over AF_XDP as over AF_PACKET.
 * The attacker sends from one namespace of a veth pair; an AF_PACKET receiver on the other end
 * (nothing else there, so no program competes for the interface) takes every frame: as many as
 * the attack reports, each a RoCE v2 frame to the target QP, the ICRC valid but for the bad-icrc
 * case.
 *
 * @group netns
 */
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, startRoce } from './harness';
import { AfPacketDriver } from '../../nic-driver/af-packet-driver';
import { type DecodedFrame, decodeFrame } from '../../packets/decode';

const reason = e2eSkipReason();
const t = testUnless(reason);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('roce attack over AF_XDP', () => {
  const net = pairPerFile(reason, { mtu: 1500 });

  t(
    'every case once, then 200 frames in turn: all arrive, to the target QP, ICRCs as the cases say',
    async () => {
      const n = net();
      const rx = AfPacketDriver.open({ ifname: n.ifB, netns: n.nsB, retireMs: 1, udpGuard: false });
      try {
        const got: DecodedFrame[] = [];
        const collect = async (want: number): Promise<void> => {
          const until = Date.now() + 10_000;
          while (got.length < want && Date.now() < until) {
            for (const f of rx.rxBurst(256)) {
              const d = decodeFrame(f);
              if (d.roce) got.push(d);
            }
            await sleep(5);
          }
        };
        const a = await startRoce(n.nsA, ['attack', n.ipB, '--dev', n.ifA, '--driver', 'xdp', '--qpn', '0x11', '--psn', '1000', '--json'], 30_000).done;
        expect({ code: a.code, why: explain(a) }).toMatchObject({ code: 0 });
        const sent = Number(a.json?.['frames']);
        expect(sent).toBeGreaterThanOrEqual(12);
        await collect(sent);
        expect(got).toHaveLength(sent);
        const badIcrc = got.filter((d) => d.roce && d.icrcOk === false).length;
        expect(badIcrc).toBe(1); // the bad-icrc case, and only it
        expect(new Set(got.map((d) => (d.roce ? d.bth?.destQp : -1)))).toEqual(new Set([0x11]));
        got.length = 0;
        const b = await startRoce(
          n.nsA,
          ['attack', n.ipB, '--dev', n.ifA, '--driver', 'xdp', '--qpn', '0x11', '--psn', '1000', '--count', '200', '--json'],
          30_000,
        ).done;
        expect({ code: b.code, why: explain(b) }).toMatchObject({ code: 0 });
        expect(b.json?.['frames']).toBe(200);
        await collect(200);
        expect(got).toHaveLength(200);
      } finally {
        rx.close();
      }
    },
    60_000,
  );
});
