/**
 * The decoder reads the MAD of every datagram to the GSI (UD SEND ONLY to QP 1
 * with the GSI Q_Key) into `mad`; a bad MAD is `madError`, a typed WireError
 * with its offset in the frame, and the rest of the frame decodes as before.
 * Frames: captures/cm-exchanges.pcap and malformed.pcap as the generator makes
 * them (test/support/make-cm-capture.ts, make-captures.ts).
 */
import { buildRoceV2Frame } from '../../packets/build';
import { decodeFrame, type RocePacket } from '../../packets/decode';
import { WireErrorCode } from '../../packets/errors';
import { GSI_QKEY } from '../../packets/mad';
import { buildCmMad } from '../../packets/mad-payload';
import { frameToJson } from '../../packets/json';
import { fieldTree, summaryLine } from '../../packets/summary';
import { LinkType } from '../../packets/pcap';
import { cmExchanges } from '../support/make-cm-capture';
import { malformed } from '../support/make-captures';
import { ZERO_FRAME_TIME } from '../../base/exact-time';

const frames = cmExchanges().map((r) => r.data);
const bad = malformed()
  .slice(8)
  .map((r) => r.data);
const roce = (f: Uint8Array, lean = false): RocePacket => {
  const d = decodeFrame(f, LinkType.Ethernet, { lean });
  if (!d.roce) throw new Error('not RoCE');
  return d;
};
/** Where the MAD starts in an untagged Ethernet / IPv4 frame: after Ethernet, IP, UDP, BTH and DETH. */
const MAD_OFF_V4 = 14 + 20 + 8 + 12 + 8;

test('every datagram to the GSI in cm-exchanges.pcap decodes to its MAD, the CM ones to their message', () => {
  const got = frames.map((f) => {
    const p = roce(f);
    expect([p.error, p.madError]).toEqual([null, null]);
    return p.mad?.cm?.name ?? `${p.mad?.header.attributeId}`;
  });
  expect(got).toEqual(['REQ', 'MRA', 'REP', 'RTU', 'DREQ', 'DREP', 'REQ', 'REJ', 'SIDR_REQ', 'SIDR_REP', 'LAP', 'APR', '1', '1']);
});

test('the lean receive path reads the same MAD', () => {
  for (const f of [...frames, ...bad]) {
    const full = roce(f);
    const lean = roce(f, true);
    expect(lean.mad).toEqual(full.mad);
    expect(lean.madError).toEqual(full.madError);
  }
});

test('a bad MAD is madError with its offset in the frame; the transport decode is untouched', () => {
  const [short, v2] = bad.map((f) => roce(f));
  expect(short?.madError).toMatchObject({ code: WireErrorCode.BadLength, offset: MAD_OFF_V4 });
  expect(v2?.madError).toMatchObject({ code: WireErrorCode.BadField, offset: MAD_OFF_V4 });
  for (const p of [short, v2]) {
    expect(p).toMatchObject({ error: null, mad: null, icrcOk: true, deth: { qkey: GSI_QKEY, srcQp: 1 } });
    expect(p?.bth?.destQp).toBe(1);
  }
  expect(short?.payloadLength).toBe(200);
});

test('only UD SEND ONLY to QP 1 with the GSI Q_Key carries a MAD', () => {
  const mad = buildCmMad({ name: 'RTU', fields: { localCommId: 1, remoteCommId: 2, privateData: new Uint8Array(0) } }, { transactionId: 9n });
  const base = { eth: { src: 2, dst: 4 }, ip: { version: 4 as const, src: '198.18.0.1', dst: '198.18.0.2' }, payload: mad };
  const gsi = roce(buildRoceV2Frame({ ...base, bth: { opcode: 0x64, destQp: 1, psn: 0 }, deth: { qkey: GSI_QKEY, srcQp: 1 } }));
  expect(gsi.mad?.cm?.name).toBe('RTU');
  const notGsi = [
    buildRoceV2Frame({ ...base, bth: { opcode: 0x64, destQp: 2, psn: 0 }, deth: { qkey: GSI_QKEY, srcQp: 1 } }),
    buildRoceV2Frame({ ...base, bth: { opcode: 0x64, destQp: 1, psn: 0 }, deth: { qkey: 0x11111111, srcQp: 1 } }),
    buildRoceV2Frame({ ...base, bth: { opcode: 0x65, destQp: 1, psn: 0 }, deth: { qkey: GSI_QKEY, srcQp: 1 }, immDt: 5 }),
  ];
  for (const f of notGsi) expect([roce(f).mad, roce(f).madError]).toEqual([null, null]);
});

test("with a bad ICRC the MAD is still read (the ICRC error stays the frame's error)", () => {
  const f = frames[0]!.slice();
  f[f.length - 1] = (f[f.length - 1] ?? 0) ^ 0xff;
  const p = roce(f);
  expect(p.error?.code).toBe(WireErrorCode.BadIcrc);
  expect(p.mad?.cm?.name).toBe('REQ');
});

