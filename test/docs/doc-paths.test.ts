/**
 * The docs are a reference: every relative link, and every repository path they name in code
 * spans (`stack/requester.ts`, `captures/rxe/`), exists in the tree. Paths under folders the
 * tests write at run time (captures/interop/) and spans holding patterns or placeholders are
 * not paths of the tree and are left out.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
/** The tree's top-level rooms: a code span starting with one of them and a slash names a path. */
const ROOMS = fs
  .readdirSync(ROOT, { withFileTypes: true })
  .filter((e) => e.isDirectory() && !e.name.startsWith('.') && e.name !== 'node_modules' && e.name !== 'dist')
  .map((e) => e.name);
/** Folders whose files the test suite writes when it runs (ignored by git). */
const WRITTEN_AT_RUN_TIME = ['captures/interop/'];

function docs(): string[] {
  const out = ['README.md', 'CHANGELOG.md', 'captures/README.md'];
  for (const dir of ['docs', 'examples']) {
    const walk = (d: string): void => {
      for (const e of fs.readdirSync(path.join(ROOT, d), { withFileTypes: true })) {
        const p = path.join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.md')) out.push(p);
      }
    };
    if (fs.existsSync(path.join(ROOT, dir))) walk(dir);
  }
  return out;
}

/** The paths a document names that do not exist, as `kind target` lines. */
function missing(doc: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, doc), 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
    const target = m[1] ?? '';
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    if (!fs.existsSync(path.resolve(ROOT, path.dirname(doc), target))) out.push(`link ${target}`);
  }
  for (const m of text.matchAll(/`([^`\s]+)`/g)) {
    const span = (m[1] ?? '').replace(/[.,:;)]+$/, '').replace(/[:#].*$/, '');
    if (/[*{}<>|$…]|\.\.\.|NAME|\bN\b/.test(span) || !span.includes('/')) continue;
    if (!ROOMS.includes(span.split('/')[0] ?? '')) continue;
    if (WRITTEN_AT_RUN_TIME.some((w) => span.startsWith(w))) continue;
    if (!fs.existsSync(path.join(ROOT, span))) out.push(`path ${span}`);
  }
  return out;
}

test('the docs are found (README, CHANGELOG, docs/, captures/README.md)', () => {
  const d = docs();
  expect(d).toEqual(expect.arrayContaining(['README.md', path.join('docs', 'conformance.md'), path.join('docs', 'analysis.md')]));
});

test.each(docs())('%s: every link and every repository path it names exists', (doc) => {
  expect(missing(doc)).toEqual([]);
});
