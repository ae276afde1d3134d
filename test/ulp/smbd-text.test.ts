/**
 * How SMB Direct frames read (ulp/smbd/smbd-text.ts) on the generated capture: the summary words,
 * the -V tree, the JSON member keyed `smbd`, and the SMBD protocol object's parts.
 */
import { readCapture } from '../../packets/pcap';
import { decodeAt } from '../../packets/decode';
import { SMBD } from '../../ulp/smbd/smbd-protocol';
import type { SmbdFrame } from '../../ulp/smbd/smbd-decoder';
import { smbdCapture } from '../support/make-smbd-capture';

const dec = SMBD.decoder({ ports: [...SMBD.defaultPorts], qpns: [] });
const frames = readCapture(smbdCapture()).records.map((r) => {
  const view = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
  const d = decodeAt(view, r.data, 0, r.data.byteLength, r.linkType, {}, r.origLen);
  return d.roce ? dec.observe(d, view, 0) : null;
});
const at = (n: number) => frames[n - 1] as SmbdFrame;

test('summary words name the SMB Direct message and the SMB2 command behind it', () => {
  expect(SMBD.text.words(at(1))).toBe('SMBD NegotiateRequest version 0x0100-0x0100 credits 255 recv 8192');
  expect(SMBD.text.words(at(3))).toBe('SMBD NegotiateResponse version 0x0100 credits 255 status 0x00000000 rw 1048576');
  expect(SMBD.text.words(at(5))).toBe('SMBD fragment 1024 B');
  expect(SMBD.text.words(at(6))).toBe('SMBD DataMessage credits 255/0; SMB2 NEGOTIATE request mid 0');
  expect(SMBD.text.words(at(8))).toBe('SMBD DataMessage credits 255/255 part 1, 264 B to come');
  expect(SMBD.text.words(at(12))).toBe('SMBD DataMessage credits 255/0; SMB2 WRITE request mid 5 len 2048 off 0 rdma 0x0000a101:0x00007f3a00001000+2048');
  expect(SMBD.text.words(at(15))).toBe('SMBD RDMA data mid 5 (WRITE) 1024 B');
  expect(SMBD.text.words(at(23))).toBe('SMBD DataMessage credits 255/255; SMB2 READ response mid 6 status 0x00000000 len 1024');
  expect(SMBD.text.words(at(25))).toBe('SMBD DataMessage credits 255/0 response-requested');
});

test('the tree, the JSON member and the protocol object', () => {
  expect(SMBD.text.treeLines(at(12))).toEqual(
    expect.arrayContaining([
      [1, 'DataMessage'],
      [0, 'SMB2 (Server Message Block Protocol version 2)'],
      [1, 'Command: WRITE (9)'],
      [1, 'Channel: 0x00000001'],
      [1, 'Buffer descriptor: Offset 0x00007f3a00001000 Token 0x0000a101 Length 2048'],
    ]),
  );
  const member = SMBD.text.jsonMember(at(17));
  expect(member.startsWith(',"smbd":')).toBe(true);
  expect(JSON.parse(member.slice(8))).toMatchObject({
    kind: 'data',
    smb2: { name: 'WRITE', response: true, messageId: '5', responseLength: 2048 },
    of: { messageId: '5', name: 'WRITE' },
  });
  expect(SMBD.name).toBe('smbd');
  expect(SMBD.defaultPorts).toEqual([445]);
  expect(SMBD.isEmpty(SMBD.emptyState())).toBe(true);
  expect(SMBD.isEmpty(dec.state)).toBe(false);
  expect(SMBD.text.field('smb_direct.credits.granted')).toBeDefined();
  expect(SMBD.text.field('nvme.cmd.opc')).toBeUndefined();
});