test('summary lines: the CM message in a few words after the DETH', () => {
  const line = (i: number): string => summaryLine(i + 1, ZERO_FRAME_TIME, roce(frames[i]!));
  expect(line(0)).toContain(
    'UD_SEND_ONLY QP=0x000001 PSN=0 A QKey=0x80010000 SrcQP=0x000001 CM REQ svc 0x0000000001064e20 → 198.18.0.2:20000 QPN 0x000011 PSN 3086848 comm 0x770f9bfe len=256 ICRC ok',
  );
  expect(line(1)).toContain('CM MRA REQ service timeout 34.4 s');
  expect(line(2)).toContain('CM REP comm 0x3c1d52a4 → 0x770f9bfe QPN 0x000012 PSN 8002348');
  expect(line(6)).toContain('CM REQ svc 0x0000000001064853 → [fd00::2]:18515 QPN 0x000021');
  expect(line(7)).toContain('CM REJ REQ reason 28 (consumer reject)');
  expect(line(8)).toContain('CM SIDR_REQ svc 0x0000000001111c06 → 198.18.0.2:7174');
  expect(line(9)).toContain('CM SIDR_REP status 0 (success) QPN 0x000013 Q_Key 0x01234567');
  expect(line(12)).toContain('MAD CM Get attr CLASS_PORT_INFO TID 0x00000002555bbcaf');
  expect(summaryLine(9, ZERO_FRAME_TIME, roce(bad[0]!))).toMatch(
    /len=200 ICRC ok \[MAD ROCE_ERR_BAD_LENGTH: a MAD is 256 bytes, this one 200 \(at byte 62\)\]$/,
  );
});

test('-v: the common header, every CM field with its meaning, the IP CM header', () => {
  const t = fieldTree(1, ZERO_FRAME_TIME, frames[0]!.length, roce(frames[0]!), frames[0]!);
  for (const s of [
    '  MAD: CM Send REQ',
    '    base version 1, class 0x07, class version 2, method 0x03 (R 0)',
    '    status 0x0000, class specific 0x0000, transaction ID 0x00000002555bbcab',
    '  CM REQ:',
    '    serviceId 0x0000000001064e20 (RDMA CM TCP port 20000)',
    '    localQpn 0x000011 (17)',
    '    remoteCmResponseTimeout 20 (4.29 s)',
    '    transportServiceType 0 (RC)',
    '    pathMtu 3 (1024 bytes)',
    '    primaryLocalGid ::ffff:198.18.0.1',
    '    primaryFlowLabel 0x4580d (284685)',
    '    privateData 0040a719000000000000000000000000c6120001000000000000000000000000c61200027270696e67 + 51 zero bytes',
    '  IP CM private data (Annex A11):',
    '    version 0.0, IP version 4, reserved 0, source port 42777',
    '    source 198.18.0.1, destination 198.18.0.2',
  ]) {
    expect(t.split('\n')).toContain(s);
  }
  expect(fieldTree(8, ZERO_FRAME_TIME, frames[7]!.length, roce(frames[7]!), frames[7]!)).toContain('    reason 28 (consumer reject)');
  expect(fieldTree(9, ZERO_FRAME_TIME, bad[0]!.length, roce(bad[0]!), bad[0]!)).toContain(
    '  MAD error: ROCE_ERR_BAD_LENGTH at byte 62: a MAD is 256 bytes, this one 200',
  );
});

test('--json: a mad object with the header and the CM fields by name', () => {
  const j = frameToJson(1, ZERO_FRAME_TIME, roce(frames[0]!));
  const mad = j['mad'] as Record<string, unknown>;
  expect(mad).toMatchObject({
    baseVersion: 1,
    mgmtClass: 7,
    classVersion: 2,
    method: 3,
    response: false,
    status: 0,
    classSpecific: 0,
    transactionId: '0x00000002555bbcab',
    attributeId: 0x10,
    reserved: 0,
    attributeModifier: 0,
    attributeName: 'REQ',
  });
  const cm = mad['cm'] as Record<string, unknown>;
  expect(cm).toMatchObject({
    message: 'REQ',
    localCommId: 0x770f9bfe,
    serviceId: '0x0000000001064e20',
    localCaGuid: '0x0000c6fffe120001',
    localQpn: 0x11,
    startingPsn: 0x2f1a00,
    endToEndFlowControl: false,
    primaryLocalGid: '::ffff:198.18.0.1',
    primaryFlowLabel: 0x4580d,
    ipCm: {
      majorVersion: 0,
      minorVersion: 0,
      ipVersion: 4,
      reserved: 0,
      srcPort: 42777,
      src: '198.18.0.1',
      dst: '198.18.0.2',
      privateData: `7270696e67${'00'.repeat(51)}`,
    },
  });
  expect(cm['privateData']).toMatch(/^0040a719/);
  expect((cm['privateData'] as string).length).toBe(184);
  // Every field of the table is there: 46 fields, plus message and ipCm.
  expect(Object.keys(cm)).toHaveLength(46 + 2);
  expect((frameToJson(13, ZERO_FRAME_TIME, roce(frames[12]!))['mad'] as Record<string, unknown>)['cm']).toBeNull();
  expect(frameToJson(9, ZERO_FRAME_TIME, roce(bad[0]!))).toMatchObject({ mad: null, error: 'a MAD is 256 bytes, this one 200 (at byte 62)' });
  expect(
    frameToJson(
      1,
      ZERO_FRAME_TIME,
      roce(buildRoceV2Frame({ eth: { src: 2, dst: 4 }, ip: { version: 4, src: 1, dst: 2 }, bth: { opcode: 4, destQp: 5, psn: 0 } })),
    )['mad'],
  ).toBeNull();
});
