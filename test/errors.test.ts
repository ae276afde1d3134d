/**
 * One error base and one code namespace. Every typed error class of the library
 * is a RoceError; every code is ROCE_ERR_<NAME>, belongs to one class only and is
 * listed with its class in docs/errors.md. The library throws no bare Error,
 * RangeError or TypeError, and only the native boundary (fromNativeError in
 * nic-driver/native-binding.ts) tells errors apart by the shape of the object.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { codeMask } from './support/import-scan';
import { RoceError } from '../base/roce-error';
import { ProgrammingError, ProgrammingErrorCode } from '../base/programming-error';
import { WireError, WireErrorCode } from '../packets/errors';
import { DisplayFilterError } from '../packets/display-filter';
import { TimelineError } from '../analysis/timeline';
import { LinkConfigError, LinkConfigErrorCode } from '../nic-driver/link-config-error';
import { NativeErrorCode, NicDriverError } from '../nic-driver/native-binding';
import { LiveCaptureError, LiveCaptureErrorCode } from '../nic-driver/live-capture';
import { XdpQueueError, XdpQueueErrorCode } from '../apps/host/xdp-queues';
import { XdpSteerError, XdpSteerErrorCode } from '../apps/host/roce-steering';
import { VerbsError, VerbsErrorCode } from '../stack/errors';
import { OobError, OobErrorCode } from '../apps/oob/tcp-channel';
import { PerftestError, PerftestErrorCode } from '../apps/perftest/perftest-error';
import { HostDeviceError, HostDeviceErrorCode } from '../apps/host/host-device';
import { RpingError, RpingErrorCode } from '../apps/rping/rping-error';
import { NvmfError, NvmfErrorCode } from '../apps/nvmf/nvmf-error';
import { AttackError, AttackErrorCode } from '../apps/attack/attack-error';
import { CmatoseError, CmatoseErrorCode } from '../apps/cmatose/cmatose-error';
import { RdmaExampleError, RdmaExampleErrorCode } from '../apps/rdma-example/rdma-example-error';
import { UdaddyError, UdaddyErrorCode } from '../apps/udaddy/udaddy-error';
import { SweepError, SweepErrorCode } from '../apps/sweep/sweep-error';
import { ProbeError, ProbeErrorCode } from '../apps/probe/probe-error';
import { UsageError } from '../cli/args';
import { SpoolFileError } from '../capture-engine/spool-file';

const ROOT = path.resolve(__dirname, '..');
/** The library's source folders (bench/ holds tools, not library code). */
const LIBRARY = ['base', 'packets', 'analysis', 'nic-driver', 'stack', 'capture-engine', 'apps', 'cli'];
const BASE_FILE = 'base/roce-error.ts';
const NATIVE_BOUNDARY = 'nic-driver/native-binding.ts';

interface ErrorClass {
  name: string;
  file: string;
  codes: readonly string[];
  /** An instance with `code`. */
  make: (code: string) => RoceError;
}

