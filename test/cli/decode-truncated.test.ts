/**
 * `roce decode` and `roce analyze` on captures whose frames the capture tool cut short, whether the
 * records admit it (snaplen) or not (the cut length written as the original length too): the
 * summary, `-v`, `--json` and `--errors` of decode, its closing line, and analyze's frame flags
 * agree that a cut frame is truncated, not malformed, and that a frame with a fault of its own is
 * malformed (or has a bad ICRC) whether cut or not. The worker threads print and judge the same.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { PcapWriter } from '../../packets/pcap';
import { sealIcrcV2 } from '../../packets/icrc';
import { ipv4Checksum } from '../../packets/ipv4';
import { Op, Syn, ack, frame, req, type Step, EPOCH } from '../analysis/frames';
import { cutSnaplen, cutUnadmitted } from '../support/degrade';
import { roce } from '../support/cli';
import { testUnless } from '../support/skip';

const ROOT = path.resolve(__dirname, '..', '..');
const CLI = path.join(ROOT, 'bin', 'roce.js');
const noCli = fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js')) ? null : 'the CLI is not built (npm run build)';

/** An ACK carrying 8 payload bytes: a fault of the frame's own (RC ACKNOWLEDGE carries none). */
function ackWithPayload(psn: number): Uint8Array {
  const f = frame(ack(0, psn));
  const long = new Uint8Array(f.length + 8);
  long.set(f.subarray(0, f.length - 4));
  const v = new DataView(long.buffer);
  v.setUint16(16, v.getUint16(16) + 8); // IPv4 total length
  v.setUint16(38, v.getUint16(38) + 8); // UDP length
  v.setUint16(24, 0);
  v.setUint16(24, ipv4Checksum(v, 14, 20));
  sealIcrcV2(long, 14, long.length - 4);
  return long;
}

/** Frames 1-9 a conversation (WRITE FIRST/LAST, a READ, SENDs, a NAK and go-back-N), 10 an ACK with a bad ICRC, 11 an ACK with a payload. */
function wholeCapture(): Uint8Array {
  const steps: Step[] = [
    req(0, Op.SEND_ONLY, 10, { len: 1000 }),
    req(1, 0x06, 11, { reth: { va: 0x1000n, rkey: 0x55, dmaLength: 2000 }, len: 1024 }), // RDMA WRITE FIRST
    req(2, 0x08, 12, { len: 976 }), // RDMA WRITE LAST
    ack(4, 10, Syn.NAK_SEQ),
    req(6, Op.SEND_ONLY, 10, { len: 1000 }),
    req(7, 0x06, 11, { reth: { va: 0x1000n, rkey: 0x55, dmaLength: 2000 }, len: 1024 }),
    req(8, 0x08, 12, { len: 976 }),
    req(9, Op.READ_REQUEST, 13, { reth: { va: 0x2000n, rkey: 0x56, dmaLength: 64 } }),
    ack(12, 12),
  ];
  const w = new PcapWriter({ nanosecond: true });
  for (const s of steps) w.add(frame(s), EPOCH + BigInt(s.us * 1000));
  w.add(frame({ ...ack(20, 13), badIcrc: true }), EPOCH + 20_000n);
  w.add(ackWithPayload(13), EPOCH + 21_000n);
  return w.toBytes();
}

let dir: string;
const files: Record<string, string> = {};
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-decode-truncated-'));
  const whole = wholeCapture();
  const cuts: Record<string, Uint8Array> = {
    whole,
    snap128: cutSnaplen(whole, 128),
    unsaid128: cutUnadmitted(whole, 128),
    snap64: cutSnaplen(whole, 64),
    unsaid64: cutUnadmitted(whole, 64),
    unsaid50: cutUnadmitted(whole, 50),
  };
  for (const [name, bytes] of Object.entries(cuts)) {
    files[name] = path.join(dir, `${name}.pcap`);
    fs.writeFileSync(files[name]!, bytes);
  }
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const lines = (s: string): string[] => s.split('\n').filter((l) => l !== '');
const jsonOf = async (file: string): Promise<Record<string, unknown>[]> =>
  lines((await roce('decode', '--json', file)).out).map((l) => JSON.parse(l) as Record<string, unknown>);

