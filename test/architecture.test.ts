/**
 * The layers point one way. Every import under the source folders (static
 * `import`, `import type`, `export ... from`, `require`, `import()`) is read and
 * checked against the allowed arrows below; a test fails naming the file, the
 * line and the arrow. There is no list of exceptions.
 *
 *   base        imports nothing
 *   packets     base
 *   analysis    packets, base
 *   nic-driver  packets, base (and its own native loader)
 *   stack       packets, base, and of nic-driver only its interface file (driver.ts)
 *   ulp         packets, base (upper-layer protocols over RDMA: NVMe-oF's wire structures, which
 *               conversations are its own, its words and fields)
 *   capture-engine  packets, base, analysis, nic-driver, ulp (reading captures in batches, the
 *               decode and analyze worker threads, their messages, the spool file)
 *   apps        base, packets, analysis, nic-driver, stack; and among the apps only the
 *               arrows APP_ARROWS lists (apps/host and apps/oob are the libraries the tools share)
 *   bench       anything but cli (benchmarks are composition roots too)
 *   fuzz        anything but cli (fuzz targets and their runner)
 *   cli         anything (and the root package.json, for its version)
 *   index.ts    the package's root entry: only the rooms' index modules (`packets/index.ts`,
 *               `apps/sim/index.ts`...), never `cli`, `bench` or `fuzz`
 *
 * Only the native loader (nic-driver/native-binding.ts) loads the addon, and it
 * is the only file allowed a computed `require`. The wire layer, the leaf and
 * the engine do no I/O of their own: no node:fs, net, dgram or child_process.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { codeMask, scanImports } from './support/import-scan';

const ROOT = path.resolve(__dirname, '..');
const LAYERS = ['base', 'packets', 'analysis', 'nic-driver', 'stack', 'ulp', 'capture-engine', 'apps', 'bench', 'fuzz', 'cli'] as const;
type Layer = (typeof LAYERS)[number];
const NATIVE_LOADER = 'nic-driver/native-binding.ts';
const STACK_DRIVER_INTERFACE = 'nic-driver/driver.ts';
/** The package's root entry (package.json `exports["."]`): one namespace per room's index module. */
const PACKAGE_ENTRY = 'index.ts';
/** Node modules that do I/O, kept out of the layers that must not. */
const IO_MODULES = new Set(['fs', 'fs/promises', 'net', 'dgram', 'child_process', 'http', 'https', 'worker_threads', 'cluster']);
const NO_IO: ReadonlySet<Layer> = new Set<Layer>(['base', 'packets', 'stack', 'ulp']);

/** Which layers each layer may import (its own always). */
const ALLOWED: Record<Layer, readonly Layer[]> = {
  base: [],
  packets: ['base'],
  analysis: ['packets', 'base'],
  'nic-driver': ['packets', 'base'],
  stack: ['packets', 'base'], // + nic-driver/driver.ts, checked below
  ulp: ['packets', 'base'],
  'capture-engine': ['base', 'packets', 'analysis', 'nic-driver', 'ulp'],
  apps: ['base', 'packets', 'analysis', 'nic-driver', 'stack', 'ulp', 'apps'], // apps → apps: APP_ARROWS; ulp: nvmf's capsules
  bench: ['base', 'packets', 'analysis', 'nic-driver', 'stack', 'ulp', 'capture-engine', 'apps'],
  fuzz: ['base', 'packets', 'analysis', 'nic-driver', 'stack', 'ulp', 'capture-engine', 'apps'],
  cli: ['base', 'packets', 'analysis', 'nic-driver', 'stack', 'ulp', 'capture-engine', 'apps'],
};

/**
 * Which app may import which (apps/NAME/ → apps/OTHER/; its own folder always). host (the host
 * device, its environment, the memory testbed) and oob (the out-of-band exchanges) are libraries
 * the tools share; sim is the simulated pair the memory testbed and the sweep are built on; replay
 * judges captures for the sweep. An app folder not listed here, or an arrow not listed, fails.
 */
const APP_ARROWS: Readonly<Record<string, readonly string[]>> = {
  sim: [],
  oob: [],
  replay: [],
  host: ['sim'],
  perftest: ['host', 'oob'],
  pingpong: ['host', 'oob', 'perftest'],
  rping: ['host', 'perftest'],
  audit: ['host', 'oob', 'perftest'],
  cmatose: ['host'],
  'rdma-example': ['host'],
  udaddy: ['host'],
  attack: [],
  sweep: ['replay', 'sim'],
  'verbs-check': ['host', 'oob', 'perftest'],
  probe: ['host', 'oob', 'perftest', 'rping'],
  nvmf: ['host', 'perftest'],
  doctor: [],
};

