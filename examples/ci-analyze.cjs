// A CI step: make a capture (here `roce demo` over a link losing 2 % of frames each way), then let
// `roce analyze` judge it: exit status 0 with --fail-on any,icrcBad, no go-back-N rule violation,
// and loss recovery that was seen to happen.
//   node ci-analyze.cjs
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const roce = path.join(path.dirname(require.resolve('roce-ts/package.json')), 'bin', 'roce.js');
const run = (...args) => spawnSync(process.execPath, [roce, ...args], { encoding: 'utf8', timeout: 60_000 });

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-ci-'));
try {
  const capture = path.join(dir, 'demo.pcap');
  const demo = run('demo', '--bytes', '256K', '--loss', '2%', '--seed', '5', '--pcap', capture);
  assert.equal(demo.status, 0, demo.stderr);

  const analyze = run('analyze', '--json', '--fail-on', 'any,icrcBad', capture);
  assert.equal(analyze.status, 0, analyze.stdout + analyze.stderr);
  const result = JSON.parse(analyze.stdout);
  assert.equal(result.violations.length, 0);
  assert.equal(result.frameCounts.icrcBad, 0);
  assert.ok(result.episodes.length > 0, 'a lossy link shows loss-recovery episodes');
  console.log(`${result.frameCounts.roce} RoCE frames, ${result.episodes.length} loss-recovery episodes, no rule violation`);
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
