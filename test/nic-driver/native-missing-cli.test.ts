/**
 * A checkout whose native addon was never built: the compiled CLI (`dist/`, `bin/`,
 * `package.json`, node_modules, and no native/ folder) copied to a temporary directory, run on a
 * veth in a namespace made for this file. Every live command that needs the addon must fail with
 * one line naming what is missing and the two commands that fix it, never with a TypeError.
 * Needs `npm run build` output (dist/), root and `ip netns`; skipped with the reason otherwise.
 *
 * @group netns
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createNetnsPair, destroyNetnsPair, netnsSkipReason, type NetnsPair } from '../support/netns';
import { testUnless } from '../support/skip';

const REPO = path.resolve(__dirname, '..', '..');
const distMissing = fs.existsSync(path.join(REPO, 'dist', 'cli', 'main.js')) ? null : 'dist/ is not built (npm run build)';
const t = testUnless(distMissing ?? netnsSkipReason());

/** The one line, after "roce perftest: " or "roce pingpong: ". */
const LINE =
  'driver not available: the native addon is not built (native/build/Release/roce_native.node is missing): ' +
  'install the system packages with `sudo scripts/setup-system.sh` (or `npm run setup:system` as root), then run `npm run build:native` (scripts/build-native.sh)';

let dir = '';
let net: NetnsPair | null = null;

beforeAll(() => {
  if (distMissing !== null || netnsSkipReason() !== null) return;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-no-native-'));
  fs.cpSync(path.join(REPO, 'dist'), path.join(dir, 'dist'), { recursive: true });
  fs.cpSync(path.join(REPO, 'bin'), path.join(dir, 'bin'), { recursive: true });
  fs.copyFileSync(path.join(REPO, 'package.json'), path.join(dir, 'package.json'));
  fs.symlinkSync(fs.realpathSync(path.join(REPO, 'node_modules')), path.join(dir, 'node_modules'));
  net = createNetnsPair();
});

afterAll(() => {
  if (net !== null) destroyNetnsPair(net);
  net = null;
  if (dir !== '') fs.rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `node bin/roce.js ARGS` in the copy, inside namespace B, with a 20 s limit. */
function roce(args: string[]): Promise<Run> {
  const env = { ...process.env };
  delete env['ROCE_NO_NATIVE'];
  return new Promise((resolve) => {
    execFile(
      'ip',
      ['netns', 'exec', net!.nsB, process.execPath, path.join(dir, 'bin', 'roce.js'), ...args],
      { cwd: dir, env, timeout: 20_000, encoding: 'utf8' },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function expectOneLine(r: Run, command: string): void {
  expect(r.stderr).not.toMatch(/TypeError|Cannot read properties/);
  expect(r.stdout).toBe('');
  expect(r.stderr).toBe(`roce ${command}: ${LINE}\n`);
}

describe('live commands without the native addon', () => {
  t('the copy has no native/ folder', () => {
    expect(fs.existsSync(path.join(dir, 'native'))).toBe(false);
  });

  for (const driver of ['xdp', 'packet']) {
    t(`roce perftest write --driver ${driver}: exit 1 and one line naming the addon and the commands that build it`, async () => {
      const r = await roce(['perftest', 'write', '--dev', net!.ifB, '--driver', driver]);
      expect(r.code).toBe(1);
      expectOneLine(r, 'perftest');
    });
  }

  t('roce perftest write --json: the JSON error holds the same text', async () => {
    const r = await roce(['perftest', 'write', '--dev', net!.ifB, '--json']);
    expect(r.code).toBe(1);
    const lines = r.stdout.split('\n');
    expect(lines).toHaveLength(2); // one line and its newline
    expect(lines[1]).toBe('');
    const j = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(j).toEqual(expect.objectContaining({ ok: false, code: 'ROCE_ERR_HOST_DRIVER_UNAVAILABLE', error: LINE }));
    expect(r.stderr).toBe(`roce perftest: ${LINE}\n`);
  });

  t('roce pingpong: exit 1 and the same one line', async () => {
    const r = await roce(['pingpong', '--dev', net!.ifB]);
    expect(r.code).toBe(1);
    expectOneLine(r, 'pingpong');
  });
});
