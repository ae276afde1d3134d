/** `roce decode`: output forms, filters, exit statuses and bad input. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { buildRoceV2Frame, type RoceV2Spec } from '../../packets/build';
import { PcapWriter, writePcapng } from '../../packets/pcap';

const eth = { src: 0x020000000001, dst: 0x020000000002 };
const a = { version: 4 as const, src: '198.18.0.1', dst: '198.18.0.2' };
const b = { version: 4 as const, src: '198.18.0.2', dst: '198.18.0.1' };

const specs: RoceV2Spec[] = [
  {
    eth,
    ip: a,
    udp: { srcPort: 49441 },
    bth: { opcode: 0x0a, destQp: 0x12, psn: 100, ackReq: true },
    reth: { va: 0x1000n, rkey: 0x55, dmaLength: 5 },
    payload: new Uint8Array([1, 2, 3, 4, 5]),
  },
  { eth, ip: b, udp: { srcPort: 49442 }, bth: { opcode: 0x11, destQp: 0x11, psn: 100 }, aeth: { syndrome: 0x1f, msn: 1 } },
  { eth, ip: a, udp: { srcPort: 49441 }, bth: { opcode: 0x04, destQp: 0x12, psn: 101, ackReq: true }, payload: new Uint8Array(8) },
  { eth, ip: b, udp: { srcPort: 49442 }, bth: { opcode: 0x11, destQp: 0x11, psn: 101 }, aeth: { syndrome: 0x60, msn: 1 } },
  {
    eth,
    ip: { version: 4, src: '198.18.0.3', dst: '198.18.0.1' },
    bth: { opcode: 0x64, destQp: 0x20, psn: 7 },
    deth: { qkey: 0x11111111, srcQp: 0x33 },
    payload: new Uint8Array(3),
  },
];

let dir: string;
let good: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-cli-'));
  const w = new PcapWriter();
  specs.forEach((s, i) => w.add(buildRoceV2Frame(s), 1_000_000_000_000_000_000n + BigInt(i) * 1_500_000n));
  const arp = new Uint8Array(42);
  arp.set([0x08, 0x06], 12);
  w.add(arp, 1_000_000_000_010_000_000n);
  const bad = buildRoceV2Frame({ ...specs[2]!, icrc: 0x12345678 });
  w.add(bad, 1_000_000_000_020_000_000n);
  good = path.join(dir, 'good.pcap');
  fs.writeFileSync(good, w.toBytes());
});

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function roce(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const o = memoryOutput();
  const code = await run(argv, o);
  return { code, out: o.out, err: o.err };
}

test('one summary line per RoCE frame, with the key fields and ICRC status', async () => {
  const r = await roce('decode', good);
  expect(r.code).toBe(0);
  const lines = r.out.trim().split('\n');
  expect(lines).toHaveLength(6); // 6 RoCE frames; the ARP frame is not listed
  expect(lines[0]).toMatch(
    /^\s*1\s+0\.000000000 v2 198\.18\.0\.1:49441 → 198\.18\.0\.2:4791 RC_RDMA_WRITE_ONLY QP=0x000012 PSN=100 A VA=0x0000000000001000 RKey=0x00000055 Len=5 len=5 ICRC ok$/,
  );
  expect(lines[1]).toMatch(/0\.001500000 .*RC_ACKNOWLEDGE QP=0x000011 PSN=100 ACK credits=unlimited MSN=1 ICRC ok$/);
  expect(lines[3]).toMatch(/NAK PSN sequence error MSN=1/);
  expect(lines[4]).toMatch(/UD_SEND_ONLY QP=0x000020 PSN=7 QKey=0x11111111 SrcQP=0x000033 len=3 ICRC ok/);
  expect(lines[5]).toMatch(/^\s+7 .*ICRC BAD \[ROCE_ERR_BAD_ICRC: bad ICRC/);
  expect(r.err).toMatch(/7 frames read \(pcap\), 6 RoCE, 1 malformed, 1 with a bad ICRC/);
});

test('--json prints exactly one object per frame, RoCE or not', async () => {
  const r = await roce('decode', '--json', good);
  const objs = r.out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(objs.map((o) => o['frame'])).toEqual([1, 2, 3, 4, 5, 6, 7]);
  // A nanosecond file: every one of its decimals, and the exact nanoseconds since frame 1.
  expect(objs[5]).toEqual({ frame: 6, time: '1000000000.010000000', timeRelativeNs: 10_000_000, roce: false });
  expect(objs[1]).toMatchObject({ time: '1000000000.001500000', timeRelativeNs: 1_500_000 });
  expect(objs[0]).toMatchObject({
    roce: true,
    version: 2,
    src: '198.18.0.1',
    dst: '198.18.0.2',
    srcPort: 49441,
    dstPort: 4791,
    opcode: 10,
    opcodeName: 'RC_RDMA_WRITE_ONLY',
    ackReq: true,
    psn: 100,
    padCount: 3,
    reth: { va: '0x0000000000001000', rkey: 0x55, dmaLength: 5 },
    aeth: null,
    payloadLength: 5,
    icrcOk: true,
  });
  expect(objs[0]).not.toHaveProperty('error');
  const f0 = buildRoceV2Frame(specs[0]!);
  expect(objs[0]!['icrc']).toBe(`0x${Buffer.from(f0.subarray(f0.length - 4)).toString('hex')}`); // wire byte order, as tshark
  expect(objs[3]!['aeth']).toEqual({ syndrome: 0x60, msn: 1, kind: 'NAK', value: 0 });
  expect(objs[4]!['deth']).toEqual({ qkey: 0x11111111, srcQp: 0x33 });
  expect(objs[6]).toMatchObject({ icrcOk: false, error: expect.stringMatching(/bad ICRC/) as unknown });
});

test('filters: QPN, opcode, frame range, count, errors', async () => {
  const frames = async (...args: string[]): Promise<number[]> =>
    (await roce('decode', '--json', ...args, good)).out
      .trim()
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => (JSON.parse(l) as { frame: number }).frame);
  expect(await frames('--qpn', '0x11')).toEqual([2, 4]);
  expect(await frames('--qpn', '0x33')).toEqual([5]); // DETH source QP
  expect(await frames('--opcode', 'ACKNOWLEDGE')).toEqual([2, 4]);
  expect(await frames('--opcode', 'RC_SEND_ONLY,0x64')).toEqual([3, 5, 7]);
  expect(await frames('--frames', '2-4')).toEqual([2, 3, 4]);
  expect(await frames('--frames', '6-')).toEqual([6, 7]);
  expect(await frames('-c', '2')).toEqual([1, 2]);
  expect(await frames('--errors')).toEqual([7]);
});

test('-v prints the field tree', async () => {
  const r = await roce('decode', '-v', '--frames', '1', good);
  expect(r.out).toContain('Frame 1:');
  expect(r.out).toContain('IPv4: 198.18.0.1 → 198.18.0.2');
  expect(r.out).toContain('header checksum');
  expect(r.out).toContain('BTH: opcode 0x0a (RC_RDMA_WRITE_ONLY)');
  expect(r.out).toContain('RETH: VA 0x0000000000001000, R_Key 0x00000055, DMA length 5');
  expect(r.out).toContain('Payload: 5 bytes: 0102030405');
  const f = buildRoceV2Frame(specs[0]!);
  const wire = Buffer.from(f.subarray(f.length - 4)).toString('hex');
  expect(r.out).toContain(`ICRC: 0x${wire} (wire order) [correct]`);
});

test('pcapng input gives the same JSON as pcap', async () => {
  const ng = path.join(dir, 'same.pcapng');
  fs.writeFileSync(ng, writePcapng(specs.map((s, i) => ({ data: buildRoceV2Frame(s), timestampNs: 1_000_000_000_000_000_000n + BigInt(i) * 1_500_000n }))));
  const x = (await roce('decode', '--json', ng)).out.trim().split('\n');
  const y = (await roce('decode', '--json', '--frames', '1-5', good)).out.trim().split('\n');
  expect(x).toEqual(y);
});

test('a truncated capture prints what it could and exits 1 saying how far it got', async () => {
  const whole = fs.readFileSync(good);
  const cut = path.join(dir, 'cut.pcap');
  fs.writeFileSync(cut, whole.subarray(0, whole.length - 10));
  const r = await roce('decode', '--json', cut);
  expect(r.code).toBe(1);
  expect(r.out.trim().split('\n')).toHaveLength(6);
  expect(r.err).toMatch(/truncated.*after 6 complete frames|6 complete frames/);
});

test.each([
  [['decode', '--bogus'], /unknown option --bogus/],
  [['decode', '--roce-port', 'abc'], /--roce-port must be an integer from 1 to 65535/],
  [['decode', '--roce-port', '70000'], /--roce-port must be an integer/],
  [['decode', '--opcode', 'NOPE'], /--opcode NOPE: no opcode has that name/],
  [['decode', '--frames', '5-2'], /ends before it starts/],
  [['decode', '--count'], /needs a value/],
  [['decode', '--json', '-v'], /cannot be combined/],
  [['decode', 'a', 'b'], /one FILE/],
  [['frobnicate'], /unknown command "frobnicate"/],
  // Names an object has by inheritance are not commands either (they crashed with a TypeError).
  [['__proto__'], /unknown command "__proto__"/],
  [['toString'], /unknown command "toString"/],
])('usage error %j', async (argv, msg) => {
  const r = await roce(...argv);
  expect(r.code).toBe(2);
  expect(r.err).toMatch(msg);
});

test('a missing file is a clear error with exit status 2', async () => {
  const r = await roce('decode', path.join(dir, 'nope.pcap'));
  expect(r.code).toBe(2);
  expect(r.err).toMatch(/cannot read .*nope\.pcap: no such file/);
});

test('a file that is not a capture exits 2, as the help says, with one line and nothing on stdout', async () => {
  const junk = path.join(dir, 'junk.pcap');
  fs.writeFileSync(junk, 'this is not a capture file at all');
  for (const flags of [[], ['--json'], ['-v']]) {
    const r = await roce('decode', ...flags, junk);
    expect(r).toEqual({ code: 2, out: '', err: `roce decode: ${junk}: not a pcap or pcapng capture: unknown capture magic 0x73696874 (not pcap or pcapng)\n` });
  }
});

const built = fs.existsSync(path.join(__dirname, '..', '..', 'dist', 'cli', 'main.js'));
(built ? test : test.skip)('the installed `roce` launcher runs the built CLI', () => {
  const out = execFileSync(process.execPath, [path.join(__dirname, '..', '..', 'bin', 'roce.js'), 'decode', '--json', '-c', '1', good], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  expect(JSON.parse(out)).toMatchObject({ frame: 1, opcodeName: 'RC_RDMA_WRITE_ONLY', icrcOk: true });
});

describe('CM MADs (captures/cm-exchanges.pcap, captures/malformed.pcap)', () => {
  const CAPS = path.resolve(__dirname, '..', '..', 'captures');
  const CM = path.join(CAPS, 'cm-exchanges.pcap');

  test('a summary line names the CM message and its key fields', async () => {
    const r = await roce('decode', CM);
    expect(r.code).toBe(0);
    const lines = r.out.trim().split('\n');
    expect(lines).toHaveLength(14);
    expect(lines[0]).toMatch(
      /UD_SEND_ONLY QP=0x000001 PSN=0 A QKey=0x80010000 SrcQP=0x000001 CM REQ svc 0x0000000001064e20 → 198\.18\.0\.2:20000 QPN 0x000011 PSN 3086848 comm 0x770f9bfe len=256 ICRC ok$/,
    );
    expect(lines.map((l) => / (CM \S+|MAD CM \S+)/.exec(l)?.[1])).toEqual([
      'CM REQ',
      'CM MRA',
      'CM REP',
      'CM RTU',
      'CM DREQ',
      'CM DREP',
      'CM REQ',
      'CM REJ',
      'CM SIDR_REQ',
      'CM SIDR_REP',
      'CM LAP',
      'CM APR',
      'MAD CM Get',
      'MAD CM GetResp',
    ]);
    expect(r.err).toMatch(/14 frames read \(pcap\), 14 RoCE, 0 malformed/);
  });

  test('-v prints every field of the CM message', async () => {
    const r = await roce('decode', '-v', '--frames', '8', CM);
    expect(r.out).toContain(
      '  CM REJ:\n    localCommId 0x51e2d3c4 (1373819844)\n    remoteCommId 0x0badf00d (195948557)\n    messageRejected 0 (REQ)\n    rejectedInfoLength 0\n    reason 28 (consumer reject)\n',
    );
    expect(r.out).toContain(`    privateData ${Buffer.from('server busy').toString('hex')} + 137 zero bytes\n`);
  });

  test('--json carries the mad object; --opcode and --qpn still select GSI datagrams', async () => {
    const r = await roce('decode', '--json', '--qpn', '1', '--frames', '9-10', CM);
    const objs = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(objs.map((o) => ((o['mad'] as Record<string, unknown>)['cm'] as Record<string, unknown>)['message'])).toEqual(['SIDR_REQ', 'SIDR_REP']);
    expect((objs[1]!['mad'] as Record<string, unknown>)['cm']).toMatchObject({
      requestId: 0x6520f457,
      status: 0,
      qpn: 0x13,
      serviceId: '0x0000000001111c06',
      qkey: 0x01234567,
    });
  });

  test('a bad MAD counts as malformed and is listed by --errors, with the reason', async () => {
    const r = await roce('decode', '--errors', path.join(CAPS, 'malformed.pcap'));
    const lines = r.out.trim().split('\n');
    expect(lines.slice(-2).map((l) => /\[MAD (ROCE_ERR_\w+)/.exec(l)?.[1])).toEqual(['ROCE_ERR_BAD_LENGTH', 'ROCE_ERR_BAD_FIELD']);
    expect(r.err).toMatch(/10 frames read \(pcap\), 10 RoCE, 9 malformed, 1 with a bad ICRC/);
  });
});