/** The app a file under apps/ belongs to (its folder), or null for any other file. */
function appOf(rel: string): string | null {
  const parts = rel.split('/');
  return parts[0] === 'apps' && parts.length > 2 ? parts[1]! : null;
}

export interface Violation {
  file: string;
  line: number;
  message: string;
}

function layerOf(rel: string): Layer | null {
  const top = rel.split('/')[0] as Layer;
  return (LAYERS as readonly string[]).includes(top) ? top : null;
}

/** Resolves a relative specifier of `file` to a repository path (with .ts added when it names a source). */
function resolveRelative(file: string, spec: string, exists: (rel: string) => boolean): string {
  const joined = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
  for (const cand of [joined, `${joined}.ts`, `${joined}/index.ts`]) if (exists(cand)) return cand;
  return joined;
}

/** Checks the imports of the given files (repository-relative path → source text). */
export function checkArchitecture(files: ReadonlyMap<string, string>, exists: (rel: string) => boolean = (r) => files.has(r)): Violation[] {
  const out: Violation[] = [];
  for (const [file, src] of files) {
    if (file === PACKAGE_ENTRY) {
      for (const ref of scanImports(src)) {
        const target = ref.specifier !== null && ref.specifier.startsWith('.') ? resolveRelative(file, ref.specifier, exists) : null;
        const to = target === null ? null : layerOf(target);
        if (target === null || to === null || to === 'cli' || to === 'bench' || to === 'fuzz' || !target.endsWith('/index.ts')) {
          out.push({
            file,
            line: ref.line,
            message: `the package entry imports ${ref.specifier ?? 'a computed path'}; it may import only the rooms' index modules`,
          });
        }
      }
      continue;
    }
    const from = layerOf(file);
    if (from === null) continue;
    const fromApp = appOf(file);
    if (from === 'apps' && (fromApp === null || APP_ARROWS[fromApp] === undefined)) {
      out.push({
        file,
        line: 1,
        message: `${fromApp === null ? file : `apps/${fromApp}/`} is not a listed app: give it a folder and name its arrows in APP_ARROWS`,
      });
    }
    for (const ref of scanImports(src)) {
      const at = { file, line: ref.line };
      if (ref.specifier === null) {
        if (file !== NATIVE_LOADER)
          out.push({
            ...at,
            message: `${ref.kind === 'require' ? 'require' : 'import()'} with a computed path (only ${NATIVE_LOADER} may load a module it names at run time)`,
          });
        continue;
      }
      const spec = ref.specifier;
      if (/\.node$/.test(spec) || /(^|\/)native\/build\//.test(spec) || spec === 'bindings' || spec === 'node-gyp-build') {
        if (file !== NATIVE_LOADER) out.push({ ...at, message: `loads the native addon (${spec}); only ${NATIVE_LOADER} may` });
        continue;
      }
      if (!spec.startsWith('.')) {
        const bare = spec.replace(/^node:/, '');
        if (NO_IO.has(from) && IO_MODULES.has(bare)) out.push({ ...at, message: `${from}/ does no I/O of its own, but imports ${spec}` });
        continue;
      }
      const target = resolveRelative(file, spec, exists);
      const to = layerOf(target);
      if (target === '../package.json' && from === 'cli') continue; // the command reads its version (main.ts runs from dist/cli/)
      if (to === null) {
        out.push({ ...at, message: `imports ${spec}, outside the source folders (${target})` });
        continue;
      }
      if (to === from) {
        const toApp = appOf(target);
        if (from === 'apps' && fromApp !== null && toApp !== fromApp && !(toApp !== null && APP_ARROWS[fromApp]?.includes(toApp))) {
          out.push({ ...at, message: `apps/${fromApp} → apps/${toApp ?? target} (${spec}) is not an allowed arrow among the apps` });
        }
        continue;
      }
      if (from === 'stack' && to === 'nic-driver') {
        if (target !== STACK_DRIVER_INTERFACE)
          out.push({ ...at, message: `stack → ${target}: the engine may use only the driver interface (${STACK_DRIVER_INTERFACE})` });
        continue;
      }
      if (!ALLOWED[from].includes(to)) out.push({ ...at, message: `${from} → ${to} (${spec}) is not an allowed arrow` });
    }
  }
  return out;
}

function sourceFiles(): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (/\.(ts|js)$/.test(e.name) && !e.name.endsWith('.d.ts')) files.set(rel, fs.readFileSync(path.join(ROOT, rel), 'utf8'));
    }
  };
  for (const l of LAYERS) if (fs.existsSync(path.join(ROOT, l))) walk(l);
  if (fs.existsSync(path.join(ROOT, PACKAGE_ENTRY))) files.set(PACKAGE_ENTRY, fs.readFileSync(path.join(ROOT, PACKAGE_ENTRY), 'utf8'));
  return files;
}

