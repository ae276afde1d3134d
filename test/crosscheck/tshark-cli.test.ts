/**
 * `roce decode` with tshark's command line against tshark 4.0 itself, on every bundled capture
 * (captures/*.pcap*, captures/rxe/*.pcap):
 *
 * - `-Y FILTER`: the frame numbers `roce decode -Y F -T fields -e frame.number` keeps equal
 *   `tshark -r FILE -Y F -T fields -e frame.number`, for a set of filters over every kind of field
 *   and operator;
 * - `-T fields -e ...`: every field roce decode knows (packets/frame-fields.ts) that tshark 4.0
 *   knows, digit for digit, on every frame;
 * - `-x`: the hex dump lines; `-t ad|a|ud|u|e|r|d|dd`: the time column (under TZ=UTC);
 * - `-w OUT`: the frames written are those kept, and tshark reads the file as the input's.
 *
 * Where tshark 4.0 and roce decode see a frame differently, the frame is left out of the comparison
 * of the fields concerned, for the reasons the field cross-check (tshark.test.ts) gives:
 *   - an ICMP error quoting a RoCE datagram: tshark dissects the quoted packet (a second ip.src,
 *     infiniband.*), roce decode does not;
 *   - an opcode tshark 4.0 does not know (CNP 0x81, XRC 0xa0-0xb7, FLUSH 0x1c, ATOMIC WRITE 0x1d)
 *     or places wrongly (RD 0x40-0x5f): only the BTH's fields are compared, not the headers after
 *     it, the ICRC nor `infiniband.bth`'s bytes;
 *   - a malformed frame (roce decode's JSON has an `error`): its infiniband.* fields;
 *   - a SEND whose payload opens with two bytes that name an EtherType and two zero bytes (an NVMe
 *     CQE with result 0x0008 does): tshark 4.0's "EtherType encapsulated" heuristic dissects the
 *     payload as a second packet (a second ip.version, `0`), so the frame's other fields are compared
 *     with tshark's first value, the outer packet's. The payload belongs to the ULP that the
 *     connection carries, not to EoIB;
 *   - `infiniband.immdt` and `infiniband.ieth`: tshark 4.0 adds each twice to the tree, so -T
 *     fields prints `00000100,00000100`; roce decode prints the value once;
 *   - protocols (`eth`, `ip`, `udp`, `vlan`, `ipv6`): tshark prints a description, roce decode the
 *     protocol's name (`infiniband` is compared: tshark prints its name too);
 *   - `infiniband.bth.fecn` and `.becn`: not in tshark 4.0.
 *
 * @group tshark
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { testUnless } from '../support/skip';
import { frameFieldNames, frameField } from '../../packets/frame-fields';
import { readCapture } from '../../packets/pcap';

const ROOT = path.resolve(__dirname, '..', '..');
const CAPTURES = path.join(ROOT, 'captures');
const CLI = path.join(ROOT, 'bin', 'roce.js');

function findTool(name: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return null;
}

const TSHARK = findTool('tshark');
const MERGECAP = findTool('mergecap');
const noTshark = TSHARK === null ? 'tshark is not installed (scripts/setup-system.sh installs it)' : null;
const noCli = fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js')) ? null : 'the CLI is not built (npm run build)';
const skip = noTshark ?? noCli;
const ENV = { ...process.env, TZ: 'UTC' };

const capturesIn = (dir: string): string[] =>
  fs
    .readdirSync(path.join(CAPTURES, dir))
    .filter((f) => /\.pcap(ng)?$/.test(f))
    .sort()
    .map((f) => path.posix.join(dir, f));
const CAPTURE_FILES = [...capturesIn('.'), ...capturesIn('rxe')];

/** ULP dissectors that would claim SEND payloads heuristically (EoIB takes a UD SEND's and hides its ICRC), as in tshark.test.ts. */
const ULP_PROTOCOLS = ['smc', 'smb_direct', 'rpcordma', 'nvme-rdma', 'lnet', 'iser', 'infiniband.eoib', 'infiniband_sdp', 'fcoib'];