/** Frame numbers analyze flags icrcBad or malformed, and how many it flags truncated. */
async function analyzeFlags(file: string): Promise<{ bad: number[]; icrcBad: number; malformed: number; truncated: number }> {
  const r = await roce('analyze', '--json', '--all-frames', '--threads', '1', file);
  const doc = JSON.parse(r.out) as {
    frames: { frame: number; flags: string[] }[];
    summary: { flags: Record<string, number> };
    captureQuality: { truncated: number };
  };
  const bad = doc.frames.filter((f) => f.flags.includes('icrcBad') || f.flags.includes('malformed')).map((f) => f.frame);
  return { bad, icrcBad: doc.summary.flags['icrcBad'] ?? -1, malformed: doc.summary.flags['malformed'] ?? -1, truncated: doc.captureQuality.truncated };
}

describe('decode and analyze agree on cut frames', () => {
  // [capture, truncated frames, frames with a fault (--errors), of which a bad ICRC]
  const cases: [string, number, number[], number][] = [
    ['whole', 0, [10, 11], 1],
    ['snap128', 6, [10, 11], 1], // the SENDs and WRITEs; the READ REQUEST is 74 bytes, the ACKs 62 and 70
    ['unsaid128', 6, [10, 11], 1],
    ['snap64', 8, [10, 11], 1], // and the READ REQUEST and the ACK with a payload, still malformed: its own lengths break its opcode's rule
    ['unsaid64', 8, [10, 11], 1],
    ['unsaid50', 11, [], 0], // every frame cut inside its BTH: nothing to judge
  ];
  for (const [name, truncated, faulty, badIcrc] of cases) {
    test(`${name}: the closing line, --errors and analyze's flags name the same frames`, async () => {
      const file = files[name]!;
      const s = await roce('decode', file);
      expect(s.code).toBe(0);
      expect(s.err).toContain(
        `11 frames read (pcap), 11 RoCE, ${faulty.length} malformed, ${badIcrc} with a bad ICRC${truncated > 0 ? `, ${truncated} truncated by the capture` : ''}`,
      );
      const errors = await roce('decode', '--errors', file);
      expect(lines(errors.out).map((l) => Number(l.trim().split(' ')[0]))).toEqual(faulty);
      const a = await analyzeFlags(file);
      expect(a.bad).toEqual(faulty);
      expect(a.icrcBad).toBe(badIcrc);
      expect(a.malformed).toBe(faulty.length - badIcrc);
      expect(a.truncated).toBe(truncated);
      const json = await jsonOf(file);
      expect(json.filter((o) => 'error' in o).map((o) => o['frame'])).toEqual(faulty);
      expect(json.filter((o) => o['truncated'] === true)).toHaveLength(truncated);
      for (const o of json.filter((x) => x['truncated'] === true)) expect(o).toMatchObject({ icrc: null, icrcOk: null });
    });
  }
});