/**
 * Opcode numbers live in the opcode table (packets/opcodes.ts): elsewhere an opcode is compared with,
 * masked by or assigned a named constant, never a number (0 and the byte bound 0xff excepted).
 */
export function opcodeLiterals(files: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  const num = String.raw`(0x[0-9a-fA-F]+|\d+)`;
  const re = new RegExp(
    String.raw`\b\w*[oO]pcode\w*\s*(?:===|!==|==|!=|<=|>=|<|>|&|\||=|:)\s*${num}\b|\b${num}\s*(?:===|!==|==|!=|<=|>=|<|>)\s*\w*[oO]pcode\b`,
    'g',
  );
  for (const [file, src] of files) {
    if (file === 'packets/opcodes.ts' || layerOf(file) === null || layerOf(file) === 'bench') continue;
    const mask = codeMask(src);
    for (let m = re.exec(src); m !== null; m = re.exec(src)) {
      if (mask[m.index] !== 1) continue;
      const n = Number(m[1] ?? m[2]);
      if (n === 0 || n === 0xff) continue;
      out.push(`${file}:${src.slice(0, m.index).split('\n').length}: ${m[0]}`);
    }
  }
  return out;
}

describe('architecture: the layers point one way', () => {
  test('every import under the source folders follows an allowed arrow', () => {
    const files = sourceFiles();
    expect(files.size).toBeGreaterThan(100);
    const v = checkArchitecture(files, (rel) => fs.existsSync(path.join(ROOT, rel)));
    expect(v.map((x) => `${x.file}:${x.line}: ${x.message}`)).toEqual([]);
  });

  test('the scan sees the imports of a real file of each layer', () => {
    const files = sourceFiles();
    for (const l of LAYERS) {
      if (l === 'base') continue; // the leaf may import nothing at all
      const withImports = [...files].filter(([f, s]) => f.startsWith(`${l}/`) && scanImports(s).length > 0);
      expect(withImports.length).toBeGreaterThan(0);
    }
  });

  test('every app listed in APP_ARROWS is a folder of apps/, and its arrows name listed apps', () => {
    const folders = fs
      .readdirSync(path.join(ROOT, 'apps'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
    expect(Object.keys(APP_ARROWS).sort()).toEqual(folders);
    const unknown = Object.entries(APP_ARROWS).flatMap(([app, to]) => to.filter((t) => t === app || APP_ARROWS[t] === undefined).map((t) => `${app} → ${t}`));
    expect(unknown).toEqual([]);
  });

  test('no numeric opcode literal outside the opcode table', () => {
    expect(opcodeLiterals(sourceFiles())).toEqual([]);
  });
  test('a planted opcode literal is caught', () => {
    const planted = new Map([
      ['stack/responder.ts', 'if (bth.opcode === 0x11) x();\nconst ok = bth.opcode === Opcode.RC_ACKNOWLEDGE;\n// bth.opcode === 0x11 in a comment\n'],
      ['analysis/flow.ts', 'const op = { opcode: 0x81 };\nif ((p.opcode & 0x1f) === 0x13) y();\nif (17 === opcode) z();\n'],
      ['packets/opcodes.ts', 'const opcode = 0x81;\n'],
    ]);
    expect(opcodeLiterals(planted)).toEqual([
      'stack/responder.ts:1: opcode === 0x11',
      'analysis/flow.ts:1: opcode: 0x81',
      'analysis/flow.ts:2: opcode & 0x1f',
      'analysis/flow.ts:3: 17 === opcode',
    ]);
  });

  describe('a planted bad import is caught, naming file and line', () => {
    const tree = (extra: Record<string, string>): Map<string, string> =>
      new Map(
        Object.entries({
          'base/psn.ts': 'export const X = 1;\n',
          'packets/bth.ts': "import { X } from '../base/psn';\n",
          'nic-driver/driver.ts': 'export interface NicDriver {}\n',
          'nic-driver/memory-link.ts': "import type { NicDriver } from './driver';\n",
          'stack/device.ts': "import type { NicDriver } from '../nic-driver/driver';\n",
          'apps/sim/sim-pair.ts': "import { X } from '../../base/psn';\n",
          'apps/host/memory-testbed.ts': "import { createSimPair } from '../sim/sim-pair';\n",
          'apps/perftest/run.ts': "import { openHostDevice } from '../host/host-device';\nimport { openOobChannel } from '../oob/oob-endpoint';\n",
          'capture-engine/decode-worker.ts': "import { X } from '../base/psn';\nimport { parentPort } from 'node:worker_threads';\n",
          'cli/main.ts': "import { X } from '../apps/sim/sim-pair';\nimport { Y } from '../capture-engine/decode-worker';\n",
          ...extra,
        }),
      );
    const caught = (extra: Record<string, string>): string[] => checkArchitecture(tree(extra)).map((v) => `${v.file}:${v.line}: ${v.message}`);

    test('the clean tree passes', () => {
      expect(caught({})).toEqual([]);
    });
    test.each([
      ['static import', 'packets/decode.ts', "\n\nimport { Device } from '../stack/device';\n", 3, 'packets → stack'],
      ['import type', 'base/clock.ts', "import type { NicDriver } from '../nic-driver/driver';\n", 1, 'base → nic-driver'],
      ['multi-line import', 'analysis/flow.ts', "import {\n  a,\n  b,\n} from '../stack/device';\n", 1, 'analysis → stack'],
      ['export from', 'packets/index.ts', "export { Device } from '../stack/device';\n", 1, 'packets → stack'],
      ['require', 'nic-driver/faults.ts', "const x = 1;\nconst d = require('../stack/device');\n", 2, 'nic-driver → stack'],
      ['dynamic import', 'stack/qp.ts', "async function f() {\n  return import('../apps/sim/sim-pair');\n}\n", 2, 'stack → apps'],
      ['stack to a concrete driver', 'stack/port.ts', "import { MemoryLink } from '../nic-driver/memory-link';\n", 1, 'stack → nic-driver/memory-link.ts'],
      ['apps to cli', 'apps/host/x.ts', "import { main } from '../../cli/main';\n", 1, 'apps → cli'],
      ['a shared library to a tool', 'apps/host/z.ts', "import { runPerftest } from '../perftest/run';\n", 1, 'apps/host → apps/perftest'],
      ['an arrow among the apps not listed', 'apps/udaddy/w.ts', "\nimport { openOobChannel } from '../oob/oob-endpoint';\n", 2, 'apps/udaddy → apps/oob'],
      ['an app not listed', 'apps/newtool/main.ts', "import { X } from '../../base/psn';\n", 1, 'apps/newtool/ is not a listed app'],
      [
        'apps to the capture engine',
        'apps/replay/r.ts',
        "import { PcapBlockReader } from '../../capture-engine/pcap-block-reader';\n",
        1,
        'apps → capture-engine',
      ],
      ['the capture engine to cli', 'capture-engine/c.ts', "import { UsageError } from '../cli/args';\n", 1, 'capture-engine → cli'],
      ['the wire layer to an upper-layer protocol', 'packets/summary.ts', "import { nvmeWords } from '../ulp/nvme-rdma/nvme-text';\n", 1, 'packets → ulp'],
      ['an upper-layer protocol to the engine', 'ulp/nvme-rdma/x.ts', "import { Device } from '../../stack/device';\n", 1, 'ulp → stack'],
      ['the addon outside the loader', 'stack/icrc.ts', "const b = require('../native/build/Release/roce_native.node');\n", 1, 'loads the native addon'],
      ['a computed require', 'apps/host/y.ts', "const m = '../../nic-driver/af-xdp-driver';\nconst d = require(m);\n", 2, 'computed path'],
      ['I/O in the wire layer', 'packets/pcap.ts', "import * as fs from 'node:fs';\n", 1, 'does no I/O'],
      ['side-effect import', 'base/rng.ts', "import '../packets/bth';\n", 1, 'base → packets'],
      ['the package entry past an index module', 'index.ts', "export { Device } from './stack/device';\n", 1, "only the rooms' index modules"],
      ['the package entry to cli', 'index.ts', "export * as cli from './cli/index';\n", 1, "only the rooms' index modules"],
    ])('%s', (_name, file, src, line, what) => {
      const v = caught({ [file]: src });
      expect(v).toHaveLength(1);
      expect(v[0]).toContain(`${file}:${line}: `);
      expect(v[0]).toContain(what);
    });
    test('imports written in comments, strings and templates are not imports', () => {
      const src = [
        "// import { Device } from '../stack/device';",
        "/* const d = require('../stack/device'); */",
        'const s = "import { Device } from \'../stack/device\'";',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, for the import scanner to skip
        "const t = `require('../stack/device') ${'x'} import('../apps/sim/sim-pair')`;",
        "const r = /require\\('x'\\)/;",
        'export const ok = 1;',
      ].join('\n');
      expect(caught({ 'packets/quiet.ts': src })).toEqual([]);
    });
  });
});
