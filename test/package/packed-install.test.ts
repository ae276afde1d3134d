/**
 * The package as a user gets it: `npm pack`, then `npm install --offline` of the tarball into an
 * empty folder outside the repository, then `roce --version`, `roce demo`, every program of
 * examples/ and both module systems, all from that folder. The install builds the native shim
 * there when this machine has its tools (the repository's own shim is built), as npm's install step
 * does for a user who allows roce-ts's install script (`allowScripts`).
 *
 * No network: npm's cache holds node-addon-api's tarball but not its registry metadata, which an
 * offline install needs to resolve roce-ts's optional dependency range, so the installed copy of
 * node-addon-api is packed and installed beside roce-ts. Packs with --ignore-scripts: the tarball
 * holds dist/ as `npm run build` left it (run it first), and the test does not rebuild dist/ under
 * the other tests' feet.
 *
 * @group long
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
const SUBPATHS = ['roce-ts', 'roce-ts/packets', 'roce-ts/analysis', 'roce-ts/stack', 'roce-ts/nic-driver', 'roce-ts/sim'];
/** Inherited npm settings (npm test sets npm_config_*) would steer the inner npm; it gets the user's own. */
const ENV = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));

function run(cmd: string, args: string[], cwd: string, timeoutMs = 120_000): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: timeoutMs, env: ENV });
  if (r.error !== undefined) throw r.error;
  return r;
}
function ok(r: SpawnSyncReturns<string>, what: string): string {
  if (r.status !== 0) throw new Error(`${what} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

describe('the packed package, installed offline into an empty project', () => {
  let tmp: string;
  let app: string;
  let files: string[];

  beforeAll(() => {
    if (!fs.existsSync(path.join(ROOT, 'dist', 'index.mjs'))) throw new Error('dist/ is not built: run npm run build');
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-packed-'));
    const packs = path.join(tmp, 'packs');
    app = path.join(tmp, 'app');
    fs.mkdirSync(packs);
    fs.mkdirSync(app);
    const packed = JSON.parse(ok(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packs], ROOT), 'npm pack')) as {
      filename: string;
      files: { path: string }[];
    }[];
    const tarball = path.join(packs, packed[0]!.filename);
    files = packed[0]!.files.map((f) => f.path);
    const addonApi = path.dirname(require.resolve('node-addon-api/package.json', { paths: [ROOT] }));
    const addonPacked = JSON.parse(ok(run('npm', ['pack', addonApi, '--json', '--pack-destination', packs], tmp), 'npm pack node-addon-api')) as {
      filename: string;
    }[];
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, allowScripts: { [PKG.name]: true } }));
    ok(
      run('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball, path.join(packs, addonPacked[0]!.filename)], app, 600_000),
      'npm install --offline',
    );
    fs.cpSync(path.join(ROOT, 'examples'), app, { recursive: true });
  }, 900_000);
  afterAll(() => {
    if (tmp !== undefined) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('the tarball holds what a user needs and nothing of the development', () => {
    for (const f of [
      'LICENSE',
      'README.md',
      'CHANGELOG.md',
      'bin/roce.js',
      'dist/index.js',
      'dist/index.mjs',
      'dist/index.d.ts',
      'dist/index.d.mts',
      'dist/cli/main.js',
      'dist/apps/sim/index.mjs',
      'captures/rc-conversation.pcap',
      'native/binding.gyp',
      'native/src/addon.cc',
      'native/bpf/roce_filter.bpf.c',
      'scripts/build-native.sh',
      'scripts/install-native.js',
      'docs/api/README.md',
    ]) {
      expect(files).toContain(f);
    }
    expect(
      files.filter(
        (f) => f.startsWith('dist/bench/') || f.startsWith('dist/fuzz/') || f.endsWith('.map') || f.startsWith('native/build/') || f.startsWith('test/'),
      ),
    ).toEqual([]);
    expect(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.d.mts'))).toEqual([]);
  });

  test('the native shim was built at install when this machine builds it', () => {
    const built = (root: string): boolean => fs.existsSync(path.join(root, 'native', 'build', 'Release', 'roce_native.node'));
    // The repository's own install built it only where the tools are: the installed copy must match.
    expect(built(path.join(app, 'node_modules', PKG.name))).toBe(built(ROOT));
  });

  test('roce --version and roce demo run from the project', () => {
    const roce = path.join(app, 'node_modules', '.bin', 'roce');
    expect(ok(run(roce, ['--version'], app), 'roce --version').trim()).toContain(PKG.version);
    const pcap = path.join(tmp, 'demo.pcap');
    const demo = ok(run(roce, ['demo', '--bytes', '64K', '--qps', '2', '--loss', '1%', '--pcap', pcap, '--json'], app), 'roce demo');
    const summary = JSON.parse(demo) as { ok: boolean };
    expect(summary.ok).toBe(true);
    expect(fs.statSync(pcap).size).toBeGreaterThan(24);
  });

  test('every entry point loads with require() and with import, as the same objects', () => {
    const script = [
      "const { createRequire } = require('node:module');",
      `const subpaths = ${JSON.stringify(SUBPATHS)};`,
      '(async () => {',
      '  const out = {};',
      '  for (const s of subpaths) {',
      '    const cjs = require(s);',
      '    const esm = await import(s);',
      '    const names = Object.keys(cjs).filter((n) => n !== "__esModule").sort();',
      '    const same = names.every((n) => esm[n] === cjs[n]);',
      '    out[s] = { names: names.length, esmNames: Object.keys(esm).filter((n) => n !== "default").length, same, from: require.resolve(s) };',
      '  }',
      '  console.log(JSON.stringify(out));',
      '})();',
    ].join('\n');
    fs.writeFileSync(path.join(app, 'load-both.cjs'), script);
    const res = JSON.parse(ok(run(process.execPath, ['load-both.cjs'], app), 'load-both')) as Record<
      string,
      { names: number; esmNames: number; same: boolean; from: string }
    >;
    for (const s of SUBPATHS) {
      expect(res[s]!.names).toBeGreaterThanOrEqual(4);
      expect(res[s]!.esmNames).toBe(res[s]!.names);
      expect(res[s]!.same).toBe(true);
      expect(res[s]!.from.startsWith(path.join(app, 'node_modules', PKG.name))).toBe(true);
    }
  });

  test('the declarations resolve for CommonJS and ES-module TypeScript projects', () => {
    const use =
      '  const sim = createSimPair({ seed: 1 });\n  const n: number = sim.clock.now();\n  const t: packets.RocePacket | null = null;\n  export const x = [n, t, verifyIcrcV2];\n';
    fs.writeFileSync(
      path.join(app, 'use.mts'),
      `import { createSimPair } from 'roce-ts/sim';\nimport { verifyIcrcV2 } from 'roce-ts/packets';\nimport { packets } from 'roce-ts';\n${use}`,
    );
    fs.writeFileSync(
      path.join(app, 'use.cts'),
      `import { createSimPair } from 'roce-ts/sim';\nimport { verifyIcrcV2 } from 'roce-ts/packets';\nimport { packets } from 'roce-ts';\n${use}`,
    );
    fs.writeFileSync(path.join(app, 'bad.mts'), "import { createSimPair } from 'roce-ts/sim';\nexport const y: string = createSimPair();\n");
    const tsc = path.join(ROOT, 'node_modules', '.bin', 'tsc');
    const args = [
      '--noEmit',
      '--strict',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
      '--types',
      'node',
      '--typeRoots',
      path.join(ROOT, 'node_modules', '@types'),
    ];
    const good = run(tsc, [...args, 'use.mts', 'use.cts'], app);
    expect(`${good.stdout}${good.stderr}`).toBe('');
    expect(good.status).toBe(0);
    // The types are real: a wrong use is refused.
    const bad = run(tsc, [...args, 'bad.mts'], app);
    expect(bad.status).not.toBe(0);
    expect(bad.stdout).toContain("Type 'SimPair' is not assignable to type 'string'");
  });

  test.each([
    ['decode-filter.mjs', /48 frames, 7 RDMA WRITE packets, 0 bad ICRCs/],
    ['build-frame.cjs', /ICRC 0x[0-9a-f]+ checks, and fails with one bit flipped/],
    ['lossy-link.mjs', /2 packets dropped by rule, 1 sequence NAK\(s\)/],
    ['ci-analyze.cjs', /loss-recovery episodes, no rule violation/],
  ])('examples/%s', (file, expected) => {
    expect(ok(run(process.execPath, [file], app), file)).toMatch(expected);
  });

  test('examples/replay-check.test.mjs under node --test', () => {
    const out = ok(run(process.execPath, ['--test', '--test-reporter=tap', 'replay-check.test.mjs'], app), 'node --test');
    expect(out).toMatch(/# pass 2\n/);
    expect(out).toMatch(/# fail 0\n/);
  });
});
