/**
 * Which frames are SMB Direct and what they carry, on the generated SMB Direct capture
 * (test/support/make-smbd-capture.ts): ownership from the negotiate request's shape without a CM,
 * none for a QP nobody claimed, --decode-as by QPN, a SMB Direct message put together from SEND
 * FIRST + LAST, an SMB2 message from two data transfers by RemainingDataLength, RDMA READ and WRITE
 * tied to the READ/WRITE whose buffer descriptor they name, bounded state, and the same frames
 * whether decoded in one decoder or with the state structuredClone'd into a fresh one at every frame.
 */
import { readCapture, type CaptureRecord } from '../../packets/pcap';
import { SMBD } from '../../ulp/smbd/smbd-protocol';
import { decodeAt, type RocePacket } from '../../packets/decode';
import { SmbdDecoder, type SmbdFrame } from '../../ulp/smbd/smbd-decoder';
import type { UlpRules } from '../../ulp/ulp-decoder';
import { smbdCapture } from '../support/make-smbd-capture';

const records = readCapture(smbdCapture()).records;
const packets = records.map((r) => {
  const view = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
  const d = decodeAt(view, r.data, 0, r.data.byteLength, r.linkType, {}, r.origLen);
  if (!d.roce) throw new Error('not RoCE');
  return { p: d as RocePacket, view };
});
const SHAPE: UlpRules = { ports: [445], qpns: [] };

function decodeAll(rules: UlpRules, keep: (i: number) => boolean = () => true): (SmbdFrame | null)[] {
  const dec = new SmbdDecoder(rules);
  return packets.map(({ p, view }, i) => (keep(i + 1) ? dec.observe(p, view, 0) : null));
}

