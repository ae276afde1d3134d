/**
 * The GSI (QP 1) in the stack: MADs in UD datagrams with the GSI Q_Key reach the agent of their
 * class; bad MADs are counted and dropped, or answered with the IBTA status, as the kernel's MAD
 * layer does (ib_mad.c validate_mad(), find_mad_agent(), generate_unmatched_resp()).
 */
import { scriptedPeer, op, PEER_GID } from '../../support/scripted-peer';
import { Gsi, type ReceivedMad } from '../../../stack/cm/gsi';
import { CM_CLASS_VERSION, GSI_QKEY, MAD_LEN, MadMethod, MadStatus, MgmtClass, emitMadHeader, parseMadHeader } from '../../../packets/mad';
import { ipv6FromString } from '../../../packets/bytes';

function mad(
  over: Partial<{ baseVersion: number; mgmtClass: number; classVersion: number; method: number; attributeId: number; tid: bigint }> = {},
  len = MAD_LEN,
): Uint8Array {
  const b = new Uint8Array(Math.max(len, 24));
  emitMadHeader(
    {
      baseVersion: over.baseVersion ?? 1,
      mgmtClass: over.mgmtClass ?? MgmtClass.CM,
      classVersion: over.classVersion ?? CM_CLASS_VERSION,
      method: over.method ?? MadMethod.SEND,
      status: 0,
      classSpecific: 0,
      transactionId: over.tid ?? 0x1234n,
      attributeId: over.attributeId ?? 0x0010,
      reserved: 0,
      attributeModifier: 0,
    },
    new DataView(b.buffer),
    0,
  );
  return b.subarray(0, len);
}

function setup() {
  const h = scriptedPeer();
  const gsi = new Gsi(h.dev, { recvDepth: 4, sendDepth: 4 });
  const got: ReceivedMad[] = [];
  gsi.register(MgmtClass.CM, CM_CLASS_VERSION, [MadMethod.SEND], (m) => got.push(m));
  const toGsi = (payload: Uint8Array, qkey = GSI_QKEY) =>
    h.inject({ bth: { opcode: op('UD_SEND_ONLY'), psn: 0, destQp: 1 }, deth: { qkey, srcQp: 1 }, payload });
  return { h, gsi, got, toGsi };
}

describe('GSI QP 1', () => {
  test('is a UD QP numbered 1 in RTS with Q_Key 0x80010000 and its receive buffers posted', () => {
    const { h, gsi } = setup();
    expect(gsi.qp.qpNum).toBe(1);
    expect(h.dev.qp(1)).toBe(gsi.qp);
    expect(gsi.qp.attr.qkey).toBe(GSI_QKEY);
    expect(gsi.qp.rq).toHaveLength(4);
  });

  test('a CM MAD reaches the CM agent with the sender GID; the buffer is posted again', () => {
    const { gsi, got, toGsi } = setup();
    for (let i = 0; i < 6; i++) toGsi(mad({ tid: BigInt(i) }));
    expect(got.map((m) => m.header.transactionId)).toEqual([0n, 1n, 2n, 3n, 4n, 5n]);
    expect(got[0]?.from).toEqual({ gid: ipv6FromString(PEER_GID), qpn: 1 });
    expect(gsi.counters.gsi_rcvd_mads).toBe(6);
    expect(gsi.qp.rq).toHaveLength(4);
  });

  test('wrong length, bad base version, wrong Q_Key: counted and dropped, no answer', () => {
    const { h, gsi, got, toGsi } = setup();
    toGsi(mad({}, 200));
    toGsi(mad({}, 24));
    toGsi(new Uint8Array(300)); // longer than a receive buffer: LOC_LEN_ERR
    toGsi(mad({ baseVersion: 2 }));
    toGsi(mad(), 0x1234);
    expect(got).toEqual([]);
    expect(gsi.counters).toMatchObject({ gsi_bad_length: 3, gsi_bad_base_version: 1, gsi_rcvd_mads: 0 });
    expect(gsi.qp.counters.qkey_violation).toBe(1);
    expect(h.sent()).toEqual([]);
    expect(gsi.qp.rq).toHaveLength(4);
  });

  test('an unknown class sent with Send is dropped; a Get to it (or a Get to the CM) is answered GetResp, status unsupported method/attribute', () => {
    const { h, gsi, got, toGsi } = setup();
    toGsi(mad({ mgmtClass: 0x2a }));
    toGsi(mad({ classVersion: 1 }));
    expect(h.sent()).toEqual([]);
    toGsi(mad({ mgmtClass: 0x2a, method: MadMethod.GET, tid: 77n }));
    toGsi(mad({ method: MadMethod.GET, attributeId: 0x0001, tid: 78n }));
    const sent = h.sent();
    expect(sent.map((s) => [s.op, s.destQp, s.deth])).toEqual([
      ['UD_SEND_ONLY', 1, { qkey: GSI_QKEY, srcQp: 1 }],
      ['UD_SEND_ONLY', 1, { qkey: GSI_QKEY, srcQp: 1 }],
    ]);
    const hdrs = sent.map((s) => parseMadHeader(new DataView(s.payload.buffer, s.payload.byteOffset), 0));
    expect(hdrs.map((x) => [x.mgmtClass, x.method, x.status, x.transactionId])).toEqual([
      [0x2a, MadMethod.GET_RESP, MadStatus.UNSUPPORTED_METHOD_ATTRIBUTE, 77n],
      [MgmtClass.CM, MadMethod.GET_RESP, MadStatus.UNSUPPORTED_METHOD_ATTRIBUTE, 78n],
    ]);
    expect(sent[0]?.payload.length).toBe(MAD_LEN);
    expect(got).toEqual([]);
    expect(gsi.counters).toMatchObject({ gsi_unmatched: 4, gsi_unsupported_resp_sent: 2, gsi_sent_mads: 2 });
  });

  test('send: to an address without a neighbour entry is counted, not thrown', () => {
    const { h, gsi } = setup();
    expect(gsi.send({ gid: ipv6FromString('::ffff:198.18.9.9'), qpn: 1 }, mad())).toBe(false);
    expect(gsi.counters.gsi_send_err).toBe(1);
    expect(gsi.send({ gid: ipv6FromString(PEER_GID), qpn: 1 }, mad())).toBe(true);
    expect(h.sent().map((s) => [s.op, s.psn, s.destQp])).toEqual([['UD_SEND_ONLY', 0, 1]]);
  });
});
