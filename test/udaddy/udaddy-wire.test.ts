/**
 * udaddy's exchange between two stacks on the in-memory link (virtual clock), read off the wire:
 * the SIDR_REQ (UDP port space service ID, P_Key, the CMA private-data header), the SIDR_REP (QPN
 * and Q_Key 0x01234567), the datagrams (SEND_WITH_IMM, the sender's QPN as immediate, Q_Key, size)
 * and the replies (the server's buffer from its start: the GRH area of what it received, then the
 * datagram's bytes); and a SIDR_REQ nobody answers: 1 + 15 sends one CM response timeout apart,
 * then UNREACHABLE with -ETIMEDOUT.
 */
import { createSimPair, SIM_IP_A, SIM_IP_B, type SimPair } from '../../apps/sim/sim-pair';
import { pumpVirtualClock } from '../../apps/host/clock-pump';
import { runUdaddy, type UdaddyResult } from '../../apps/udaddy/udaddy';
import { UdaddyError } from '../../apps/udaddy/udaddy-error';
import { decodeFrame } from '../../packets/decode';
import { opcodeName } from '../../packets/opcodes';
import type { FrameTap } from '../../nic-driver/pcap-tap';
import { cmTimeNs } from '../../stack/cm/timers';

interface Seen {
  t: number;
  from: string;
  frame: ReturnType<typeof decodeFrame>;
  bytes: Uint8Array;
}

