/**
 * The API reference (docs/api/, scripts/api-docs.js): rebuilt from the declaration files of
 * `npm run build`, it has no warning (every exported name of every entry point has a doc comment and
 * a declaration) and is the one in docs/api/; a planted package shows what the generator finds and
 * what it warns about. Needs `npm run build` (dist/), as the CLI tests do.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

interface Reference {
  pages: Map<string, string>;
  warnings: string[];
}
const { apiReference } = require('../../scripts/api-docs.js') as { apiReference: (root: string) => Reference };

const ROOT = path.resolve(__dirname, '..', '..');

describe('API reference', () => {
  const built = fs.existsSync(path.join(ROOT, 'dist', 'index.d.ts'));
  const ref = built ? apiReference(ROOT) : null;

  test('the built package gives no warning and the pages in docs/api/', () => {
    if (ref === null) throw new Error('dist/ is not built: run npm run build');
    expect(ref.warnings).toEqual([]);
    const committed = fs.readdirSync(path.join(ROOT, 'docs', 'api')).sort();
    expect(committed).toEqual([...ref.pages.keys()].sort());
    for (const [name, text] of ref.pages) {
      // A stale page: run `npm run build && npm run docs:api`.
      expect(`${name}:\n${fs.readFileSync(path.join(ROOT, 'docs', 'api', name), 'utf8')}`).toBe(`${name}:\n${text}`);
    }
  });

  test('every value an entry point exports at run time has its section, with its doc comment', () => {
    if (ref === null) throw new Error('dist/ is not built: run npm run build');
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { require?: { default: string } }> };
    const pages: Record<string, string> = {
      '.': 'index.md',
      './packets': 'packets.md',
      './analysis': 'analysis.md',
      './stack': 'stack.md',
      './nic-driver': 'nic-driver.md',
      './sim': 'sim.md',
    };
    for (const [subpath, page] of Object.entries(pages)) {
      const target = pkg.exports[subpath]?.require?.default;
      expect(target).toBeDefined();
      const mod = require(path.join(ROOT, target as string)) as Record<string, unknown>;
      const text = ref.pages.get(page) as string;
      const names = Object.keys(mod).filter((n) => n !== '__esModule');
      expect(names.length).toBeGreaterThan(3);
      for (const n of names) expect(`${page}: ${n} ${text.includes(`\n## ${n}\n`)}`).toBe(`${page}: ${n} true`);
    }
    expect(ref.pages.get('sim.md')).toContain('Builds two devices joined by the in-memory link on a new virtual clock.');
  });

  describe('on a planted package', () => {
    let dir: string;
    beforeEach(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-api-docs-'));
      fs.mkdirSync(path.join(dir, 'dist', 'sub'), { recursive: true });
      const entry = (base: string) => ({ require: { types: `./dist/${base}.d.ts`, default: `./dist/${base}.js` } });
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'planted', exports: { '.': entry('index'), './sub': entry('sub/index') } }));
    });
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
    const write = (rel: string, text: string): void => fs.writeFileSync(path.join(dir, 'dist', rel), text);

    test('re-exports are followed to their declaration; private members stay out', () => {
      write('index.d.ts', "/** The planted root. */\n/** The sub entry. */\nexport * as sub from './sub/index';\n");
      write('sub/index.d.ts', "/** The planted sub entry. */\nexport { Widget as Thing, make } from './widget';\nexport * from './more';\n");
      write(
        'sub/widget.d.ts',
        [
          '/** The widget file. */',
          "import type { Part } from './more';",
          '/** A widget; `{` and `;` in a comment do not end it. */',
          'export declare class Widget {',
          '    /** Hidden. */',
          '    private secret;',
          "    readonly label: 'a;b}';",
          '    part(): Part;',
          '}',
          '/** Makes one. */',
          'export declare function make(n: number): Widget;',
          '/** Makes two. */',
          'export declare function make(a: string, b: string): Widget;',
          '',
        ].join('\n'),
      );
      write('sub/more.d.ts', '/** The more file. */\n/** A part. */\nexport interface Part {\n    n: number;\n}\n');
      const r = apiReference(dir);
      expect(r.warnings).toEqual([]);
      const sub = r.pages.get('sub.md') as string;
      expect(sub).toContain('# `planted/sub`\n\nThe planted sub entry.');
      expect(sub).toContain(
        "## Thing\n\nclass · `sub/widget.ts`\n\nA widget; `{` and `;` in a comment do not end it.\n\n```ts\nexport declare class Widget {\n    readonly label: 'a;b}';\n    part(): Part;\n}\n```",
      );
      expect(sub).toContain('## make\n\nfunction · `sub/widget.ts`\n\nMakes one.\n\nMakes two.');
      expect(sub).toContain('## Part\n\ninterface · `sub/more.ts`\n\nA part.');
      expect(sub).not.toContain('secret');
      expect(r.pages.get('index.md')).toContain('## sub\n\nnamespace: every name of [`planted/sub`](sub.md)\n\nThe sub entry.');
    });

    test('an exported name without a doc comment, or without a declaration, is a warning', () => {
      write('index.d.ts', "export { a, b, gone } from './sub/index';\n");
      write('sub/index.d.ts', '/** The sub entry. */\n/** Documented. */\nexport declare const a = 1;\nexport declare function b(): void;\n');
      expect(apiReference(dir).warnings).toEqual([
        'planted: its index module has no doc comment at the top',
        'planted: b (sub/index.ts) has no doc comment',
        'planted: gone is exported but its declaration was not found',
        'planted/sub: b (sub/index.ts) has no doc comment',
      ]);
    });
  });
});