describe('what decode prints of a cut frame', () => {
  test('records cut to 64 bytes that do not say so: every header held, where the capture ends', async () => {
    const file = files['unsaid64']!;
    const out = lines((await roce('decode', file)).out);
    expect(out[0]).toMatch(/RC_SEND_ONLY QP=0x000012 PSN=10 A len=1000 \[capture truncated: 10 of 1000 payload bytes, ICRC not captured\]$/);
    expect(out[1]).toMatch(
      /RC_RDMA_WRITE_FIRST QP=0x000012 PSN=11 A len=1024 \[capture truncated inside the RETH: 0 of 1024 payload bytes, ICRC not captured\]$/,
    );
    expect(out[3]).toMatch(/RC_ACKNOWLEDGE QP=0x000011 PSN=10 NAK PSN sequence error MSN=0 ICRC ok$/);
    expect(out[7]).toMatch(/RC_RDMA_READ_REQUEST QP=0x000012 PSN=13 A \[capture truncated inside the RETH: ICRC not captured\]$/);
    expect(out[9]).toMatch(/ICRC BAD \[ROCE_ERR_BAD_ICRC/);
    expect(out[10]).toMatch(
      /RC_ACKNOWLEDGE QP=0x000011 PSN=13 ACK credits=unlimited MSN=0 len=8 \[capture truncated: 6 of 8 payload bytes, ICRC not captured\] \[ROCE_ERR_BAD_LENGTH: RC_ACKNOWLEDGE carries no payload/,
    );
    expect(out.slice(0, 9).join('\n')).not.toContain('ROCE_ERR');

    const v = (await roce('decode', '-v', '--frames', '2-2', file)).out;
    expect(v).toContain('Frame 2: 64 bytes');
    expect(v).toContain('IPv4: 198.18.0.1 → 198.18.0.2');
    expect(v).toContain('total length 1084');
    expect(v).toContain('UDP: 49441 → 4791, length 1064');
    expect(v).toContain('BTH: opcode 0x06 (RC_RDMA_WRITE_FIRST)');
    expect(v).toContain('PSN 11 (0x00000b)');
    expect(v).not.toContain('RETH:');
    expect(v).toContain('Truncated: the capture ends inside the RETH of RC_RDMA_WRITE_FIRST, after 10 of its 16 bytes (at byte 64)');
    expect(v).toContain('Payload: 1024 bytes (0 captured)');
    expect(v).toContain('ICRC: not captured');
    expect(v).not.toContain('Error:');

    const json = await jsonOf(file);
    expect(json[1]).toMatchObject({
      opcodeName: 'RC_RDMA_WRITE_FIRST',
      psn: 11,
      reth: null,
      payloadLength: 1024,
      truncated: true,
      truncatedIn: 'RETH',
      payloadCaptured: 0,
    });
    expect(json[0]).toMatchObject({ truncated: true, truncatedIn: 'payload', payloadCaptured: 10 });
    expect(json[3]).toMatchObject({ truncated: false, truncatedIn: null, icrcOk: true });
    expect(json[10]).toMatchObject({ truncated: true, truncatedIn: 'payload', error: expect.stringContaining('carries no payload') });
  });

  test('a capture ending inside the BTH: the frame is RoCE, its addresses and ports shown', async () => {
    const file = files['unsaid50']!;
    const out = lines((await roce('decode', file)).out);
    expect(out[0]).toMatch(/^\s+1\s+0\.000000000 v2 198\.18\.0\.1:49441 → 198\.18\.0\.2:4791 \[capture truncated inside the BTH\]$/);
    const json = await jsonOf(file);
    expect(json[0]).toMatchObject({ roce: true, opcode: null, truncated: true, truncatedIn: 'BTH', payloadLength: null });
    expect('error' in json[0]!).toBe(false);
  });

  testUnless(noCli)('the worker threads print and judge what one thread does', async () => {
    // Two threads need the built CLI's worker script (a process of its own); one thread runs in this process.
    for (const name of ['snap64', 'unsaid64', 'unsaid50']) {
      const file = files[name]!;
      for (const flags of [[], ['-v'], ['--json'], ['--errors']]) {
        const r = spawnSync(process.execPath, [CLI, 'decode', '--threads', '2', ...flags, file], { encoding: 'utf8', timeout: 60_000 });
        const one = await roce('decode', '--threads', '1', ...flags, file);
        expect({ name, flags, status: r.status, stdout: r.stdout, stderr: r.stderr }).toEqual({
          name,
          flags,
          status: one.code,
          stdout: one.out,
          stderr: one.err,
        });
        expect(one.code).toBe(0);
      }
      const two = spawnSync(process.execPath, [CLI, 'analyze', '--json', '--all-frames', '--threads', '2', file], { encoding: 'utf8', timeout: 60_000 }).stdout;
      expect(two).toBe((await roce('analyze', '--json', '--all-frames', '--threads', '1', file)).out);
    }
  });
});
