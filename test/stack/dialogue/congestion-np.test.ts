/**
 * The notification point, by dialogue: CE-marked packets from the scripted peer and the CNPs the
 * stack answers with, held field by field against the CNP a ConnectX-4 Lx sent (the public
 * capture shared/captures/public/scapy-roce-uts/cnp_connectx4lx.pcap).
 */
import * as fs from 'node:fs';
import { scriptedPeer, op, psnPlus, pattern, PEER_QPN, type ScriptedPeer, type InjectSpec } from '../../support/scripted-peer';
import { markEcnCe } from '../../../nic-driver/faults';
import { Opcode } from '../../../packets/opcodes';
import { decodeFrame, type RocePacket } from '../../../packets/decode';
import { readCapture } from '../../../packets/pcap';
import { ROCE_V2_PORT } from '../../../packets/udp';
import { QpType } from '../../../stack/qp-type-and-state';
import { Ecn } from '../../../packets/ecn';
import { testUnless, noPublicCaptures, publicCapture } from '../../support/skip';

const US = 1000;

function write(h: ScriptedPeer, i: number): InjectSpec {
  return {
    bth: { opcode: op('RC_RDMA_WRITE_ONLY'), psn: psnPlus(h.rqPsn, i), ackReq: true },
    reth: { va: h.mr.addr(64 * i), rkey: h.mr.rkey, dmaLength: 16 },
    payload: pattern(16, i),
  };
}

/** The frame of `t` as the peer sends it, with ECN set to CE on the way (a congested switch). */
function marked(h: ScriptedPeer, t: InjectSpec): Uint8Array {
  const f = h.frame(t);
  expect(markEcnCe(f)).toBe(true);
  return f;
}

function cnps(h: ScriptedPeer): RocePacket[] {
  return h
    .sent()
    .filter((s) => s.opcode === Opcode.CNP)
    .map((s) => s.pkt);
}

