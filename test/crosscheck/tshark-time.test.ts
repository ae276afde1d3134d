/**
 * Capture times against tshark, digit for digit: `roce decode` (`--json` "time" and
 * "timeRelativeNs", the summary's `-t abs|rel|delta` column, `-v`'s time since the first frame) and `roce analyze --json`
 * (`startTime`, `frames[].timeNs`) hold every frame's time as tshark's frame.time_epoch,
 * frame.time_relative and frame.time_delta give it.
 *
 * Every bundled capture (captures/, captures/rxe/) and, when present, every shared public capture
 * (../shared/captures/public) is checked as it is and written four ways by the project's own
 * writers: classic pcap in µs and in ns, pcapng with if_tsresol 6 (µs, the default) and 9 (ns).
 * A µs copy of a ns capture drops its last three digits (the writer truncates, as editcap does).
 * One pcapng more has two interfaces, µs and ns, with frames on each in turn. An ERF record in
 * classic pcap (the Endace capture) has its time in its own ERF header, to the ns, and that is what
 * tshark shows; in pcapng, the packet block's.
 *
 * tshark 4.0 prints frame.time_* with 9 decimals whatever the file's resolution
 * (`tshark -T fields -e frame.time_epoch`: `1705320000.000001000` for a µs file). Ours have the
 * file's decimals, 6 or 9: the two are the same number when ours, padded with zeros to tshark's
 * length, is tshark's text, and that is what is asserted; the count of our decimals is asserted
 * apart. The command runs in this process (one thread), and the built CLI on two threads (the
 * block readers: capture-engine/pcap-block-reader.ts, capture-engine/pcapng-block-reader.ts) must print the same.
 *
 * @group tshark
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { roce } from '../support/cli';
import { missingToolReason, noPublicCaptures, publicCapturesDir, testUnless } from '../support/skip';
import { concat, epb, idb, opt, shb } from '../support/pcapng-blocks';
import { type CaptureRecord, LinkType, PcapWriter, isPcapMagic, readCapture } from '../../packets/pcap';

const ROOT = path.resolve(__dirname, '..', '..');
const CAPTURES = path.join(ROOT, 'captures');
const CLI = path.join(ROOT, 'bin', 'roce.js');

const noTshark = missingToolReason('tshark', 'tshark is not installed (scripts/setup-system.sh installs it)');
const noCli = fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js')) ? null : 'the CLI is not built (npm run build)';
const skipOwn = noTshark ?? noCli;
const skipPublic = skipOwn ?? noPublicCaptures;

/** Capture files under `dir`, by path (captures/interop holds what the interop tests write meanwhile). */
function capturesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) return e.name === 'interop' ? [] : capturesUnder(p);
      return /\.pcap(ng)?$/.test(e.name) ? [p] : [];
    })
    .sort();
}

interface TsharkTimes {
  epoch: string;
  relative: string;
  delta: string;
}

/** tshark's times of every frame, by frame number. */
function tsharkTimes(file: string): Map<number, TsharkTimes> {
  const out = execFileSync(
    'tshark',
    ['-r', file, '-n', '-T', 'fields', '-e', 'frame.number', '-e', 'frame.time_epoch', '-e', 'frame.time_relative', '-e', 'frame.time_delta'],
    {
      encoding: 'utf8',
      timeout: 30_000,
      maxBuffer: 64 << 20,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const times = new Map<number, TsharkTimes>();
  for (const line of out.split('\n')) {
    if (line === '') continue;
    const [n, epoch, relative, delta] = line.split('\t');
    times.set(Number(n), { epoch: epoch ?? '', relative: relative ?? '', delta: delta ?? '' });
  }
  return times;
}

/** Decimals of a decimal number's text. */
const decimals = (text: string): number => (text.includes('.') ? text.length - text.indexOf('.') - 1 : 0);

/** `ours` is `theirs`, digit for digit, once padded with zeros to as many decimals as tshark prints. */
function expectSameDecimal(ours: string, theirs: string, what: string): void {
  expect({ what, decimalsAtMostTshark: decimals(ours) <= decimals(theirs) }).toEqual({ what, decimalsAtMostTshark: true });
  const padded = ours.includes('.') ? ours.padEnd(ours.length + decimals(theirs) - decimals(ours), '0') : `${ours}.${'0'.repeat(decimals(theirs))}`;
  expect({ what, time: padded }).toEqual({ what, time: theirs });
}

/** A decimal number of seconds as integer nanoseconds (exact; at most 9 decimals). */
function nsOf(text: string): bigint {
  const negative = text.startsWith('-');
  const [whole = '0', frac = ''] = text.replace(/^-/, '').split('.');
  const ns = BigInt(whole) * 1_000_000_000n + BigInt(frac.padEnd(9, '0'));
  return negative ? -ns : ns;
}

/** The time column of `roce decode`'s summary lines (and `-v`'s frame lines), by frame number. */
function timeColumn(out: string): Map<number, string> {
  const times = new Map<number, string>();
  for (const line of out.split('\n')) {
    const m = /^\s*(\d+)\s+(-?\d+(?:\.\d+)?) v[12] /.exec(line) ?? /^Frame (\d+): \d+ bytes, time (-?\d+(?:\.\d+)?)$/.exec(line);
    if (m !== null) times.set(Number(m[1]), m[2] as string);
  }
  return times;
}

const cliOut = (args: string[]): string =>
  execFileSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000, maxBuffer: 256 << 20, stdio: ['ignore', 'pipe', 'pipe'] });

