// Conformance from a capture, as a test: `roce replay` plays each side of every RC conversation
// in the capture and compares the stack's answers with the real peer's. Node's own test runner
// (node --test); the same body works in a jest or vitest test.
//   node --test replay-check.test.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, it } from 'node:test';

const require = createRequire(import.meta.url);
const roce = path.join(path.dirname(require.resolve('roce-ts/package.json')), 'bin', 'roce.js');
const capture = require.resolve('roce-ts/captures/rc-conversation.pcap');

describe('replay of rc-conversation.pcap', () => {
  for (const role of ['responder', 'requester']) {
    it(`finds no violation as the ${role}`, () => {
      const r = spawnSync(process.execPath, [roce, 'replay', capture, '--role', role, '--json'], { encoding: 'utf8', timeout: 60_000 });
      assert.equal(r.status, 0, r.stderr);
      const report = JSON.parse(r.stdout);
      assert.equal(report.ok, true);
      assert.equal(report.violations, 0);
      assert.ok(report.matched > 0, 'answers were compared');
    });
  }
});