const CLASSES: ErrorClass[] = [
  {
    name: 'ProgrammingError',
    file: 'base/programming-error.ts',
    codes: Object.values(ProgrammingErrorCode),
    make: (c) => new ProgrammingError(c as ProgrammingErrorCode, 'x'),
  },
  { name: 'WireError', file: 'packets/errors.ts', codes: Object.values(WireErrorCode), make: (c) => new WireError(c as WireErrorCode, 0, 'x') },
  { name: 'DisplayFilterError', file: 'packets/display-filter.ts', codes: ['ROCE_ERR_DISPLAY_FILTER'], make: () => new DisplayFilterError(0, 'x') },
  { name: 'TimelineError', file: 'analysis/timeline.ts', codes: ['ROCE_ERR_TIMELINE'], make: () => new TimelineError('x') },
  { name: 'LinkConfigError', file: 'nic-driver/link-config-error.ts', codes: Object.values(LinkConfigErrorCode), make: () => new LinkConfigError('x') },
  {
    name: 'LiveCaptureError',
    file: 'nic-driver/live-capture.ts',
    codes: Object.values(LiveCaptureErrorCode),
    make: (c) => new LiveCaptureError(c as LiveCaptureErrorCode, 'x'),
  },
  {
    name: 'NicDriverError',
    file: 'nic-driver/native-binding.ts',
    codes: Object.values(NativeErrorCode),
    make: (c) => new NicDriverError(c as NativeErrorCode, 'x'),
  },
  { name: 'VerbsError', file: 'stack/errors.ts', codes: Object.values(VerbsErrorCode), make: (c) => new VerbsError(c as VerbsErrorCode, 'x') },
  { name: 'OobError', file: 'apps/oob/tcp-channel.ts', codes: Object.values(OobErrorCode), make: (c) => new OobError(c as OobErrorCode, 'x') },
  {
    name: 'PerftestError',
    file: 'apps/perftest/perftest-error.ts',
    codes: Object.values(PerftestErrorCode),
    make: (c) => new PerftestError(c as PerftestErrorCode, 'x'),
  },
  {
    name: 'XdpQueueError',
    file: 'apps/host/xdp-queues.ts',
    codes: Object.values(XdpQueueErrorCode),
    make: (c) => new XdpQueueError(c as XdpQueueErrorCode, 'x'),
  },
  {
    name: 'XdpSteerError',
    file: 'apps/host/roce-steering.ts',
    codes: Object.values(XdpSteerErrorCode),
    make: (c) => new XdpSteerError(c as XdpSteerErrorCode, 'x'),
  },
  {
    name: 'HostDeviceError',
    file: 'apps/host/host-device.ts',
    codes: Object.values(HostDeviceErrorCode),
    make: (c) => new HostDeviceError(c as HostDeviceErrorCode, 'x'),
  },
  { name: 'RpingError', file: 'apps/rping/rping-error.ts', codes: Object.values(RpingErrorCode), make: (c) => new RpingError(c as RpingErrorCode, 'x') },
  { name: 'NvmfError', file: 'apps/nvmf/nvmf-error.ts', codes: Object.values(NvmfErrorCode), make: (c) => new NvmfError(c as NvmfErrorCode, 'x') },
  { name: 'AttackError', file: 'apps/attack/attack-error.ts', codes: Object.values(AttackErrorCode), make: (c) => new AttackError(c as AttackErrorCode, 'x') },
  {
    name: 'CmatoseError',
    file: 'apps/cmatose/cmatose-error.ts',
    codes: Object.values(CmatoseErrorCode),
    make: (c) => new CmatoseError(c as CmatoseErrorCode, 'x'),
  },
  {
    name: 'RdmaExampleError',
    file: 'apps/rdma-example/rdma-example-error.ts',
    codes: Object.values(RdmaExampleErrorCode),
    make: (c) => new RdmaExampleError(c as RdmaExampleErrorCode, 'x'),
  },
  {
    name: 'UdaddyError',
    file: 'apps/udaddy/udaddy-error.ts',
    codes: Object.values(UdaddyErrorCode),
    make: (c) => new UdaddyError(c as UdaddyErrorCode, 'x', 0),
  },
  { name: 'SweepError', file: 'apps/sweep/sweep-error.ts', codes: Object.values(SweepErrorCode), make: (c) => new SweepError('x', c as SweepErrorCode) },
  { name: 'ProbeError', file: 'apps/probe/probe-error.ts', codes: Object.values(ProbeErrorCode), make: (c) => new ProbeError(c as ProbeErrorCode, 'x') },
  { name: 'UsageError', file: 'cli/args.ts', codes: ['ROCE_ERR_USAGE'], make: () => new UsageError('x') },
  { name: 'SpoolFileError', file: 'capture-engine/spool-file.ts', codes: ['ROCE_ERR_SPOOL'], make: () => new SpoolFileError('x') },
];

const CODE_FORM = /^ROCE_ERR_[A-Z0-9]+(?:_[A-Z0-9]+)*$/;
/** A class declaration with a parent. */
const CLASS_DECL = /\bclass\s+\w+(?:<[^>{]*>)?\s+extends\s+[\w.]+/g;
/** A built-in error made with or without `new`. */
const BUILTIN_ERROR = /(?<![\w.])(?:new\s+)?(?:Error|RangeError|TypeError|SyntaxError)\s*\(/g;
/** `'code' in e`, or a cast to an object type with an optional `code` (`e as { code?: ... }`). */
const DUCK_TYPED = /['"]code['"]\s+in\b|(?:\bas|&)\s*\{\s*code\?\s*:/g;

function librarySources(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) files.set(rel, fs.readFileSync(path.join(ROOT, rel), 'utf8'));
    }
  };
  for (const d of LIBRARY) walk(d);
  return files;
}

const lineOf = (text: string, index: number): number => text.slice(0, index).split('\n').length;

/**
 * `file:line: text` for each match of `re` (global) in the given sources whose first and last
 * characters are code: not in a comment, a string, template text or a regular expression.
 */