/** What was compared in one file. */
interface Checked {
  frames: number;
  roceFrames: number;
}

/**
 * Holds every time `roce decode` and `roce analyze` print for `file` to tshark's. `digits`: the
 * decimals the file's timestamps have, when the test knows them (null: the file's own).
 */
async function checkFile(file: string, digits: ((frame: number) => number) | null): Promise<Checked> {
  const theirs = tsharkTimes(file);
  const label = path.basename(file);

  const json = await roce('decode', '--json', file);
  expect(json.code).toBe(0);
  const objects = json.out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { frame: number; time: string; timeRelativeNs: number; roce: boolean });
  expect(objects.map((o) => o.frame)).toEqual([...theirs.keys()]);
  for (const o of objects) {
    const t = theirs.get(o.frame) as TsharkTimes;
    const what = `${label} frame ${o.frame}`;
    expect(typeof o.time).toBe('string');
    if (digits !== null) expect({ what, decimals: decimals(o.time) }).toEqual({ what, decimals: digits(o.frame) });
    expectSameDecimal(o.time, t.epoch, `${what} time`);
    expect({ what, ns: BigInt(o.timeRelativeNs) }).toEqual({ what, ns: nsOf(t.relative) });
    expect(Number.isSafeInteger(o.timeRelativeNs)).toBe(true);
  }

  const roceFrames = objects.filter((o) => o.roce).map((o) => o.frame);
  for (const [mode, field] of [
    ['abs', 'epoch'],
    ['rel', 'relative'],
    ['delta', 'delta'],
  ] as const) {
    for (const verbose of mode === 'rel' ? [false, true] : [false]) {
      const r = await roce('decode', '-t', mode, ...(verbose ? ['-v'] : []), file);
      expect(r.code).toBe(0);
      const column = timeColumn(r.out);
      expect([...column.keys()]).toEqual(roceFrames);
      for (const [frame, text] of column) {
        const what = `${label} -t ${mode}${verbose ? ' -v' : ''} frame ${frame}`;
        expectSameDecimal(text, (theirs.get(frame) as TsharkTimes)[field], what);
        if (digits !== null && mode === 'abs') expect({ what, decimals: decimals(text) }).toEqual({ what, decimals: digits(frame) });
      }
    }
  }

  const analysis = await roce('analyze', '--json', '--all-frames', file);
  const doc = JSON.parse(analysis.out) as { startTime: string; frames: { frame: number; timeNs: number }[] };
  const first = [...theirs.values()][0];
  if (first !== undefined) expectSameDecimal(doc.startTime, first.epoch, `${label} analyze startTime`);
  for (const f of doc.frames)
    expect({ what: `${label} analyze frame ${f.frame}`, ns: BigInt(f.timeNs) }).toEqual({
      what: `${label} analyze frame ${f.frame}`,
      ns: nsOf((theirs.get(f.frame) as TsharkTimes).relative),
    });

  // Two threads: the block readers carry the times, and the output is the same.
  expect(cliOut(['decode', '--json', '--threads', '2', file])).toBe(json.out);
  expect(JSON.parse(cliOut(['analyze', '--json', '--all-frames', '--threads', '2', file]))).toEqual(doc);
  return { frames: objects.length, roceFrames: roceFrames.length };
}

/** The records of a capture, as the writers take them. */
function recordsOf(file: string): CaptureRecord[] {
  const r = readCapture(new Uint8Array(fs.readFileSync(file)));
  expect(r.error).toBeNull();
  return r.records;
}

type Variant = { name: string; digits: number; bytes: (records: readonly CaptureRecord[]) => Uint8Array };

const pcapIn =
  (nanosecond: boolean) =>
  (records: readonly CaptureRecord[]): Uint8Array => {
    const w = new PcapWriter({ nanosecond, linkType: records[0]?.linkType ?? 1 });
    for (const r of records) w.add(r.data, r.timestampNs, r.origLen);
    return w.toBytes();
  };

/** pcapng, one interface of the first record's link type counting in 10^-exp s (no if_tsresol for 6, its default). */
const pcapngIn =
  (exp: 6 | 9) =>
  (records: readonly CaptureRecord[]): Uint8Array =>
    concat([
      shb(),
      idb(records[0]?.linkType ?? 1, exp === 6 ? [] : [opt(9, Uint8Array.of(exp))]),
      ...records.map((r) => epb(0, exp === 6 ? r.timestampNs / 1000n : r.timestampNs, r.data, true, r.origLen)),
    ]);