describe('SMB Direct decoding', () => {
  const frames = decodeAll(SHAPE);
  const at = (n: number) => frames[n - 1] as SmbdFrame;
  test('the negotiate request claims the conversation; every frame is placed', () => {
    expect(records).toHaveLength(45);
    expect(at(1)).toMatchObject({
      kind: 'negotiate-request',
      direction: 'to-server',
      negotiateRequest: { minVersion: 0x100, creditsRequested: 255, maxReceiveSize: 8192 },
    });
    expect(at(2)).toBeNull(); // an ACK
    expect(at(3)).toMatchObject({
      kind: 'negotiate-response',
      direction: 'to-client',
      negotiateResponse: { negotiatedVersion: 0x100, maxReadWriteSize: 1048576 },
    });
    expect(frames.filter((f) => f?.error != null)).toEqual([]);
  });
  test('a SMB Direct message in SEND FIRST + LAST, and an SMB2 message in two data transfers', () => {
    expect(at(5)).toMatchObject({ kind: 'send-fragment', length: 1024, smb2: null });
    expect(at(6)).toMatchObject({ kind: 'data', packets: 2, length: 1200, transfers: 1, smb2: { header: { command: 0, messageId: 0n }, length: 1176 } });
    expect(at(8)).toMatchObject({ kind: 'data', transfer: { remainingDataLength: 264, dataLength: 1000 }, transfers: 1, smb2: null });
    expect(at(10)).toMatchObject({
      kind: 'data',
      transfer: { remainingDataLength: 0, dataLength: 264 },
      transfers: 2,
      smb2: { header: { command: 0, flags: 1 }, length: 1264 },
      of: { messageId: 0n, command: 0 },
    });
  });
  test('RDMA transfers belong to the READ or WRITE whose buffer descriptor they name', () => {
    expect(at(12)).toMatchObject({
      smb2: { header: { command: 9, messageId: 5n }, request: { length: 2048, channel: 1, descriptors: [{ token: 0xa101, length: 2048 }] } },
    });
    expect([14, 15, 16].map((n) => [at(n).kind, at(n).of])).toEqual(Array(3).fill(['rdma', { messageId: 5n, command: 9 }]));
    expect(at(17)).toMatchObject({ smb2: { header: { command: 9 }, responseLength: 2048 }, of: { messageId: 5n, command: 9 } });
    expect(at(21)).toMatchObject({ kind: 'rdma', direction: 'to-client', length: 1024, of: { messageId: 6n, command: 8 } });
    expect(at(23)).toMatchObject({ smb2: { responseLength: 1024 }, of: { messageId: 6n, command: 8 } });
    expect(at(25)).toMatchObject({ kind: 'data', transfer: { flags: 1, dataLength: 0 }, smb2: null });
  });
  test('the CM REQ to port 445 and its REP make the second connection SMB Direct, even without its negotiation', () => {
    expect(at(27)).toMatchObject({ kind: 'cm-req' });
    expect(at(28)).toMatchObject({ kind: 'cm-rep', conn: '198.18.0.2/20' });
    expect(at(29)).toBeNull(); // RTU
    expect(at(34)).toMatchObject({ direction: 'to-server', conn: '198.18.0.2/20', smb2: { header: { command: 1, messageId: 1n } } });
    expect(at(36)).toMatchObject({ direction: 'to-client', smb2: { header: { command: 1, status: 0xc0000016 } }, of: { messageId: 1n, command: 1 } });
    const noNegotiation = decodeAll(SHAPE, (n) => n < 30 || n > 33);
    expect(noNegotiation[33]).toMatchObject({ direction: 'to-server', smb2: { header: { command: 1 } } });
    // Another port: the CM says nothing, and without the negotiation nothing claims the QPs.
    const otherPort = decodeAll({ ports: [5445], qpns: [] }, (n) => n < 30 || n > 33);
    expect(otherPort.slice(26)).toEqual(Array(19).fill(null));
  });
  test('an SMB2 compound: every command of the NextCommand chain read, each request answered by its MessageId', () => {
    const req = at(38);
    expect(req?.smb2?.commands.map((c) => [c.header.command, c.header.messageId, c.offset, c.size])).toEqual([
      [5, 2n, 0, 144],
      [16, 3n, 144, 112],
      [6, 4n, 256, 88],
    ]);
    expect(req?.smb2?.header.command).toBe(5);
    expect(SMBD.text.words(req as SmbdFrame)).toBe(
      'SMBD DataMessage credits 255/0; SMB2 CREATE request mid 2 | QUERY_INFO request mid 3 | CLOSE request mid 4',
    );
    const rsp = at(40);
    expect(rsp?.smb2?.commands.map((c) => [c.header.messageId, c.of?.command])).toEqual([
      [2n, 5],
      [3n, 16],
      [4n, 6],
    ]);
    expect(SMBD.text.words(at(44) as SmbdFrame)).toBe(
      'SMBD DataMessage credits 255/0; SMB2 CREATE response mid 5 status 0xc0000034 | CLOSE response mid 6 status 0xc0000034',
    );
    expect(SMBD.text.treeLines(req as SmbdFrame)).toEqual(
      expect.arrayContaining([
        [0, 'SMB2 (Server Message Block Protocol version 2) [compound command 2 of 3]'],
        [1, 'Command: QUERY_INFO (16)'],
        [1, 'Flags: 0x00000004 (related)'],
        [1, 'Next Command: 112'],
      ]),
    );
    const json = JSON.parse(SMBD.text.jsonMember(rsp as SmbdFrame).slice(8)) as { smb2: { commands: { name: string; of: { messageId: string } }[] } };
    expect(json.smb2.commands.map((c) => [c.name, c.of.messageId])).toEqual([
      ['CREATE', '2'],
      ['QUERY_INFO', '3'],
      ['CLOSE', '4'],
    ]);
  });
  test('a NextCommand that points past the message or off the 8-byte grid ends the chain with an error, the commands before kept', () => {
    const r = records[37] as CaptureRecord;
    const bad = r.data.slice();
    const dec = SMBD.decoder({ ports: [445], qpns: [0x14] });
    const view = new DataView(bad.buffer);
    const d = decodeAt(view, bad, 0, bad.length, r.linkType, {}, r.origLen);
    if (!d.roce) throw new Error('frame 38 is RoCE');
    // The second command's NextCommand (little-endian at 20 of its header): 113, not a multiple of 8.
    const second = d.payloadOff + 24 + 144 + 20;
    view.setUint32(second, 113, true);
    const f = dec.observe(d, view, 0);
    expect(f?.smb2?.commands.map((c) => c.header.command)).toEqual([5]);
    expect(f?.error?.code).toBe('ROCE_ERR_BAD_FIELD');
  });
  test('without the negotiate request and response, nothing is claimed; --decode-as by QPN claims it again', () => {
    const none = decodeAll(SHAPE, (n) => n > 4 && n <= 26);
    expect(none.every((f) => f === null)).toBe(true);
    const byQpn = decodeAll({ ports: [], qpns: [0x11, 0x12] }, (n) => n > 4 && n <= 26);
    expect(byQpn[11]).toMatchObject({ smb2: { header: { command: 9 } }, direction: 'to-server' });
    expect(byQpn[16]).toMatchObject({ direction: 'to-client', of: { messageId: 5n } });
  });
  test('a LAST without its FIRST, and a data transfer whose remainder does not follow, are errors, not crashes', () => {
    const f = decodeAll(SHAPE, (n) => n !== 5 && n !== 8);
    expect(f[5]?.error?.message).toMatch(/first packet was not seen/);
    // The second data transfer alone: its data is read as a whole SMB2 message, which it is not.
    expect(f[9]).toMatchObject({ kind: 'data', smb2: null, error: { code: 'ROCE_ERR_BAD_FIELD' } });
    expect(f[9]?.error?.message).toMatch(/ProtocolId/);
    // The SMB2 message after them decodes as before.
    expect(f[11]).toMatchObject({ smb2: { header: { command: 9 } }, error: null });
  });
  test('the same frames when the state is cloned into a fresh decoder at every frame', () => {
    let state = new SmbdDecoder(SHAPE).state;
    const cloned = packets.map(({ p, view }) => {
      const dec = new SmbdDecoder(SHAPE, structuredClone(state));
      const out = dec.observe(p, view, 0);
      state = dec.state;
      return out;
    });
    expect(cloned).toEqual(frames);
  });
  test('the state stays bounded: many negotiate requests to distinct QPs keep at most the cap', () => {
    const dec = new SmbdDecoder(SHAPE);
    const { p, view } = packets[0] as { p: RocePacket; view: DataView };
    for (let q = 0; q < 5000; q++) dec.observe({ ...p, bth: { ...(p.bth as NonNullable<RocePacket['bth']>), destQp: 0x100 + q } }, view, 0);
    expect(dec.state.ends.size).toBe(4096);
    expect(dec.state.conns.size).toBeLessThanOrEqual(2048);
  });
});
