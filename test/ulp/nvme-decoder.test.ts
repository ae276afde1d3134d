/**
 * Which frames are NVMe-oF and what they carry, on captures/nvme-rdma.pcap: ownership from the RDMA
 * CM (REQ to port 4420 and its REP), none without it (the frames stay opaque), --decode-as by QPN
 * and by port, the reassembly of a capsule sent in two SEND packets (and a LAST without its FIRST),
 * and the same output whether the capture is decoded in one run or in small batches that carry the
 * decoder's state (capture-engine/ulp-decoding.ts), as the worker threads decode it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readCapture, type CaptureRecord } from '../../packets/pcap';
import { decodeAt, type RocePacket } from '../../packets/decode';
import { NvmeDecoder, type NvmeFrame, type NvmeRules } from '../../ulp/nvme-rdma/nvme-decoder';
import { nvmeJson, nvmeJsonMember, nvmeWords, writeNvmeJsonMember } from '../../ulp/nvme-rdma/nvme-text';
import { GSI_QPN } from '../../packets/mad';
import { BatchPrinter, RecordBatch } from '../../capture-engine/decode-batch';
import { DEFAULT_PRINT_SETTINGS, FramePrinter, type PrintSettings } from '../../capture-engine/decode-printer';
import { UlpPass } from '../../capture-engine/ulp-decoding';
import { TextBytes, textOf } from '../../base/text-bytes';
import { decodeAsRules } from '../../cli/decode-as-option';
import { UsageError } from '../../cli/args';

const FILE = path.resolve(__dirname, '..', '..', 'captures', 'nvme-rdma.pcap');
const records: CaptureRecord[] = readCapture(new Uint8Array(fs.readFileSync(FILE))).records;

function decodeAll(rules: NvmeRules, keep: (r: CaptureRecord, p: RocePacket) => boolean = () => true): (NvmeFrame | null)[] {
  const dec = new NvmeDecoder(rules);
  return records.map((r) => {
    const view = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
    const d = decodeAt(view, r.data, 0, r.data.byteLength, r.linkType, {}, r.origLen);
    if (!d.roce || !keep(r, d)) return null;
    return dec.observe(d, view, 0);
  });
}

const CM_RULES: NvmeRules = { ports: [4420], qpns: [] };

describe('ownership', () => {
  const frames = decodeAll(CM_RULES);
  test('the CM REQ and REP to port 4420 make both queue pairs NVMe-oF', () => {
    expect(records).toHaveLength(61);
    const at = (n: number) => frames[n - 1];
    expect(at(1)).toMatchObject({ kind: 'cm-req', qid: 0, cmReq: { recfmt: 0, qid: 0, hrqsize: 32, hsqsize: 31, cntlid: 0xffff } });
    expect(at(2)).toMatchObject({ kind: 'cm-rep', cmRep: { recfmt: 0, crqsize: 32 } });
    expect(at(3)).toBeNull(); // RTU
    expect(at(4)).toMatchObject({ kind: 'fragment', direction: 'to-target', qid: 0, length: 1024 });
    expect(at(6)).toBeNull(); // an ACK carries no NVMe-oF
    expect(at(7)).toMatchObject({ kind: 'completion', direction: 'to-host', of: { commandId: 0, fctype: 1 } });
    expect(nvmeWords(at(17) as NvmeFrame)).toMatch(/^NVMe Identify cid 3 cns 1 keyed 0x[0-9a-f]+ 4096 B key 0x[0-9a-f]{8}$/);
    expect(at(19)).toMatchObject({ kind: 'data', of: { commandId: 3 } });
    expect(nvmeWords(at(34) as NvmeFrame)).toBe('NVMe Write cid 1 nsid 1 lba 16 blocks 1 in-capsule 512 B');
    expect(nvmeWords(at(40) as NvmeFrame)).toBe('NVMe CQE cid 2 (Read) LBA Out of Range DNR sqhd 3');
    // A Write with a keyed SGL: the controller's RDMA READ of the host's data, and its responses.
    expect(nvmeWords(at(42) as NvmeFrame)).toMatch(/^NVMe Write cid 3 nsid 1 lba 24 blocks 8 keyed 0x[0-9a-f]+ 4096 B key 0x[0-9a-f]{8}$/);
    expect(at(44)).toMatchObject({ kind: 'data', direction: 'to-host', length: 0, of: { commandId: 3, opcode: 0x01 } });
    expect(at(49)).toMatchObject({ kind: 'completion', completion: { commandId: 3, status: 0 }, of: { commandId: 3 } });
    expect(at(53)).toMatchObject({ kind: 'data', of: { commandId: 4 } });
    // The CQE of the Read whose SGL asked for invalidation, in a SEND with Invalidate.
    expect(at(58)).toMatchObject({ kind: 'completion', completion: { commandId: 4, status: 0 } });
    expect(nvmeWords(at(61) as NvmeFrame)).toBe('NVMe-oF CM REJ qid 9 status 4 (invalid host SQ size)');
    expect(frames.filter((f) => f?.error != null)).toEqual([]);
  });
  test("every packet of an RDMA transfer belongs to its command: a WRITE's MIDDLE and LAST by its FIRST, READ responses by their request's PSN", () => {
    const ofFrames = (from: number, to: number) => frames.slice(from - 1, to).map((f) => [f?.kind, f?.of?.commandId ?? null, f?.length]);
    // Identify's data: an RDMA WRITE of 4096 bytes in four packets to the host.
    expect(ofFrames(19, 22)).toEqual(Array(4).fill(['data', 3, 1024]));
    // The keyed Write: the controller's READ request (no data) and four responses to it.
    expect(ofFrames(44, 48)).toEqual([['data', 3, 0], ...Array(4).fill(['data', 3, 1024])]);
    expect(frames.slice(44, 48).every((f) => f?.direction === 'to-target' && f.of?.opcode === 0x01)).toBe(true);
    // The invalidating Read's data.
    expect(ofFrames(53, 56)).toEqual(Array(4).fill(['data', 4, 1024]));
    expect(nvmeWords(frames[45] as NvmeFrame)).toBe('NVMe data cid 3 (Write) 1024 B');
    expect(nvmeWords(frames[43] as NvmeFrame)).toBe('NVMe data cid 3 (Write)');
  });
  test('a READ response whose request was not captured, or a WRITE MIDDLE whose FIRST was not, belongs to no command', () => {
    const f = decodeAll(CM_RULES, (r) => r.index !== 44 && r.index !== 53);
    expect(f.slice(44, 48).map((x) => x?.of ?? null)).toEqual([null, null, null, null]);
    expect(f.slice(53, 56).map((x) => x?.of ?? null)).toEqual([null, null, null]);
  });
  test('a capsule in SEND FIRST + LAST is put together: the Connect and its data', () => {
    const connect = frames[4] as NvmeFrame;
    expect(connect.packets).toBe(2);
    expect(connect.command?.connectData).toMatchObject({ cntlid: 0xffff, subnqn: 'nqn.2024-01.io.roce-ts:sample' });
    expect(connect.command?.fabrics?.connect).toEqual({ recfmt: 0, qid: 0, sqsize: 31, cattr: 0, kato: 120000 });
  });
  test('a LAST whose FIRST was not seen is an error of the capsule, not a crash', () => {
    const f = decodeAll(CM_RULES, (r) => r.index !== 4);
    expect(f[4]).toMatchObject({ kind: 'fragment', error: { code: 'ROCE_ERR_BAD_FIELD' } });
    expect(f[8]).toMatchObject({ kind: 'command' });
  });
  test('without the CM exchange the frames stay opaque', () => {
    expect(decodeAll(CM_RULES, (_r, p) => p.bth?.destQp !== GSI_QPN).every((f) => f === null)).toBe(true);
  });
  test('with the port not an NVMe-oF one, nothing is NVMe-oF; --decode-as port=4420=nvme adds it back', () => {
    expect(decodeAll({ ports: [4421], qpns: [] }).every((f) => f === null)).toBe(true);
    expect(decodeAll({ ports: [4421, 4420], qpns: [] })).toEqual(frames);
  });
  test('--decode-as qpn=Q=nvme without the CM: commands by their size to the target, CQEs to the host', () => {
    const target =
      (frames[1] as NvmeFrame) &&
      decodeAt(new DataView(records[1]!.data.buffer, records[1]!.data.byteOffset), records[1]!.data, 0, records[1]!.data.byteLength, 1);
    const rep = target.roce ? target.mad?.cm : null;
    const hostQpn =
      records[0] &&
      (decodeAt(new DataView(records[0].data.buffer, records[0].data.byteOffset), records[0].data, 0, records[0].data.byteLength, 1) as RocePacket).mad?.cm;
    if (rep?.name !== 'REP' || hostQpn?.name !== 'REQ') throw new Error('frames 1-2 are the REQ and REP');
    const f = decodeAll({ ports: [], qpns: [rep.fields.localQpn, hostQpn.fields.localQpn] }, (_r, p) => p.bth?.destQp !== GSI_QPN);
    expect(f[8]).toMatchObject({ kind: 'command', direction: 'to-target', command: { sqe: { commandId: 1 } } });
    expect(f[10]).toMatchObject({ kind: 'completion', direction: 'to-host', of: { commandId: 1 } });
    // The queue ID comes from the Connect seen on the queue.
    expect(f[16]).toMatchObject({ kind: 'command', qid: 0 });
  });
});

test("a frame's JSON member is JSON.stringify of its object, whether written from a template (data, parts, completions) or not, as a string or into bytes", () => {
  const runs = [decodeAll(CM_RULES), decodeAll(CM_RULES, (r) => r.index !== 4), decodeAll({ ports: [], qpns: [0xe7f153, 0xe1a799] })];
  const frames = runs.flat().filter((f): f is NvmeFrame => f !== null);
  expect(new Set(frames.map((f) => f.kind))).toEqual(new Set(['cm-req', 'cm-rep', 'cm-rej', 'command', 'completion', 'fragment', 'data']));
  expect(frames.some((f) => f.error !== null && f.command === null)).toBe(true);
  const wrong = frames.filter((f) => nvmeJsonMember(f) !== `,"nvme":${JSON.stringify(nvmeJson(f))}`);
  expect(wrong).toEqual([]);
  const wrongBytes = frames.filter((f) => textOf((t) => writeNvmeJsonMember(t, f)) !== nvmeJsonMember(f));
  expect(wrongBytes).toEqual([]);
});

describe('the same output in one run and in batches that carry the state', () => {
  const settings = (over: Partial<PrintSettings>): PrintSettings => ({ ...DEFAULT_PRINT_SETTINGS, ...over });
  const oneRun = (s: PrintSettings): string => {
    const chunks: Uint8Array[] = [];
    const t = new TextBytes((c) => {
      chunks.push(c.slice());
      return true;
    });
    const p = new FramePrinter(t, s, undefined);
    for (const r of records) {
      const view = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
      p.record(view, r.data, 0, r.data.byteLength, r.linkType, r.origLen, r.index, r.sec, r.nsec, r.timeDigits);
    }
    t.end();
    return Buffer.concat(chunks).toString('utf8');
  };
  const batched = (s: PrintSettings, size: number): string => {
    const pass = new UlpPass(s.ulp, s.rocePort);
    let out = '';
    let first = null;
    for (let i = 0; i < records.length; i += size) {
      const b = RecordBatch.fresh(0);
      for (const r of records.slice(i, i + size)) b.add(r.index, r.sec, r.linkType, r.origLen, r.data, r.nsec, r.timeDigits);
      first ??= b.timeAt(0);
      const ulpStates = pass.snapshot();
      pass.scan(b.data, b.meta, b.count);
      const prev =
        i === 0
          ? null
          : (() => {
              const r = records[i - 1] as CaptureRecord;
              return { sec: r.sec, nsec: r.nsec, digits: r.timeDigits };
            })();
      // A fresh printer for every batch, as a worker thread that sees only this batch.
      const res = new BatchPrinter(s, undefined, null).print({ seq: 0, count: b.count, first, prev, data: b.data, meta: b.meta, spare: [], ulpStates });
      out += res.out.map((c) => Buffer.from(c).toString('utf8')).join('');
    }
    return out;
  };
  test.each([
    ['summary lines', {}],
    ['JSON', { json: true }],
    ['field trees', { verbose: true }],
  ] as const)('%s', (_name, over) => {
    const s = settings(over);
    const whole = oneRun(s);
    expect(whole).toMatch(/Fabrics Connect/);
    // Batches of 1 and 3 records cut the CM exchanges and the two-packet capsules apart.
    for (const size of [1, 3, 7]) expect(batched(s, size)).toBe(whole);
  });
});

describe('--decode-as', () => {
  test('qpn and port rules, 4420 always in', () => {
    expect(decodeAsRules(['qpn=0x12=nvme', 'qpn=19=nvme', 'port=4421=NVMe']).nvme).toEqual({ ports: [4420, 4421], qpns: [0x12, 19] });
    expect(decodeAsRules([]).nvme).toEqual({ ports: [4420], qpns: [] });
  });
  test.each(['qpn=0x12', 'qpn=0x12=srp', 'lid=3=nvme', 'qpn=0x1000000=nvme', 'port=70000=nvme'])('%s is a usage error', (v) => {
    expect(() => decodeAsRules([v])).toThrow(UsageError);
  });
});