function findInCode(files: ReadonlyMap<string, string>, re: RegExp, skip: (file: string) => boolean = () => false): string[] {
  const out: string[] = [];
  for (const [file, src] of files) {
    if (skip(file)) continue;
    const mask = codeMask(src);
    for (const m of src.matchAll(re)) {
      if (mask[m.index] === 1 && mask[m.index + m[0].length - 1] === 1) out.push(`${file}:${lineOf(src, m.index)}: ${m[0].trim()}`);
    }
  }
  return out;
}

describe('every error class is a RoceError with ROCE_ERR_ codes of its own', () => {
  test.each(CLASSES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    expect(c.codes.length).toBeGreaterThan(0);
    for (const code of c.codes) {
      expect(code).toMatch(CODE_FORM);
      const e = c.make(code);
      expect(e).toBeInstanceOf(RoceError);
      expect(e).toBeInstanceOf(Error);
      expect(e.name).toBe(c.name);
      expect(e.code).toBe(code);
    }
  });

  test('no code belongs to two classes', () => {
    const owner = new Map<string, string>();
    const clashes: string[] = [];
    for (const c of CLASSES) {
      for (const code of c.codes) {
        const o = owner.get(code);
        if (o !== undefined) clashes.push(`${code}: ${o} and ${c.name}`);
        owner.set(code, c.name);
      }
    }
    expect(clashes).toEqual([]);
  });

  test('instances of one class are not instances of another', () => {
    for (const a of CLASSES) {
      const e = a.make(a.codes[0] as string);
      for (const b of CLASSES) if (b !== a) expect(e instanceof (b.make(b.codes[0] as string).constructor as typeof RoceError)).toBe(false);
    }
  });
});

describe('the library source', () => {
  const files = librarySources();

  test('declares no error class but those above, each extending RoceError', () => {
    expect(files.size).toBeGreaterThan(100);
    const found: string[] = [];
    for (const hit of findInCode(files, CLASS_DECL)) {
      const m = /^([^:]+):\d+: class\s+(\w+)(?:<[^>{]*>)?\s+extends\s+([\w.]+)$/.exec(hit);
      if (m === null) throw new Error(`unexpected class declaration ${hit}`);
      const [, file, name, parent] = m as unknown as [string, string, string, string];
      if (/Error$/.test(name) || /Error$/.test(parent)) found.push(`${file}: ${name} extends ${parent}`);
    }
    const expected = [`${BASE_FILE}: RoceError extends Error`, ...CLASSES.map((c) => `${c.file}: ${c.name} extends RoceError`)];
    expect(found.sort()).toEqual(expected.sort());
  });

  test('throws no bare Error, RangeError or TypeError', () => {
    expect(findInCode(files, BUILTIN_ERROR)).toEqual([]);
  });

  test('looks at the shape of an error object only at the native boundary', () => {
    expect(findInCode(files, DUCK_TYPED, (f) => f === NATIVE_BOUNDARY)).toEqual([]);
    expect(findInCode(new Map([[NATIVE_BOUNDARY, files.get(NATIVE_BOUNDARY) as string]]), DUCK_TYPED)).toHaveLength(1);
  });

  test('the checks see what they look for', () => {
    const planted = new Map([
      ['packets/x.ts', "export class OddError extends Error {}\nthrow new RangeError('x');\n// throw new Error('in a comment')\nconst s = 'new TypeError(';\n"],
      ['cli/y.ts', "if ((e as { code?: string }).code === 'X') f();\nreject(Error(`t`));\nif (typeof e === 'object' && 'code' in e) g();\n"],
    ]);
    expect(findInCode(planted, CLASS_DECL)).toEqual(['packets/x.ts:1: class OddError extends Error']);
    expect(findInCode(planted, BUILTIN_ERROR)).toEqual(['packets/x.ts:2: new RangeError(', 'cli/y.ts:2: Error(']);
    expect(findInCode(planted, DUCK_TYPED)).toEqual(['cli/y.ts:1: as { code?:', "cli/y.ts:3: 'code' in"]);
  });
});

test('docs/errors.md lists every code under its class, and nothing else', () => {
  const doc = fs.readFileSync(path.join(ROOT, 'docs/errors.md'), 'utf8');
  const listed: string[] = [];
  let section = '';
  for (const line of doc.split('\n')) {
    const h = /^## `(\w+)` \(([\w/.-]+)\)$/.exec(line);
    if (h !== null) section = `${h[1]} (${h[2]})`;
    const row = /^\| `(ROCE_ERR_\w+)` \|/.exec(line);
    if (row !== null) listed.push(`${row[1]}: ${section}`);
  }
  const want = CLASSES.flatMap((c) => c.codes.map((code) => `${code}: ${c.name} (${c.file})`));
  expect(listed.sort()).toEqual(want.sort());
});