const VARIANTS: readonly Variant[] = [
  { name: 'pcap-us.pcap', digits: 6, bytes: pcapIn(false) },
  { name: 'pcap-ns.pcap', digits: 9, bytes: pcapIn(true) },
  { name: 'pcapng-us.pcapng', digits: 6, bytes: pcapngIn(6) },
  { name: 'pcapng-ns.pcapng', digits: 9, bytes: pcapngIn(9) },
];

/**
 * The file's own decimals, where its header says them (classic pcap's magic); null for pcapng.
 * An ERF record in classic pcap has the time of its ERF header, in ns (packets/pcap.ts), as tshark
 * reads it.
 */
function ownDigits(file: string): ((frame: number) => number) | null {
  const magic = fs.readFileSync(file).readUInt32LE(0);
  if (isPcapMagic(magic) && recordsOf(file)[0]?.linkType === LinkType.Erf) return () => 9;
  if (magic === 0xa1b2c3d4 || magic === 0xd4c3b2a1) return () => 6;
  if (magic === 0xa1b23c4d || magic === 0x4d3cb2a1) return () => 9;
  return null;
}

let dir = '';
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-tshark-time-'));
});
afterAll(() => {
  if (dir !== '') fs.rmSync(dir, { recursive: true, force: true });
});

/** Checks `file` as it is and written each way; returns what was compared. */
async function checkEveryWay(file: string): Promise<Checked[]> {
  const checked = [await checkFile(file, ownDigits(file))];
  const records = recordsOf(file);
  const erf = records[0]?.linkType === LinkType.Erf;
  for (const v of VARIANTS) {
    const copy = path.join(dir, `${path.basename(file).replace(/\.pcap(ng)?$/, '')}.${v.name}`);
    fs.writeFileSync(copy, v.bytes(records));
    checked.push(await checkFile(copy, () => (erf && copy.endsWith('.pcap') ? 9 : v.digits)));
  }
  return checked;
}

const TIMEOUT = 180_000;

describe('capture times against tshark: bundled captures', () => {
  const own = capturesUnder(CAPTURES);

  test('there are captures to check, of both formats and resolutions', () => {
    expect(own.length).toBeGreaterThanOrEqual(10);
    const kinds = new Set(own.map((f) => (f.endsWith('.pcapng') ? 'pcapng' : ownDigits(f)?.(1) === 9 ? 'ns' : 'us')));
    expect([...kinds].sort()).toEqual(['ns', 'pcapng', 'us']);
  });

  for (const file of own) {
    testUnless(skipOwn)(
      `${path.relative(CAPTURES, file)}: as it is, as pcap and pcapng in µs and ns`,
      async () => {
        const checked = await checkEveryWay(file);
        expect(checked.every((c) => c.frames > 0)).toBe(true);
      },
      TIMEOUT,
    );
  }

  testUnless(skipOwn)(
    "a pcapng with a µs and a ns interface: each frame with its interface's decimals",
    async () => {
      const records = recordsOf(path.join(CAPTURES, 'rc-conversation.pcap'));
      const linkType = records[0]?.linkType ?? 1;
      const file = path.join(dir, 'two-resolutions.pcapng');
      fs.writeFileSync(
        file,
        concat([
          shb(),
          idb(linkType),
          idb(linkType, [opt(9, Uint8Array.of(9))]),
          ...records.map((r, i) => (i % 2 === 0 ? epb(0, r.timestampNs / 1000n, r.data) : epb(1, r.timestampNs, r.data))),
        ]),
      );
      // Frame n is the record n − 1: odd frames on the µs interface.
      const c = await checkFile(file, (frame) => (frame % 2 === 1 ? 6 : 9));
      expect(c.frames).toBe(records.length);
    },
    TIMEOUT,
  );

  testUnless(skipOwn)('the comparison is not vacuous: a time one nanosecond off, or a digit short, is told apart', () => {
    expect(() => expectSameDecimal('1705320000.000001184', '1705320000.000001185', 'x')).toThrow();
    expect(() => expectSameDecimal('1705320000.000001', '1705320000.000001184', 'x')).toThrow();
    expect(() => expectSameDecimal('1705320000.0000012', '1705320000.000001184', 'x')).toThrow();
    expectSameDecimal('1705320000.000001', '1705320000.000001000', 'x');
    expect(nsOf('-0.000001000')).toBe(-1000n);
  });
});

describe('capture times against tshark: shared public captures', () => {
  const shared = publicCapturesDir();
  const files = shared === null ? [] : capturesUnder(shared);
  if (files.length === 0) testUnless(skipPublic ?? 'no public captures found')('public captures', () => undefined);
  for (const file of files) {
    testUnless(skipPublic)(
      `${path.relative(shared as string, file)}: as it is, as pcap and pcapng in µs and ns`,
      async () => {
        await checkEveryWay(file);
      },
      TIMEOUT,
    );
  }
});