describe('notification point: CE-marked packets are answered with CNPs', () => {
  test('one CE-marked WRITE → one CNP to the sending QP, before the ACK; counted as mlx5 counts', () => {
    const h = scriptedPeer({ congestion: { np: true } });
    h.injectFrames(marked(h, write(h, 0)));
    const sent = h.sent();
    expect(sent.map((s) => s.op)).toEqual(['CNP', 'RC_ACKNOWLEDGE']);
    expect(sent[0]?.destQp).toBe(PEER_QPN);
    expect(h.qp.counters.np_ecn_marked_roce_packets).toBe(1);
    expect(h.qp.counters.np_cnp_sent).toBe(1);
    // The marked packet itself was accepted and acknowledged as any other.
    expect(h.buf.subarray(0, 16)).toEqual(pattern(16, 0));
  });

  test("Device.sendCnp (roce probe's cnp event): a CNP to the remote QP now, in the notification point's format, whether or not CE came", () => {
    const off = scriptedPeer();
    expect(off.dev.sendCnp(off.qp)).toBe(true);
    expect(off.dev.sendCnp(off.qp)).toBe(true);
    const sent = cnps(off);
    // Two in a row: np_min_time_between_cnps paces answers to CE marks, not CNPs asked for.
    expect(sent).toHaveLength(2);
    const d = sent[0]!;
    expect(d.bth).toMatchObject({ opcode: Opcode.CNP, destQp: PEER_QPN, becn: true, fecn: false, psn: 0, ackReq: false });
    expect(d.udp?.srcPort).toBe(0);
    expect(d.udp?.dstPort).toBe(ROCE_V2_PORT);
    expect(d.ipv4?.dscp).toBe(48);
    expect(d.ipv4?.ecn).toBe(Ecn.ECT0);
    expect(d.icrcOk).toBe(true);
    expect(off.qp.counters.np_cnp_sent).toBe(2);
    // A QP with a notification point of its own builds it with its settings.
    const on = scriptedPeer({ congestion: { np: true, params: { npCnpDscp: 26, npMinTimeBetweenCnps: 50 } } });
    on.dev.sendCnp(on.qp);
    on.dev.sendCnp(on.qp);
    expect(cnps(on).map((c) => c.ipv4?.dscp)).toEqual([26, 26]);
  });

  test('packets without CE get no CNP; with congestion control off, CE gets none either', () => {
    const on = scriptedPeer({ congestion: { np: true } });
    on.inject(write(on, 0));
    expect(on.sent().map((x) => `${x.op} ${x.psn}`)).toEqual([`RC_ACKNOWLEDGE ${on.rqPsn}`]);
    expect(on.qp.counters.np_ecn_marked_roce_packets).toBe(0);
    const off = scriptedPeer();
    off.injectFrames(marked(off, write(off, 0)));
    expect(off.sent().map((s) => s.op)).toEqual(['RC_ACKNOWLEDGE']);
    expect(off.qp.counters.np_ecn_marked_roce_packets).toBe(0);
    expect(off.qp.counters.np_cnp_sent).toBe(0);
  });

  test('np_min_time_between_cnps: at most one CNP per QP per interval, whatever the number of marks', () => {
    const h = scriptedPeer({ congestion: { np: true, params: { npMinTimeBetweenCnps: 50 } } });
    // Ten marked packets 4 µs apart (36 µs): one CNP, for the first.
    for (let i = 0; i < 10; i++) {
      h.injectFrames(marked(h, write(h, i)));
      h.advance(4 * US);
    }
    expect(cnps(h)).toHaveLength(1);
    expect(h.qp.counters.np_ecn_marked_roce_packets).toBe(10);
    // 50 µs after the first CNP the next mark gets one; one ns earlier it does not.
    h.advance(10 * US - 1);
    h.injectFrames(marked(h, write(h, 10)));
    expect(cnps(h)).toHaveLength(0);
    h.advance(1);
    h.injectFrames(marked(h, write(h, 11)));
    expect(cnps(h)).toHaveLength(1);
    expect(h.qp.counters.np_cnp_sent).toBe(2);
    expect(h.qp.counters.np_ecn_marked_roce_packets).toBe(12);
  });

  test('the mlx5 default (np_min_time_between_cnps 0): every marked packet gets its CNP', () => {
    const h = scriptedPeer({ congestion: { np: true } });
    h.injectFrames(marked(h, write(h, 0)), marked(h, write(h, 1)), marked(h, write(h, 2)));
    expect(cnps(h)).toHaveLength(3);
  });

  test('np_cnp_dscp sets the DSCP of the CNPs', () => {
    const h = scriptedPeer({ congestion: { np: true, params: { npCnpDscp: 26 } } });
    h.injectFrames(marked(h, write(h, 0)));
    const [c] = cnps(h);
    expect(c?.ipv4?.dscp).toBe(26);
    expect(c?.ipv4?.ecn).toBe(Ecn.ECT0);
  });

  test('a UC QP sends CNPs too; a UD QP counts the mark and sends none, as ConnectX', () => {
    const uc = scriptedPeer({ qpType: QpType.UC, congestion: { np: true } });
    uc.injectFrames(
      marked(uc, {
        bth: { opcode: op('UC_RDMA_WRITE_ONLY'), psn: uc.rqPsn },
        reth: { va: uc.mr.addr(0), rkey: uc.mr.rkey, dmaLength: 8 },
        payload: pattern(8),
      }),
    );
    expect(uc.sent().map((s) => s.op)).toEqual(['CNP']);
    expect(uc.qp.counters.np_cnp_sent).toBe(1);

    const ud = scriptedPeer({ qpType: QpType.UD, congestion: { np: true } });
    ud.postRecv(1, 0, 4096);
    ud.injectFrames(marked(ud, { bth: { opcode: op('UD_SEND_ONLY'), psn: 0 }, deth: { qkey: 0x11111111, srcQp: 0x77 }, payload: pattern(32) }));
    expect(ud.sent()).toEqual([]);
    expect(ud.qp.counters.np_ecn_marked_roce_packets).toBe(1);
    expect(ud.qp.counters.np_cnp_sent).toBe(0);
    expect(ud.completions()).toHaveLength(1);
  });

  test('with congestion control on, the QP’s own packets are ECN-capable: ECT(0)', () => {
    const h = scriptedPeer({ congestion: { np: true } });
    h.inject(write(h, 0));
    const [ack] = h.sent();
    expect(ack?.pkt.ipv4?.ecn).toBe(Ecn.ECT0);
    const off = scriptedPeer();
    off.inject(write(off, 0));
    expect(off.sent()[0]?.pkt.ipv4?.ecn).toBe(Ecn.NOT_ECT);
  });
});

