/**
 * The summary line written with its repeating runs copied (packets/summary-pieces.ts) reads exactly
 * as the line written piece by piece: over the bundled and the shared public captures, whole and
 * decoded as `roce decode` decodes for a summary (`lean` with its IP headers), and over many flows
 * and QPs interleaved, so that the tables' entries are replaced again and again.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { textOf } from '../../base/text-bytes';
import { buildRoceV2Frame } from '../../packets/build';
import { decodeAt, decodeFrame, type DecodeOptions, type RocePacket } from '../../packets/decode';
import { Opcode } from '../../packets/opcodes';
import { LinkType, iterateCapture } from '../../packets/pcap';
import { SummaryPieces } from '../../packets/summary-pieces';
import { writeSummaryLine } from '../../packets/summary';
import { Rng } from '../../base/rng';
import { noPublicCaptures, publicCapturesDir, testUnless } from '../support/skip';

function captureFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'interop' ? [] : captureFiles(p);
    return /\.pcap(ng)?$/.test(e.name) ? [p] : [];
  });
}

const AS_PRINTED: DecodeOptions = { lean: true, leanWithIp: true };

/** Compares the lines of every RoCE frame of `files`, each decoded fully and as printed; returns how many. */
function compareFiles(files: readonly string[]): number {
  const pieces = new SummaryPieces();
  let lines = 0;
  for (const file of files) {
    const bytes = new Uint8Array(fs.readFileSync(file));
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (const r of iterateCapture(bytes)) {
      const start = r.data.byteOffset - bytes.byteOffset;
      for (const opts of [{}, AS_PRINTED]) {
        const d = decodeAt(view, bytes, start, start + r.data.byteLength, r.linkType, opts, r.origLen);
        if (!d.roce) continue;
        const time = { sec: r.sec, nsec: r.nsec, digits: r.timeDigits };
        expect(textOf((t) => writeSummaryLine(t, r.index, time, d, pieces))).toBe(textOf((t) => writeSummaryLine(t, r.index, time, d)));
        lines++;
      }
    }
  }
  return lines;
}

test('the frames of the bundled captures', () => {
  expect(compareFiles(captureFiles(path.join(__dirname, '..', '..', 'captures')))).toBeGreaterThan(500);
});

testUnless(noPublicCaptures)('the frames of the shared public captures (real NICs, rxe, scapy)', () => {
  expect(compareFiles(captureFiles(publicCapturesDir() as string))).toBeGreaterThan(100);
});

test('many flows and QPs interleaved: entries replaced by other keys are never mistaken for them', () => {
  const rng = new Rng(5);
  const pieces = new SummaryPieces();
  const ops = [Opcode.RC_SEND_ONLY, Opcode.RC_ACKNOWLEDGE, Opcode.RC_RDMA_WRITE_MIDDLE, Opcode.UC_SEND_FIRST];
  const frames: RocePacket[] = [];
  for (let i = 0; i < 2000; i++) {
    // Few distinct values per field, so that keys differing in one field only are common.
    const host = (n: number): string => `198.18.${n % 3}.${n % 7}`;
    const op = ops[rng.u32() % ops.length]!;
    const spec = {
      eth: { src: 2, dst: 4 },
      ip: { version: 4 as const, src: host(rng.u32()), dst: host(rng.u32()) },
      udp: { srcPort: 49152 + (rng.u32() % 5) },
      bth: { opcode: op, destQp: rng.u32() % 5 === 0 ? 0xabcdef : rng.u32() % 300, psn: i },
      ...(op === Opcode.RC_ACKNOWLEDGE ? { aeth: { syndrome: 0x1f, msn: i } } : { payload: new Uint8Array(op === Opcode.RC_RDMA_WRITE_MIDDLE ? 256 : 8) }),
    };
    const d = decodeFrame(buildRoceV2Frame(spec), LinkType.Ethernet, AS_PRINTED);
    if (!d.roce) throw new Error('a built frame did not decode as RoCE');
    frames.push(d);
  }
  for (let round = 0; round < 3; round++) {
    for (const [i, d] of frames.entries()) {
      const time = { sec: 0, nsec: i * 1000, digits: 6 };
      expect(textOf((t) => writeSummaryLine(t, i + 1, time, d, pieces))).toBe(textOf((t) => writeSummaryLine(t, i + 1, time, d)));
    }
  }
});

test("two keys of one flow that land on one slot are both kept: each encoded once (nvme-rdma.pcap's READ request and READ RESPONSE MIDDLE)", () => {
  const bytes = new Uint8Array(fs.readFileSync(path.join(__dirname, '..', '..', 'captures', 'nvme-rdma.pcap')));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoded = [...iterateCapture(bytes)].map((r) => {
    const start = r.data.byteOffset - bytes.byteOffset;
    return decodeAt(view, bytes, start, start + r.data.byteLength, r.linkType, AS_PRINTED, r.origLen);
  });
  const find = (opcode: number): RocePacket => {
    const d = decoded.find((x): x is RocePacket => x.roce && x.bth?.opcode === opcode && x.bth.destQp !== 1);
    if (d === undefined) throw new Error(`no frame with opcode ${opcode}`);
    return d;
  };
  const request = find(Opcode.RC_RDMA_READ_REQUEST);
  const middle = find(Opcode.RC_RDMA_READ_RESPONSE_MIDDLE);
  const pieces = new SummaryPieces();
  const piece = (d: RocePacket): Uint8Array => pieces.opcodeQp(d, d.bth as NonNullable<RocePacket['bth']>);
  const first = [piece(request), piece(middle)];
  for (let i = 0; i < 3; i++) {
    expect(piece(request)).toBe(first[0]);
    expect(piece(middle)).toBe(first[1]);
  }
});