function tshark(args: readonly string[]): string {
  const quiet = ['-n', '-o', 'infiniband.try_heuristic_first:FALSE', ...ULP_PROTOCOLS.flatMap((p) => ['--disable-protocol', p])];
  return execFileSync(TSHARK ?? 'tshark', [...quiet, ...args], {
    encoding: 'utf8',
    env: ENV,
    timeout: 30_000,
    maxBuffer: 256 << 20,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function roce(args: readonly string[]): string {
  return execFileSync(process.execPath, [CLI, 'decode', ...args], {
    encoding: 'utf8',
    env: ENV,
    timeout: 30_000,
    maxBuffer: 256 << 20,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

const lines = (text: string): string[] => text.split('\n').slice(0, -1);

/** What tshark 4.0 cannot be compared on, frame by frame (the file's doc comment says why). */
interface FrameKinds {
  icmp: Set<number>;
  bthOnly: Set<number>;
  malformed: Set<number>;
  /** Frames whose IBA payload tshark reads as an EtherType-encapsulated packet. */
  encapsulated: Set<number>;
}

function frameKinds(file: string): FrameKinds {
  const kinds: FrameKinds = { icmp: new Set(), bthOnly: new Set(), malformed: new Set(), encapsulated: new Set() };
  for (const l of lines(tshark(['-r', file, '-T', 'fields', '-e', 'frame.number', '-e', 'frame.protocols']))) {
    const [n, protocols] = l.split('\t');
    if ((protocols ?? '').includes(':icmp:')) kinds.icmp.add(Number(n));
    if ((protocols ?? '').includes(':infiniband:ethertype')) kinds.encapsulated.add(Number(n));
  }
  for (const l of lines(roce([file, '--json']))) {
    const o = JSON.parse(l) as { frame: number; roce: boolean; opcode?: number | null; error?: string };
    const op = o.opcode ?? -1;
    if (op === 0x81 || (op >= 0xa0 && op <= 0xb7) || op === 0x1c || op === 0x1d || (op >= 0x40 && op <= 0x5f)) kinds.bthOnly.add(o.frame);
    if (o.error !== undefined) kinds.malformed.add(o.frame);
  }
  return kinds;
}

const kindsCache = new Map<string, FrameKinds>();
const kindsOf = (file: string): FrameKinds => {
  let k = kindsCache.get(file);
  if (k === undefined) kindsCache.set(file, (k = frameKinds(file)));
  return k;
};

// ------------------------------------------------------------------ -T fields

/** The fields of ours that tshark 4.0 has too. */
const COMPARED_FIELDS = frameFieldNames().filter((n) => !/^infiniband\.bth\.[fb]ecn$/.test(n) && !(frameField(n)?.type === 'proto' && n !== 'infiniband'));

/** Whether field `name` of frame `n` is compared (see the file's doc comment). */
function compared(name: string, n: number, k: FrameKinds): boolean {
  if (k.icmp.has(n)) return false;
  if (!name.startsWith('infiniband')) return true;
  if (k.malformed.has(n)) return false;
  if (k.bthOnly.has(n)) return /^infiniband\.bth\.|^infiniband$/.test(name);
  return true;
}

function fieldMismatches(file: string): string[] {
  const args = ['-T', 'fields', '-E', 'header=y', ...COMPARED_FIELDS.flatMap((f) => ['-e', f])];
  const theirs = lines(tshark(['-r', file, ...args])).map((l) => l.split('\t'));
  const ours = lines(roce([file, ...args])).map((l) => l.split('\t'));
  const k = kindsOf(file);
  const out: string[] = [];
  if (ours.length !== theirs.length) out.push(`lines: ours ${ours.length}, tshark ${theirs.length}`);
  expect(ours[0]).toEqual(COMPARED_FIELDS);
  for (let i = 1; i < Math.min(ours.length, theirs.length); i++) {
    COMPARED_FIELDS.forEach((name, j) => {
      if (!compared(name, i, k)) return;
      let t = theirs[i]?.[j] ?? '';
      const o = ours[i]?.[j] ?? '';
      // tshark 4.0 puts the ImmDt and the IETH in its tree twice.
      if ((name === 'infiniband.immdt' || name === 'infiniband.ieth') && /^([0-9a-f]+),\1$/.test(t)) t = t.slice(0, t.indexOf(','));
      // tshark 4.0 dissects an EtherType-looking SEND payload as a second packet: the outer one is first.
      if (k.encapsulated.has(i) && !name.startsWith('infiniband')) t = t.split(',').slice(0, o.split(',').length).join(',');
      if (t !== o) out.push(`frame ${i} ${name}: ours ${JSON.stringify(o)}, tshark ${JSON.stringify(t)}`);
    });
  }
  return out;
}

describe('roce decode -T fields against tshark -T fields', () => {
  test('the fields compared cover the headers roce decode reads', () => {
    expect(COMPARED_FIELDS.length).toBeGreaterThan(80);
    expect(COMPARED_FIELDS).toEqual(
      expect.arrayContaining([
        'eth.src',
        'vlan.id',
        'ip.dsfield.ecn',
        'ipv6.hlim',
        'udp.length',
        'infiniband.bth.destqp',
        'infiniband.reth.va',
        'infiniband.aeth.syndrome',
        'infiniband.deth.q_key',
        'infiniband.immdt',
        'infiniband.invariant.crc',
        'frame.time_relative',
      ]),
    );
  });

  for (const name of CAPTURE_FILES) {
    testUnless(skip)(`${name}: every field of every frame, digit for digit`, () => {
      expect(fieldMismatches(path.join(CAPTURES, name))).toEqual([]);
    });
  }

  testUnless(skip)('-E header, separator, quote, occurrence and aggregator as tshark', () => {
    const file = path.join(CAPTURES, 'rxe', 'rping-req-retries.pcap');
    for (const opts of [
      ['-E', 'header=y', '-E', 'separator=,', '-E', 'quote=d'],
      ['-E', 'separator=/s', '-E', 'aggregator=/s', '-E', 'occurrence=l'],
      ['-E', 'occurrence=f', '-E', 'quote=s'],
      ['-E', 'occurrence=f', '-E', 'separator=|'],
    ]) {
      const args = ['-T', 'fields', ...opts, '-e', 'frame.number', '-e', 'eth.addr', '-e', 'udp.port', '-e', 'vlan.id', '-e', 'frame.time_epoch'];
      // Frames that are not ICMP errors (whose quoted packets tshark dissects).
      const drop = kindsOf(file).icmp;
      const keep = (ls: string[]): string[] => ls.filter((_, i) => !drop.has(opts.includes('header=y') ? i : i + 1));
      expect(keep(lines(roce([file, ...args])))).toEqual(keep(lines(tshark(['-r', file, ...args]))));
    }
  });
});

// ------------------------------------------------------------------ -Y

/** Filters over every kind of field and operator; each is run on every capture. */
const FILTERS = [
  'infiniband',
  'udp && !infiniband',
  'infiniband.bth.opcode == 17',
  'infiniband.bth.opcode in {4, 17, 100}',
  'infiniband.bth.opcode >= 0x0c and infiniband.bth.opcode le 16',
  'infiniband.bth.a == 1 && infiniband.bth.se == 0',
  // A bare field is there or not: every BTH has an se bit, so this keeps no frame.
  'infiniband.bth.a && !infiniband.bth.se || frame.number == 7',
  'infiniband.bth.a == 1 || infiniband.bth.se eq true',
  'infiniband.bth.destqp == 0x12 && infiniband.bth.psn > 3086850',
  'infiniband.bth.psn < 10 or infiniband.bth.padcnt != 0',
  'infiniband.bth.p_key == 65535 && infiniband.bth.opcode != 17',
  'infiniband.aeth',
  'infiniband.aeth.syndrome.opcode == 3 || infiniband.aeth.syndrome.opcode == 1',
  'infiniband.aeth.syndrome.credit_count == 31 && infiniband.aeth.msn >= 2',
  'infiniband.reth.dmalen > 1000',
  'infiniband.reth.r_key == 0x000a1b2c',
  'infiniband.reth.va >= 0x00007f3a1c204000',
  'infiniband.deth.q_key == 0x80010000',
  'infiniband.deth.srcqp ne 1',
  'infiniband.immdt',
  'infiniband.ieth == 00:c0:de:11',
  'infiniband.atomiceth.swapdt > 1',
  'infiniband.atomicacketh.origremdt == 0',
  'infiniband.invariant.crc < 0x80000000',
  'infiniband.grh.hoplmt == 64 || infiniband.grh',
  'ip.src == 198.18.0.1',
  'ip.addr == 198.18.0.0/24 && ip.dst != 198.18.0.2',
  'ip.addr ~= 198.18.0.1',
  'ip.src === 198.18.0.1',
  'ip.src > ip.dst',
  'ip.dsfield.ecn == 3 || ip.dsfield.dscp == 48',
  'ip.ttl <= 64 && ip.flags.df == 1 && ip.len > 1000',
  'ip.id >= 0x7a00',
  'ipv6',
  'ipv6.src == 2001:db8:18::1 || ipv6.dst == fd00::/8',
  'ipv6.hlim == 64 && ipv6.tclass.ecn != 0',
  'eth.src == 02:00:c6:12:00:01',
  'eth.addr == ff-ff-ff-ff-ff-ff',
  'eth.dst == 0200.c612.0002',
  'eth.type == 0x8915',
  'vlan.id == 100 && vlan.priority == 3',
  'udp.length > 1000',
  'udp.srcport == udp.dstport || udp.port == 53',
  'udp.dstport == 4791 and not (infiniband.bth.opcode == 0 or infiniband.bth.opcode == 1)',
  'frame.number <= 5 || frame.number == 40',
  'frame.len > 1000 and frame.cap_len < 1100',
  'frame.time_relative > 0.0003 && frame.time_relative <= 0.5',
  'frame.time_delta < 0.000002',
  '!(ip || ipv6)',
  'not infiniband.bth.m == 1 and infiniband.bth.tver == 0 and udp',
];

function framesKept(file: string, filter: string): { ours: number[]; theirs: number[] } {
  const args = ['-Y', filter, '-T', 'fields', '-e', 'frame.number'];
  return { ours: lines(roce([file, ...args])).map(Number), theirs: lines(tshark(['-r', file, ...args])).map(Number) };
}

/**
 * Every bundled capture in one pcapng (mergecap -a: one after the other, each with its own
 * interface, link type and time resolution), so that each filter costs one run of each program.
 */
function mergedCaptures(dir: string): string {
  const out = path.join(dir, 'all.pcapng');
  execFileSync(MERGECAP ?? 'mergecap', ['-a', '-F', 'pcapng', '-w', out, ...CAPTURE_FILES.map((f) => path.join(CAPTURES, f))], {
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
  });
  return out;
}

const noMergecap = MERGECAP === null ? 'mergecap (Wireshark) is not installed' : null;

describe('roce decode -Y against tshark -Y', () => {
  test('every filter compiles, and the set touches each operator', () => {
    const all = FILTERS.join(' ');
    for (const op of ['==', '!=', '~=', '===', '<', '<=', '>', '>=', '&&', '||', '!', ' and ', ' or ', 'not ', ' eq ', ' ne ', ' le ', ' in {', '('])
      expect(all).toContain(op);
  });

  testUnless(skip ?? noMergecap)('every filter keeps the frames tshark keeps, over every bundled capture', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-decode-y-'));
    try {
      const file = mergedCaptures(dir);
      const k = kindsOf(file);
      expect(k.icmp.size + k.bthOnly.size + k.malformed.size).toBeGreaterThan(0);
      const wrong: string[] = [];
      const keptBy: Record<string, number> = {};
      for (const filter of FILTERS) {
        // Frames whose infiniband.* fields are not compared (above) are left out of filters on them.
        const ib = filter.includes('infiniband');
        const deep = /infiniband\.(?!bth\.)|infiniband(?![.\w])/.test(filter);
        const out = (n: number): boolean => k.icmp.has(n) || (ib && k.malformed.has(n)) || (deep && k.bthOnly.has(n));
        const { ours, theirs } = framesKept(file, filter);
        const a = ours.filter((n) => !out(n));
        const b = theirs.filter((n) => !out(n));
        keptBy[filter] = b.length;
        if (JSON.stringify(a) !== JSON.stringify(b)) wrong.push(`${filter}: ours ${a.join(' ')}; tshark ${b.join(' ')}`);
      }
      expect(wrong).toEqual([]);
      // Not vacuous: each filter keeps some frames and leaves others.
      const frames = lines(roce([file, '-T', 'fields', '-e', 'frame.number'])).length;
      expect(Object.entries(keptBy).filter(([, n]) => n === 0 || n === frames)).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ------------------------------------------------------------------ -x, -t, -w

describe('roce decode -x, -t and -w against tshark', () => {
  testUnless(skip)("-x: the hex dump lines of every frame are tshark's", () => {
    for (const name of ['rc-conversation.pcap', 'uc-ud-v6-vlan.pcap', 'rxe/send-bw-rnr.pcap']) {
      const file = path.join(CAPTURES, name);
      // Frames are separated by a blank line; tshark may add a dump of a second data source (a
      // "Frame (N bytes):" heading, then the payload from offset 0): only the frame's own is kept.
      const hex = (text: string): string[] =>
        text.split('\n\n').flatMap((block) => {
          const rows = block.split('\n').filter((l) => /^[0-9a-f]{4,8} {2}/.test(l));
          const second = rows.findIndex((l, i) => i > 0 && /^0+ {2}/.test(l));
          return second < 0 ? rows : rows.slice(0, second);
        });
      const ours = hex(roce([file, '-x', '-T', 'fields', '-e', 'frame.number']));
      expect(ours.length).toBeGreaterThan(10);
      expect(ours).toEqual(hex(tshark(['-r', file, '-x'])));
    }
  });

  testUnless(skip)("-t: each time column equals tshark's (TZ=UTC), in a ns and a µs capture", () => {
    for (const name of ['rc-conversation.pcap', 'rc-conversation-usec-be.pcap']) {
      const file = path.join(CAPTURES, name);
      for (const mode of ['ad', 'a', 'ud', 'u', 'e', 'r', 'd', 'dd']) {
        // tshark's column is the second of its summary line: the date and time of day make two words.
        const words = mode === 'ad' || mode === 'ud' ? 2 : 1;
        const col = (l: string): string =>
          l
            .trim()
            .split(/\s+/)
            .slice(1, 1 + words)
            .join(' ');
        const filter = 'frame.number in {2, 5, 9, 30}';
        const ours = lines(roce([file, '-t', mode, '-Y', filter])).map(col);
        const theirs = lines(tshark(['-r', file, '-t', mode, '-Y', filter])).map(col);
        expect({ mode, name, ours }).toEqual({ mode, name, ours: theirs });
      }
    }
  });

  testUnless(skip)('-w: the frames kept, in a pcap tshark reads as it reads the input (link type, time resolution)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-decode-w-'));
    try {
      for (const name of ['rc-conversation.pcap', 'rc-conversation-usec-be.pcap', 'rc-conversation-sll2.pcap', 'rc-conversation.pcapng']) {
        const file = path.join(CAPTURES, name);
        const out = path.join(dir, `${path.basename(name)}.pcap`);
        const filter = 'infiniband.bth.a || frame.number == 1';
        expect(roce([file, '-Y', filter, '-w', out])).toBe('');
        const fields = [
          '-T',
          'fields',
          '-e',
          'frame.time_epoch',
          '-e',
          'frame.len',
          '-e',
          'frame.cap_len',
          '-e',
          'infiniband.bth.psn',
          '-e',
          'infiniband.invariant.crc',
        ];
        const written = lines(tshark(['-r', out, ...fields]));
        expect(written.length).toBeGreaterThan(10);
        expect(written).toEqual(lines(tshark(['-r', file, '-Y', filter, ...fields])));
        const wrote = readCapture(new Uint8Array(fs.readFileSync(out)));
        const read = readCapture(new Uint8Array(fs.readFileSync(file)));
        expect(wrote.format).toBe('pcap');
        expect(wrote.records[0]?.linkType).toBe(read.records[0]?.linkType);
        expect(wrote.records[0]?.timeDigits).toBe(read.records[0]?.timeDigits);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
