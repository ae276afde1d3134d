/**
 * The test groups (test/support/test-groups.js, jest's projects in jest.config.js) hold every test
 * file exactly once, and each file is in the group its needs say:
 * - a file in `unit` or `long` uses nothing outside Node: no skip helper of the network-namespace
 *   or interop tests, no root check, no tshark, no Chromium, no qemu;
 * - a file marked `@group netns`, `interop`, `tshark` or `browser` uses what its group is for, so a
 *   marker cannot keep a file out of the inner loop for no reason.
 * What a file uses: the names it imports (from the test helpers of its own folder too, followed
 * through their imports), and what its own code (comments and regular expressions left out) starts
 * or checks.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

interface GroupsModule {
  GROUPS: Record<string, string>;
  GROUP_NAMES: string[];
  DEFAULT_GROUP: string;
  groupTags(text: string): string[];
  testGroups(root: string): { byGroup: Record<string, string[]>; problems: string[] };
}
interface Project {
  displayName: string;
  testMatch: string[];
}

const ROOT = path.resolve(__dirname, '..');
const groups = require('./support/test-groups.js') as GroupsModule;
const jestConfig = require('../jest.config.js') as { projects: Project[] };
const scripts = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;

/** What puts a file in a system group: names imported (directly or through a local helper), or patterns in its own code. */
const NEEDS: Record<string, { imports: readonly string[]; code: readonly RegExp[] }> = {
  netns: {
    imports: [
      'netnsSkipReason',
      'nativeNetnsSkipReason',
      'e2eSkipReason',
      'createNetnsPair',
      'pairPerFile',
      'runInNetns',
      'createRoutedPath',
      'createNetnsPairV6Only',
    ],
    code: [/\bprocess\.getuid\s*\(/, /['"`]ip['"`]\s*,\s*\[\s*['"`]netns['"`]/],
  },
  interop: { imports: ['interopSkipReason', 'runLab'], code: [/qemu-system/] },
  tshark: { imports: [], code: [/['"`]tshark['"`]/, /\bTSHARK\b/] },
  browser: { imports: [], code: [/chromium/i] },
};
const PURE_GROUPS = new Set(['unit', 'long']);

/** `src` without its comments and regular-expression literals (strings and templates kept). */
function stripComments(src: string): string {
  let out = '';
  let last = ''; // the last character of code, to tell a regular expression from a division
  let i = 0;
  while (i < src.length) {
    const c = src[i]!;
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      i = end < 0 ? src.length : end + 2;
      out += ' ';
    } else if (c === '/' && (last === '' || '(,=:[!&|?{};'.includes(last))) {
      let j = i + 1;
      let inClass = false;
      while (j < src.length && src[j] !== '\n' && (inClass || src[j] !== '/')) {
        if (src[j] === '\\') j++;
        else if (src[j] === '[') inClass = true;
        else if (src[j] === ']') inClass = false;
        j++;
      }
      i = j + 1;
      while (i < src.length && /[a-z]/.test(src[i]!)) i++; // flags
      out += '/re/';
      last = '/';
    } else if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < src.length && src[j] !== c) j += src[j] === '\\' ? 2 : 1;
      out += src.slice(i, j + 1);
      i = j + 1;
      last = c;
    } else {
      out += c;
      if (!/\s/.test(c)) last = c;
      i++;
    }
  }
  return out;
}

/** Every `*.test.ts` under test/, walked here on its own (not through the module under test). */
function allTestFiles(): string[] {
  return (fs.readdirSync(path.join(ROOT, 'test'), { recursive: true }) as string[])
    .map((f) => `test/${f.split(path.sep).join('/')}`)
    .filter((f) => f.endsWith('.test.ts') && fs.statSync(path.join(ROOT, f)).isFile())
    .sort();
}

/** Named imports of a file, with the local helper modules (under test/, outside test/support/) it reaches through its imports. */
function importedNames(file: string, seen = new Set<string>()): Set<string> {
  const names = new Set<string>();
  if (seen.has(file)) return names;
  seen.add(file);
  const code = stripComments(fs.readFileSync(path.join(ROOT, file), 'utf8'));
  for (const m of code.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s*from\s*['"]([^'"]+)['"]/g)) {
    for (const part of m[1]!.split(',')) {
      const name = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/)[0]!
        .trim();
      if (name !== '') names.add(name);
    }
  }
  for (const m of code.matchAll(/(?:import|export)\s[^;]*?from\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!));
    const rel = fs.existsSync(path.join(ROOT, `${target}.ts`)) ? `${target}.ts` : null;
    if (rel !== null && rel.startsWith('test/') && !rel.startsWith('test/support/')) for (const n of importedNames(rel, seen)) names.add(n);
  }
  return names;
}

