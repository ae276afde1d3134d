/**
 * `roce decode -T fields` against tshark 4.0's NVMe-oF dissectors (packet-nvme-rdma.c and
 * packet-nvme.c, enabled) on captures/nvme-rdma.pcap: every NVMe-oF field roce decode knows
 * (ulp/nvme-rdma/nvme-fields.ts), on every frame, digit for digit. Frames tshark 4.0 sees
 * otherwise are left out of the fields concerned, and each rule is held to a count:
 *   - a CM REQ: tshark 4.0 sets the conversation up at the REP, so it reads no REQ's private data
 *     (its nvme-rdma fields are roce decode's alone);
 *   - a capsule that came in several SEND packets (tshark 4.0 does not reassemble them: it shows
 *     `nvme-rdma.unknown_data`), and the completion of such a command, which tshark then cannot
 *     match: their nvme.* fields.
 *
 * @group tshark
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { testUnless } from '../support/skip';
import { nvmeFieldNames } from '../../ulp/nvme-rdma/nvme-fields';

const ROOT = path.resolve(__dirname, '..', '..');
const FILE = path.join(ROOT, 'captures', 'nvme-rdma.pcap');
const CLI = path.join(ROOT, 'bin', 'roce.js');

function onPath(name: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir !== '' && fs.existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}
const TSHARK = onPath('tshark');
const skip =
  TSHARK === null
    ? 'tshark is not installed (scripts/setup-system.sh installs it)'
    : fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js'))
      ? null
      : 'the CLI is not built (npm run build)';
const it = testUnless(skip);

const FIELDS = nvmeFieldNames();
const args = ['-T', 'fields', '-E', 'occurrence=a', '-e', 'frame.number', ...FIELDS.flatMap((f) => ['-e', f])];
const rows = (text: string): string[][] =>
  text
    .trimEnd()
    .split('\n')
    .map((l) => l.split('\t'));

it('every NVMe-oF field of every frame equals tshark 4.0', () => {
  const theirs = rows(execFileSync(TSHARK ?? 'tshark', ['-n', '-r', FILE, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  const ours = rows(execFileSync(process.execPath, [CLI, 'decode', '-r', FILE, ...args], { encoding: 'utf8' }));
  const json = execFileSync(process.execPath, [CLI, 'decode', '--json', FILE], { encoding: 'utf8' })
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as { frame: number; nvme?: { kind: string; packets: number; of: { fctype: number | null } | null } });
  expect(ours).toHaveLength(theirs.length);
  const excluded = { cmReq: 0, reassembled: 0 };
  const diffs: string[] = [];
  let compared = 0;
  for (let i = 0; i < theirs.length; i++) {
    const n = json[i]?.nvme;
    const cmReq = n?.kind === 'cm-req';
    // Reassembled capsules and the completions of their commands (here the Connects).
    const reassembled = n !== undefined && (n.packets > 1 || n.of?.fctype === 1);
    if (cmReq) excluded.cmReq++;
    if (reassembled) excluded.reassembled++;
    FIELDS.forEach((name, k) => {
      if (cmReq && name.startsWith('nvme-rdma')) return;
      if (reassembled && name.startsWith('nvme.')) return;
      const a = theirs[i]?.[k + 1] ?? '';
      const b = ours[i]?.[k + 1] ?? '';
      if (a !== '' || b !== '') compared++;
      if (a !== b) diffs.push(`frame ${i + 1} ${name}: tshark ${JSON.stringify(a)}, roce ${JSON.stringify(b)}`);
    });
  }
  expect(diffs).toEqual([]);
  // Three REQs; two Connects in two packets each, and their completions.
  expect(excluded).toEqual({ cmReq: 3, reassembled: 4 });
  expect(compared).toBeGreaterThan(150);
});
