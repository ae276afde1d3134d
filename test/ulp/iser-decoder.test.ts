/**
 * Which frames are iSER and what they carry, on captures/iser.pcap: ownership from the RDMA CM (REQ
 * to port 3260 and its REP), none without it, --decode-as by QPN for the connection whose CM is not
 * captured; a Login in SEND FIRST + LAST put together; RDMA WRITEs and READs tied to the task whose
 * iSER header named their STag; the text; and the same frames whether one decoder sees the whole
 * capture or the state is structuredClone'd into a fresh decoder at every frame.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readCapture, type CaptureRecord } from '../../packets/pcap';
import { decodeAt } from '../../packets/decode';
import type { UlpRules } from '../../ulp/ulp-decoder';
import { ISER } from '../../ulp/iser/iser-protocol';
import type { IserFrame } from '../../ulp/iser/iser-decoder';
import { type IserState, capSet } from '../../ulp/iser/iser-state';
import { iserWords, iserTreeLines, iserJsonMember } from '../../ulp/iser/iser-text';

const FILE = path.resolve(__dirname, '..', '..', 'captures', 'iser.pcap');
const records: CaptureRecord[] = readCapture(new Uint8Array(fs.readFileSync(FILE))).records;
const CM: UlpRules = { ports: [3260], qpns: [] };

function decoded(r: CaptureRecord) {
  const view = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
  return { view, d: decodeAt(view, r.data, 0, r.data.byteLength, r.linkType, {}, r.origLen) };
}

function decodeAll(rules: UlpRules, cloneEachFrame = false, skip: readonly number[] = []): (IserFrame | null)[] {
  let state: IserState = ISER.emptyState();
  let dec = ISER.decoder(rules, state);
  return records.map((r, i) => {
    if (skip.includes(i + 1)) return null;
    if (cloneEachFrame) {
      state = structuredClone(dec.state);
      dec = ISER.decoder(rules, state);
    }
    const { view, d } = decoded(r);
    return d.roce ? dec.observe(d, view, 0) : null;
  });
}

const frames = decodeAll(CM);
const at = (n: number) => frames[n - 1] ?? null;
const words = (n: number) => iserWords(at(n) as IserFrame);

test('the CM REQ and REP to port 3260 make the connection iSER, with the Z and I flags', () => {
  expect(records).toHaveLength(78);
  expect(at(1)).toMatchObject({ kind: 'cm-req', cm: { flags: 0xc0, zbvaNotUsed: true, sendWithInvalidateNotUsed: true } });
  expect(at(2)).toMatchObject({ kind: 'cm-rep', cm: { flags: 0xc0 } });
  expect(at(3)).toBeNull();
  expect(at(6)).toBeNull(); // an ACK
  expect(frames.filter((f) => f?.error != null)).toEqual([]);
});

test('a Login request in SEND FIRST + LAST is put together on the LAST', () => {
  expect(at(4)).toMatchObject({ kind: 'fragment', direction: 'to-target', length: 1024 });
  expect(at(5)).toMatchObject({ kind: 'message', packets: 2, direction: 'to-target' });
  expect(at(5)?.details?.keyValues).toContain('RDMAExtensions=Yes');
  expect(words(5)).toBe('iSER Login Command itt 0x00000000 Operational negotiation -> Full feature phase 15 keys [2 packets]');
  expect(words(7)).toBe('iSER Login Response itt 0x00000000 Operational negotiation -> Full feature phase Success 3 keys');
  expect(at(7)?.direction).toBe('to-initiator');
});

test('a LAST whose FIRST was not captured is an iSER error of that frame, and the next message decodes', () => {
  const f = decodeAll(CM, false, [4]);
  expect(f[4]).toMatchObject({ kind: 'fragment', error: { code: 'ROCE_ERR_BAD_FIELD' } });
  expect(iserWords(f[4] as IserFrame)).toMatch(
    /^iSER message part 1 \(44 B so far\) \[iSER ROCE_ERR_BAD_FIELD: a later packet of an iSER message whose first packet was not seen\]$/,
  );
  expect(f[6]).toMatchObject({ kind: 'message', details: { login: { statusClass: 0 } } });
});

test('a SCSI Response whose command was not captured belongs to no task; data of an unknown STag neither', () => {
  const f = decodeAll(CM, false, [39]);
  expect(f[40]?.of).toBeNull();
  expect(f[45]).toMatchObject({ kind: 'message', of: null });
});

test('SCSI commands: CDBs named, STags from the iSER header, responses tied to their task', () => {
  expect(words(17)).toBe('iSER SCSI Command itt 0x00000010 TEST UNIT READY edtl 0');
  expect(words(21)).toMatch(/^iSER SCSI Command itt 0x00000011 INQUIRY alloc 36 edtl 36 R stag 0x[0-9a-f]{8}$/);
  expect(words(27)).toMatch(/^iSER SCSI Command itt 0x00000012 READ CAPACITY\(16\) alloc 32 edtl 32 R stag/);
  expect(words(33)).toMatch(/REPORT LUNS alloc 16 edtl 16/);
  expect(words(39)).toMatch(/^iSER SCSI Command itt 0x00000014 READ\(10\) lba 16 blocks 8 edtl 4096 R stag/);
  expect(words(48)).toMatch(/^iSER SCSI Command itt 0x00000015 WRITE\(10\) lba 24 blocks 8 edtl 4096 W stag/);
  expect(words(46)).toBe('iSER SCSI Response itt 0x00000014 (READ(10)) GOOD');
  expect(words(59)).toBe('iSER SCSI Response itt 0x00000016 (READ(16)) CHECK CONDITION residual 4096 under sense 18 B');
  expect(words(67)).toBe('iSER Task Management Function itt 0x00000018 ABORT TASK ref itt 0x00000016');
  expect(words(69)).toBe('iSER Task Management Function Response itt 0x00000018 Task does not exist');
  expect(words(71)).toBe('iSER Logout Command itt 0x00000019 close the session');
});

test('every RDMA transfer belongs to the task whose iSER header named its STag', () => {
  const of = (n: number) => [at(n)?.kind, at(n)?.of?.itt ?? null, at(n)?.length];
  expect(of(23)).toEqual(['data', 0x11, 36]);
  expect([41, 42, 43, 44].map(of)).toEqual(Array(4).fill(['data', 0x14, 1024]));
  expect(of(50)).toEqual(['data', 0x15, 0]);
  expect([51, 52, 53, 54].map(of)).toEqual(Array(4).fill(['data', 0x15, 1024]));
  expect(at(51)?.direction).toBe('to-target');
  expect(of(64)).toEqual(['data', 0x17, 512]);
  expect(words(42)).toBe('iSER data itt 0x00000014 (READ(10)) 1024 B');
});

test('the connection without a CM is iSER only by --decode-as qpn', () => {
  expect(at(75)).toBeNull();
  expect(at(77)).toBeNull();
  const qpn = (n: number) => {
    const { d } = decoded(records[n - 1] as CaptureRecord);
    return d.roce ? (d.bth?.destQp ?? -1) : -1;
  };
  const f = decodeAll({ ports: [3260], qpns: [qpn(75), qpn(77)] });
  expect(f[74]).toMatchObject({ kind: 'message', direction: 'to-target', details: { cmdSn: 1 } });
  expect(iserWords(f[76] as IserFrame)).toBe('iSER NOP In itt 0x00000020');
  // Without the port, the CM connection is not iSER.
  expect(decodeAll({ ports: [], qpns: [] }).every((x) => x === null)).toBe(true);
});

test('the same frames when the state is cloned into a fresh decoder at every frame', () => {
  expect(decodeAll(CM, true)).toEqual(frames);
  const { d } = decoded(records[74] as CaptureRecord);
  const rules = { ports: [3260], qpns: [d.roce ? (d.bth?.destQp ?? 0) : 0] };
  expect(decodeAll(rules, true)).toEqual(decodeAll(rules));
});

test('tree lines and JSON', () => {
  const t = iserTreeLines(at(39) as IserFrame).map(([, s]) => s);
  expect(t).toContain('R 1, W 0, ATTR 1, expected data transfer length 4096');
  expect(t.some((s) => s.startsWith('CDB: opcode 0x28 (READ(10)), LBA 16, 8 blocks'))).toBe(true);
  const j = JSON.parse(`{${iserJsonMember(at(39) as IserFrame).slice(1)}}`);
  expect(j.iser).toMatchObject({
    kind: 'message',
    iscsi: { name: 'SCSI Command', itt: 0x14, scsiCommand: { cdb: { name: 'READ(10)', lba: '16', blocks: 8 } } },
  });
  expect(ISER.isEmpty(ISER.emptyState())).toBe(true);
});

test('every map of the state is capped: the oldest entry goes first, a key set again becomes the newest', () => {
  const m = new Map<number, string>();
  for (let i = 0; i < 5; i++) capSet(m, i, `v${i}`, 3);
  expect([...m.keys()]).toEqual([2, 3, 4]);
  capSet(m, 2, 'again', 3);
  capSet(m, 9, 'v9', 3);
  expect([...m.entries()]).toEqual([
    [4, 'v4'],
    [2, 'again'],
    [9, 'v9'],
  ]);
});