/** The system groups whose needs a test file shows. */
function needsOf(file: string): string[] {
  const names = importedNames(file);
  const code = stripComments(fs.readFileSync(path.join(ROOT, file), 'utf8'));
  return Object.entries(NEEDS)
    .filter(([, n]) => n.imports.some((x) => names.has(x)) || n.code.some((re) => re.test(code)))
    .map(([g]) => g);
}

const files = allTestFiles();
const { byGroup, problems } = groups.testGroups(ROOT);
const groupOf = new Map<string, string>();
for (const [g, list] of Object.entries(byGroup)) for (const f of list) groupOf.set(f, g);

test('every test file has at most one known @group, in its leading doc comment', () => {
  expect(problems).toEqual([]);
  const misplaced = files.filter((f) => {
    const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
    return groups.groupTags(text).length === 0 && /^[ \t]*(?:\*|\/\/)[ \t]*@group\b/m.test(text);
  });
  expect(misplaced).toEqual([]);
});

test("jest's projects are the groups, and together hold every test file exactly once", () => {
  expect(jestConfig.projects.map((p) => p.displayName)).toEqual(groups.GROUP_NAMES);
  const count = new Map<string, number>();
  for (const p of jestConfig.projects) {
    for (const m of p.testMatch) {
      const f = m.replace('<rootDir>/', '');
      if (fs.existsSync(path.join(ROOT, f))) count.set(f, (count.get(f) ?? 0) + 1);
    }
  }
  expect([...count.keys()].sort()).toEqual(files);
  expect([...count].filter(([, n]) => n !== 1)).toEqual([]);
  for (const g of groups.GROUP_NAMES) expect({ g, files: (byGroup[g] ?? []).length > 0 }).toEqual({ g, files: true });
});

test('each group has a script that runs it alone', () => {
  for (const g of groups.GROUP_NAMES)
    expect({ g, script: scripts[`test:${g}`] }).toEqual({ g, script: expect.stringMatching(new RegExp(`jest --selectProjects ${g}\\b`)) });
  // npm test: every group, each once (the groups that need nothing of the system share the cores;
  // the namespace and qemu groups run one file at a time, as their set-ups are machine-wide).
  const runs = [...(scripts['test'] ?? '').matchAll(/jest --selectProjects ([a-z ]+?)(?= --|$| &&)/g)].map((m) => (m[1] ?? '').split(' '));
  expect(runs.flat().sort()).toEqual([...groups.GROUP_NAMES].sort());
});

test('the inner loop (unit) and the long group hold no file that needs root, a namespace, qemu, tshark or a browser', () => {
  const wrong = files
    .filter((f) => PURE_GROUPS.has(groupOf.get(f) ?? ''))
    .map((f) => ({ f, needs: needsOf(f) }))
    .filter((x) => x.needs.length > 0);
  expect(wrong).toEqual([]);
});

test('a file marked for a system group uses what the group is for', () => {
  const wrong = files
    .filter((f) => !PURE_GROUPS.has(groupOf.get(f) ?? 'unit'))
    .map((f) => ({ f, group: groupOf.get(f), needs: needsOf(f) }))
    .filter((x) => !x.needs.includes(x.group ?? ''));
  expect(wrong).toEqual([]);
});

test('the needs are read from code, not comments, and through a local helper', () => {
  expect(stripComments("a // x\n/* 'y' */ b 'x // y' = /'z'/i; c = d / e / f")).toBe("a \n  b 'x // y' = /re/; c = d / e / f");
  // verbs-af-packet.test.ts calls a suite whose file imports the e2e harness's skip helper.
  expect(needsOf('test/e2e/verbs-af-packet.test.ts')).toEqual(['netns']);
  // capture-check.test.ts imports the lab's capture check, not the lab: it stays in the inner loop.
  expect(needsOf('test/interop/capture-check.test.ts')).toEqual([]);
});