function tapped(seed = 3): { sim: SimPair; seen: Seen[] } {
  const seen: Seen[] = [];
  const tap: FrameTap = {
    record(frame, timeNs, direction) {
      seen.push({ t: timeNs, from: direction === 'a->b' ? SIM_IP_A : SIM_IP_B, frame: decodeFrame(frame), bytes: frame.slice() });
    },
    close() {},
  };
  return { sim: createSimPair({ seed, tap }), seen };
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const v4 = (a: Uint8Array): string => Array.from(a.subarray(12)).join('.');

test('SIDR_REQ, SIDR_REP, ten datagrams and ten replies, as udaddy and the kernel CM put them on the wire', async () => {
  const { sim, seen } = tapped();
  const pump = pumpVirtualClock(sim.clock);
  try {
    const server = runUdaddy(sim.b, { role: 'server' });
    const client = runUdaddy(sim.a, { role: 'client', dst: SIM_IP_B });
    const [s, c] = (await Promise.all([server, client])) as [UdaddyResult, UdaddyResult];
    expect(c).toMatchObject({ ok: true, returnStatus: 0, connected: 1 });
    expect(s).toMatchObject({ ok: true, returnStatus: 0, connected: 1, rejected: 0 });
    const cn = c.nodes[0];
    const sn = s.nodes[0];
    if (cn === undefined || sn === undefined) throw new Error('no node');

    const cm = seen.filter((x) => x.frame.roce && x.frame.mad?.cm != null);
    expect(cm.map((x) => `${x.from} ${x.frame.roce ? x.frame.mad?.cm?.name : ''}`)).toEqual([`${SIM_IP_A} SIDR_REQ`, `${SIM_IP_B} SIDR_REP`]);
    const [reqF, repF] = cm.map((x) => x.frame);
    if (!reqF?.roce || !repF?.roce) throw new Error('not RoCE');
    const req = reqF.mad?.cm;
    const rep = repF.mad?.cm;
    if (req?.name !== 'SIDR_REQ' || rep?.name !== 'SIDR_REP') throw new Error('not SIDR');
    // RDMA_PS_UDP (0x0111) << 16 | 7174 (cma.c rdma_get_service_id()), the P_Key of the path (0xffff on RoCE).
    expect(req.fields.serviceId).toBe(0x0000000001111c06n);
    expect(req.fields.pkey).toBe(0xffff);
    // The CMA header (cma_format_hdr()): version 0, IPv4, the client's port and both addresses, zeros after it.
    expect(reqF.mad?.ipCm).toMatchObject({ majorVersion: 0, minorVersion: 0, ipVersion: 4, srcPort: cn.local.port });
    expect(v4(reqF.mad?.ipCm?.srcAddr ?? new Uint8Array(16))).toBe(SIM_IP_A);
    expect(v4(reqF.mad?.ipCm?.dstAddr ?? new Uint8Array(16))).toBe(SIM_IP_B);
    expect(req.fields.privateData.subarray(36).every((b) => b === 0)).toBe(true);
    // The answer: success, the server's QP and RDMA_UDP_QKEY, the request ID and service ID echoed, the same transaction.
    expect(rep.fields).toMatchObject({ status: 0, qpn: sn.local.qpn, qkey: 0x01234567, requestId: req.fields.requestId, serviceId: req.fields.serviceId });
    expect(repF.mad?.header.transactionId).toBe(reqF.mad?.header.transactionId);
    expect(cn.remote).toMatchObject({ qpn: sn.local.qpn, qkey: 0x01234567 });

    const data = seen.filter((x) => x.frame.roce && x.frame.bth !== null && x.frame.bth.destQp !== 1);
    const sends = data.filter((x) => x.from === SIM_IP_A);
    const replies = data.filter((x) => x.from === SIM_IP_B);
    expect(sends).toHaveLength(10);
    expect(replies).toHaveLength(10);
    for (const [list, toQpn, fromQpn] of [
      [sends, sn.local.qpn, cn.local.qpn],
      [replies, cn.local.qpn, sn.local.qpn],
    ] as const) {
      for (const x of list) {
        if (!x.frame.roce) throw new Error('not RoCE');
        expect(opcodeName(x.frame.bth?.opcode ?? -1)).toBe('UD_SEND_ONLY_WITH_IMMEDIATE');
        expect({
          dest: x.frame.bth?.destQp,
          qkey: x.frame.deth?.qkey,
          srcQp: x.frame.deth?.srcQp,
          imm: x.frame.immDt?.value,
          len: x.frame.payloadLength,
        }).toEqual({ dest: toQpn, qkey: 0x01234567, srcQp: fromQpn, imm: fromQpn, len: 100 });
      }
    }
    // A reply is the server's buffer from its start: 20 zero bytes and the IPv4 header of the datagram it received last, then that datagram's first 60 bytes.
    const r = replies[9];
    const s9 = sends[9];
    if (r === undefined || s9 === undefined || !r.frame.roce || !s9.frame.roce) throw new Error('missing');
    const payload = r.bytes.subarray(r.frame.payloadOff, r.frame.payloadOff + 100);
    expect(hex(payload.subarray(0, 20))).toBe('00'.repeat(20));
    expect(hex(payload.subarray(20, 40))).toBe(hex(s9.bytes.subarray(s9.frame.l3Off, s9.frame.l3Off + 20)));
    expect(hex(payload.subarray(40, 100))).toBe(hex(s9.bytes.subarray(s9.frame.payloadOff, s9.frame.payloadOff + 60)));
    expect(cn).toMatchObject({ sent: 10, received: 10, receivedBytes: 1400 });
    expect(sn).toMatchObject({ sent: 10, received: 10, receivedBytes: 1400 });
    expect(c.lines).toEqual([
      'udaddy: starting client',
      'udaddy: connecting',
      'initiating data transfers',
      'receiving data transfers',
      'data transfers complete',
      'test complete',
      'return status 0',
    ]);
  } finally {
    pump.stop();
    sim.link.close();
  }
});

test('a SIDR_REQ nobody answers: sent 16 times (15 retries), one CM response timeout apart, then UNREACHABLE with -ETIMEDOUT', async () => {
  const { sim, seen } = tapped(5);
  const pump = pumpVirtualClock(sim.clock);
  const lines: string[] = [];
  try {
    const t0 = sim.clock.now();
    const err = await runUdaddy(sim.a, { role: 'client', dst: SIM_IP_B, onLine: (l) => lines.push(l) }).catch((e: unknown) => e);
    const ended = sim.clock.now();
    expect(err).toBeInstanceOf(UdaddyError);
    expect(err).toMatchObject({ code: 'ROCE_ERR_UDADDY_UNREACHABLE', status: -110 });
    expect((err as UdaddyError).message).toMatch(/^event RDMA_CM_EVENT_UNREACHABLE, error: -110 \(SIDR_REQ not answered after 15 retries\)$/);
    const reqs = seen.filter((x) => x.frame.roce && x.frame.mad?.cm?.name === 'SIDR_REQ');
    expect(reqs).toHaveLength(16);
    // Every copy is the same MAD (ib_mad resends the buffer), one response timeout (4.096 us x 2^20) after the previous.
    const step = cmTimeNs(20);
    reqs.forEach((x, i) => expect(x.t - (reqs[0] as Seen).t).toBe(i * step));
    const mads = new Set(reqs.map((x) => (x.frame.roce ? hex(x.bytes.subarray(x.frame.payloadOff, x.frame.payloadOff + 256)) : '')));
    expect(mads.size).toBe(1);
    expect(ended - t0).toBeGreaterThanOrEqual(16 * step);
    expect(ended - t0).toBeLessThan(16 * step + 1e9);
    expect(lines).toEqual([
      'udaddy: starting client',
      'udaddy: connecting',
      'udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: -110',
      'test complete',
      'return status -110',
    ]);
  } finally {
    pump.stop();
    sim.link.close();
  }
});
