/**
 * The pcap file writer streams to disk exactly the bytes `PcapWriter` builds in memory, for every
 * option; it refuses bad options before it creates the file, and writes nothing after close.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WireError } from '../../packets/errors';
import { LinkType, PcapWriter, type PcapWriteOptions } from '../../packets/pcap';
import { PcapFileWriter } from '../../nic-driver/pcap-file-writer';

function bytes(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 31 + i * 7) & 0xff;
  return b;
}

/** Frames of 0 to 1500 bytes, one with an original length beyond its data. */
const FRAMES: { data: Uint8Array; timestampNs: bigint; origLen?: number }[] = [
  { data: bytes(60, 1), timestampNs: 1_700_000_000_123_456_789n },
  { data: bytes(0, 2), timestampNs: 1_700_000_001_000_000_001n },
  { data: bytes(1, 3), timestampNs: 1_700_000_002_999_999_999n, origLen: 64 },
  { data: bytes(1500, 4), timestampNs: 1_700_000_003_000_000_000n },
];

let dir = '';
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-pcap-file-'));
});
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

test.each<PcapWriteOptions>([{}, { nanosecond: false, linkType: LinkType.Raw }, { snaplen: 100, linkType: LinkType.LinuxSll2 }])(
  'streams the same bytes as PcapWriter (%o)',
  (opts) => {
    const p = path.join(dir, 'out.pcap');
    const w = PcapFileWriter.open(p, opts);
    const mem = new PcapWriter(opts);
    for (const f of FRAMES) {
      w.write(f.data, f.timestampNs, f.origLen);
      mem.add(f.data, f.timestampNs, f.origLen);
    }
    w.close();
    w.close();
    expect(() => w.write(bytes(1, 1), 0n)).toThrow(expect.objectContaining({ code: 'ROCE_ERR_MISUSE' }));
    expect(Buffer.from(fs.readFileSync(p)).equals(Buffer.from(mem.toBytes()))).toBe(true);
  },
);

test('bad options throw before the file is created; a bad record writes nothing', () => {
  const p = path.join(dir, 'never.pcap');
  expect(() => PcapFileWriter.open(p, { linkType: 0x10000 })).toThrow(WireError);
  expect(fs.existsSync(p)).toBe(false);
  const q = path.join(dir, 'one.pcap');
  const w = PcapFileWriter.open(q);
  expect(() => w.write(bytes(4, 1), -1n)).toThrow(WireError);
  w.close();
  expect(Buffer.from(fs.readFileSync(q)).equals(Buffer.from(new PcapWriter().toBytes()))).toBe(true);
});