describe('CNPs received: the reaction point handles them, or they are ignored and counted', () => {
  const cnp = (destQp?: number): InjectSpec => ({ bth: { opcode: Opcode.CNP, psn: 0, becn: true, ...(destQp !== undefined ? { destQp } : {}) } });

  test('with the RP on, a CNP is handled: the QP becomes rate-limited at the rate DCQCN says', () => {
    const h = scriptedPeer({ congestion: { rp: true, lineRateMbps: 40_000 } });
    h.inject(cnp());
    expect(h.qp.counters.rp_cnp_handled).toBe(1);
    expect(h.qp.counters.rp_cnp_ignored).toBe(0);
    const rp = h.qp.cc!.rp!;
    expect(rp.limited).toBe(true);
    // First CNP, mlx5 defaults: α = 1023/1024, R_C = 40000 − 40000·α/2.
    expect(rp.currentRate).toBeCloseTo(40_000 * (1 - 1023 / 2048), 9);
    expect(h.sent()).toEqual([]); // a CNP is never answered
  });

  test('without an RP (congestion control off, or NP only), a CNP is ignored: rp_cnp_ignored', () => {
    const off = scriptedPeer();
    off.inject(cnp());
    expect(off.qp.counters.rp_cnp_ignored).toBe(1);
    const npOnly = scriptedPeer({ congestion: { np: true } });
    npOnly.inject(cnp());
    expect(npOnly.qp.counters.rp_cnp_ignored).toBe(1);
    expect(npOnly.qp.counters.rp_cnp_handled).toBe(0);
    // A CNP for a QP that does not exist is the device's.
    npOnly.inject(cnp(0xabcd));
    expect(npOnly.dev.counters.rp_cnp_ignored).toBe(1);
  });
});

describe('the CNP is the one a ConnectX-4 Lx sends, field by field', () => {
  const withCaptures = testUnless(noPublicCaptures);

  withCaptures('cnp_connectx4lx.pcap: same BTH, reserved bytes, UDP source port, DSCP, ECN, DF, TTL and length', () => {
    const cap = readCapture(fs.readFileSync(publicCapture('scapy-roce-uts/cnp_connectx4lx.pcap')));
    expect(cap.error).toBeNull();
    const theirs = decodeFrame(cap.records[0]!.data);
    if (!theirs.roce) throw new Error('the capture holds no RoCE frame');
    expect(theirs.icrcOk).toBe(true);

    const h = scriptedPeer({ congestion: { np: true } });
    h.injectFrames(marked(h, write(h, 0)));
    const ours = cnps(h)[0] as RocePacket; // the scripted peer has already checked its ICRC and addresses

    // BTH: opcode 0x81, SE/MigReq/pad/TVer 0, P_Key 0xFFFF, FECN 0, BECN 1, reserved 0, AckReq 0, PSN 0.
    const t = theirs.bth!;
    const o = ours.bth!;
    for (const k of ['opcode', 'se', 'migReq', 'padCount', 'tver', 'pkey', 'fecn', 'becn', 'resv6', 'ackReq', 'resv7', 'psn'] as const)
      expect([k, o[k]]).toEqual([k, t[k]]);
    expect(o.opcode).toBe(Opcode.CNP);
    expect(o.becn).toBe(true);
    expect(o.psn).toBe(0);
    // DestQP: theirs names the QP of their peer (0x118), ours the scripted peer's QP.
    expect(t.destQp).toBe(0x118);
    expect(o.destQp).toBe(PEER_QPN);
    // 16 reserved bytes, all zero.
    expect(ours.cnp?.reserved).toEqual(theirs.cnp?.reserved);
    expect(Array.from(ours.cnp!.reserved)).toEqual(new Array(16).fill(0));
    // UDP: source port 0, to 4791; IP: DSCP 48, ECT(0), DF, TTL 64; the same 74-byte frame.
    expect(ours.udp?.srcPort).toBe(theirs.udp?.srcPort);
    expect(ours.udp?.srcPort).toBe(0);
    expect(ours.udp?.dstPort).toBe(ROCE_V2_PORT);
    expect(ours.udp?.length).toBe(theirs.udp?.length);
    for (const k of ['dscp', 'ecn', 'dontFragment', 'ttl', 'totalLength', 'protocol'] as const) expect([k, ours.ipv4?.[k]]).toEqual([k, theirs.ipv4?.[k]]);
    expect(ours.ipv4?.dscp).toBe(48);
    expect(ours.ipv4?.ecn).toBe(Ecn.ECT0);
    expect(ours.ipChecksumOk).toBe(true);
    expect(ours.payloadLength).toBe(0);
    const ourFrame = h.driver.tx.find((f) => decodeFrame(f).roce && (decodeFrame(f) as RocePacket).bth?.opcode === Opcode.CNP)!;
    expect(ourFrame.length).toBe(cap.records[0]!.data.length);
    // Byte for byte from the BTH on, apart from DestQP and the ICRC that covers it.
    const tb = cap.records[0]!.data.subarray(theirs.bthOff, theirs.icrcOff);
    const ob = ourFrame.subarray(ours.bthOff, ours.icrcOff);
    const masked = (b: Uint8Array): number[] => Array.from(b).map((x, i) => (i >= 5 && i < 8 ? 0 : x));
    expect(masked(ob)).toEqual(masked(tb));
  });
});
