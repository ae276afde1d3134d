'use strict';
/**
 * Which group each test file belongs to: jest's projects (jest.config.js) are these groups, so a
 * developer runs one with `npx jest --selectProjects NAME` (the `test:*` scripts of package.json).
 *
 * A test file names its group on a line `@group NAME` of its leading doc comment. A file without
 * one is in `unit`: it needs no root, network namespace, qemu, tshark or browser, and runs in the
 * inner loop (`npm run test:unit`). test/test-groups.test.ts checks that every test file is in
 * exactly one group and that what a file uses (its skip helpers, the tools it starts) matches it.
 *
 * Plain JavaScript because jest.config.js loads it before any TypeScript is compiled.
 */
const fs = require('node:fs');
const path = require('node:path');

/** The groups, in the order `npm test` lists them, each with what its files need. */
const GROUPS = {
  unit: 'nothing outside Node and this checkout (the inner loop)',
  long: 'nothing outside Node, but minutes of CPU by design: model validation runs, the fuzzing smoke run, decode and analyze on two threads over captures of many batches',
  netns: 'root: network namespaces, veth pairs, AF_XDP and AF_PACKET, a mount namespace',
  interop: "root, qemu and the rxe lab's unpacked Debian packages (npm run setup:lab)",
  tshark: 'tshark, the outside judge of the dissector',
  browser: 'headless Chromium, to render the pictures',
};
const GROUP_NAMES = Object.keys(GROUPS);
const DEFAULT_GROUP = 'unit';

/** The `@group` names of a file's leading doc comment (empty when it has none). */
function groupTags(text) {
  const head = /^\s*\/\*\*([\s\S]*?)\*\//.exec(text);
  if (head === null) return [];
  const tags = [];
  for (const m of head[1].matchAll(/^[ \t]*\*?[ \t]*@group[ \t]+(\S+)[ \t]*$/gm)) tags.push(m[1]);
  return tags;
}

/** Every `*.test.ts` under `dir`, as paths relative to `root` with forward slashes, sorted. */
function testFiles(root, dir = path.join(root, 'test')) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(p);
      } else if (e.isFile() && e.name.endsWith('.test.ts')) out.push(path.relative(root, p).split(path.sep).join('/'));
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * The group of each test file of the checkout at `root`: `{ byGroup: { name: [files] }, problems: [text] }`.
 * A file whose marker names no group, or names two, is a problem (and in no group).
 */
function testGroups(root) {
  const byGroup = Object.fromEntries(GROUP_NAMES.map((g) => [g, []]));
  const problems = [];
  for (const file of testFiles(root)) {
    const tags = groupTags(fs.readFileSync(path.join(root, file), 'utf8'));
    if (tags.length > 1) problems.push(`${file}: more than one @group (${tags.join(', ')})`);
    else if (tags.length === 1 && !(tags[0] in GROUPS)) problems.push(`${file}: @group ${tags[0]} is not one of ${GROUP_NAMES.join(', ')}`);
    else byGroup[tags[0] ?? DEFAULT_GROUP].push(file);
  }
  return { byGroup, problems };
}

module.exports = { GROUPS, GROUP_NAMES, DEFAULT_GROUP, groupTags, testFiles, testGroups };
