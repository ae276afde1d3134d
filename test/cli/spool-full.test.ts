/**
 * `roce analyze` when its temporary directory fills up while it spools its lists: a clear message
 * and exit status 1 (ROCE_ERR_SPOOL), not an internal error. A 64 KiB tmpfs, mounted in a mount
 * namespace of the test's own, is the full directory; that needs root.
 *
 * @group netns
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { testUnless } from '../support/skip';
import { repeatedCapture } from '../support/repeated-capture';

const ROOT = path.resolve(__dirname, '..', '..');
const ROCE = path.join(ROOT, 'bin', 'roce.js');
const CAPTURES = path.join(ROOT, 'captures');

function whyNot(): string | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'not root (mounting a small tmpfs in a mount namespace needs it)';
  const r = spawnSync('unshare', ['--mount', 'true'], { stdio: 'ignore', timeout: 10_000 });
  return r.status === 0 ? null : 'unshare --mount does not work here';
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-spool-full-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

testUnless(whyNot())(
  'a full temporary directory: the command says so and exits 1',
  () => {
    // About 2 MB of --json lists from a pipe: far more than the 64 KiB the directory holds.
    const file = repeatedCapture(path.join(CAPTURES, 'rc-conversation.pcap'), 5000, dir);
    const mnt = path.join(dir, 'full');
    fs.mkdirSync(mnt);
    const script = `mount -t tmpfs -o size=64k tmpfs "$1" && TMPDIR="$1" exec "$2" "$3" analyze --json --all-frames - < "$4"`;
    const r = spawnSync('unshare', ['--mount', 'sh', '-c', script, 'sh', mnt, process.execPath, ROCE, file], {
      encoding: 'utf8',
      timeout: 60_000,
      maxBuffer: 1 << 26,
    });
    expect(r.stderr).toMatch(/^roce analyze: the temporary spool file in .*full could not be written: .*(ENOSPC|no space)/im);
    expect(r.stderr).not.toMatch(/internal error/);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
  },
  60_000,
);
