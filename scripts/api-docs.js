#!/usr/bin/env node
'use strict';
/**
 * The API reference (docs/api/), generated from the declaration files that `npm run build` emits.
 * TypeDoc and API Extractor drive the TypeScript 5 compiler API, which TypeScript 7's native
 * compiler does not have, so this reads the emitted .d.ts text instead: tsc prints one top-level
 * statement after another with each declaration's doc comment just above it.
 *
 * For every entry point in package.json's `exports` (its `require` condition's `types` file) it
 * follows the export lists (`export { a as b } from`, `export *`, `export * as ns`, imports
 * re-exported) to the declaration of each exported name, and writes one Markdown page per entry:
 * each name with its kind, the source file that declares it, its doc comment and its declaration
 * (private class members left out). A warning is anything a reader would miss: an exported name
 * whose declarations carry no doc comment, or one whose declaration cannot be found.
 *
 *   node scripts/api-docs.js            write docs/api/ (exit 1 on any warning)
 *   node scripts/api-docs.js --check    compare docs/api/ with what would be written (exit 1 when stale)
 *   node scripts/api-docs.js --out DIR  write DIR instead
 */
const fs = require('node:fs');
const path = require('node:path');

const DECL_HEAD =
  /^(?:export\s+)?(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(function|const|let|var|class|interface|type|enum|namespace|module)\s+([A-Za-z_$][\w$]*)/;
const BLOCK_KINDS = new Set(['class', 'interface', 'enum', 'namespace', 'module']);

/**
 * Splits declaration-file text into top-level statements, each with the doc comment right above it.
 * Strings, template literals and comments are stepped over so that their braces and semicolons
 * do not count.
 */
function statements(text) {
  const out = [];
  let i = 0;
  let doc = null;
  const n = text.length;
  // The doc comment that opens a file is the module's (TypeDoc's rule as well), never a statement's.
  const lead = /^\s*\/\*\*(?!\/)[\s\S]*?\*\//.exec(text);
  if (lead !== null) {
    out.module = lead[0].trim();
    i = lead[0].length;
  }
  while (i < n) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (text.startsWith('/*', i)) {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? n : end + 2;
      doc = text.startsWith('/**', i) && !text.startsWith('/**/', i) ? text.slice(i, stop) : null;
      i = stop;
      continue;
    }
    if (text.startsWith('//', i)) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
      doc = null;
      continue;
    }
    const start = i;
    let depth = 0;
    let head = null;
    while (i < n) {
      const ch = text[i];
      if (ch === "'" || ch === '"' || ch === '`') {
        i = skipString(text, i);
        continue;
      }
      if (text.startsWith('/*', i)) {
        const end = text.indexOf('*/', i + 2);
        i = end < 0 ? n : end + 2;
        continue;
      }
      if (text.startsWith('//', i)) {
        const end = text.indexOf('\n', i);
        i = end < 0 ? n : end;
        continue;
      }
      if (ch === '{' || ch === '(' || ch === '[') {
        if (depth === 0 && ch === '{' && head === null) head = text.slice(start, i);
        depth++;
      } else if (ch === '}' || ch === ')' || ch === ']') {
        depth--;
        if (depth === 0 && ch === '}') {
          const m = DECL_HEAD.exec(head ?? '');
          if (m && BLOCK_KINDS.has(m[1])) {
            i++;
            break;
          }
        }
      } else if (ch === ';' && depth === 0) {
        i++;
        break;
      }
      i++;
    }
    out.push({ text: text.slice(start, i).trim(), doc });
    doc = null;
  }
  return out;
}

/** The index just past the string or template literal starting at `i` (a template's `${...}` nests). */
function skipString(text, i) {
  const q = text[i];
  i++;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '\\') {
      i += 2;
      continue;
    }
    if (ch === q) return i + 1;
    if (q === '`' && text.startsWith('${', i)) {
      let depth = 1;
      i += 2;
      while (i < text.length && depth > 0) {
        if (text[i] === '`' || text[i] === "'" || text[i] === '"') {
          i = skipString(text, i);
          continue;
        }
        if (text[i] === '{') depth++;
        else if (text[i] === '}') depth--;
        i++;
      }
      continue;
    }
    i++;
  }
  return i;
}

/** `a, type b, c as d` → [{ local: 'a', name: 'a' }, ...]. */
function specifiers(list) {
  return list
    .split(',')
    .map((s) => s.trim().replace(/^type\s+/, ''))
    .filter((s) => s.length > 0)
    .map((s) => {
      const m = /^([\w$]+)(?:\s+as\s+([\w$]+))?$/.exec(s);
      return m ? { local: m[1], name: m[2] ?? m[1] } : { local: s, name: s };
    });
}

/** One declaration file, read into what it declares, imports and exports. */
function parseModule(file) {
  const mod = { file, decls: new Map(), exported: new Set(), reexports: [], stars: [], namespaces: [], imports: new Map() };
  for (const st of statements(fs.readFileSync(file, 'utf8'))) {
    const t = st.text;
    let m;
    if ((m = /^import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+['"]([^'"]+)['"]/.exec(t))) {
      for (const s of specifiers(m[1])) mod.imports.set(s.name, { from: m[2], name: s.local });
    } else if ((m = /^import\s+(?:type\s+)?\*\s+as\s+([\w$]+)\s+from\s+['"]([^'"]+)['"]/.exec(t))) {
      mod.imports.set(m[1], { from: m[2], name: '*' });
    } else if ((m = /^export\s+(?:type\s+)?\{([^}]*)\}\s*(?:from\s+['"]([^'"]+)['"])?/.exec(t))) {
      for (const s of specifiers(m[1])) mod.reexports.push({ ...s, from: m[2] ?? null, doc: st.doc });
    } else if ((m = /^export\s+\*\s+as\s+([\w$]+)\s+from\s+['"]([^'"]+)['"]/.exec(t))) {
      mod.namespaces.push({ name: m[1], from: m[2], doc: st.doc });
    } else if ((m = /^export\s+\*\s+from\s+['"]([^'"]+)['"]/.exec(t))) {
      mod.stars.push(m[1]);
    } else if ((m = DECL_HEAD.exec(t))) {
      const list = mod.decls.get(m[2]) ?? [];
      list.push({ kind: m[1], text: t, doc: st.doc });
      mod.decls.set(m[2], list);
      if (t.startsWith('export ')) mod.exported.add(m[2]);
    }
  }
  return mod;
}

function resolveSpecifier(fromFile, spec) {
  const base = path.resolve(path.dirname(fromFile), spec.replace(/\.(js|mjs|cjs)$/, ''));
  for (const cand of [`${base}.d.ts`, path.join(base, 'index.d.ts')]) if (fs.existsSync(cand)) return cand;
  return null;
}

class ApiReader {
  constructor() {
    this.modules = new Map();
  }
  module(file) {
    let m = this.modules.get(file);
    if (m === undefined) {
      m = parseModule(file);
      this.modules.set(file, m);
    }
    return m;
  }
  /** Every name `file` exports: name → { via } where via is a declaration site or a namespace. */
  exportsOf(file, seen = new Set()) {
    const out = new Map();
    if (seen.has(file)) return out;
    seen.add(file);
    const mod = this.module(file);
    for (const name of mod.exported) out.set(name, { file, local: name, doc: null });
    for (const r of mod.reexports) out.set(r.name, { file, local: r.local, from: r.from, doc: r.doc });
    for (const ns of mod.namespaces) out.set(ns.name, { file, namespace: ns.from, doc: ns.doc });
    for (const star of mod.stars) {
      const target = resolveSpecifier(file, star);
      if (target === null) continue;
      for (const [name, via] of this.exportsOf(target, seen)) if (!out.has(name)) out.set(name, via);
    }
    return out;
  }
  /** The declarations a name of `file` stands for, following re-exports and imports. */
  declarationsOf(file, name, depth = 0) {
    if (depth > 20) return null;
    const mod = this.module(file);
    const here = mod.decls.get(name);
    if (here !== undefined) return { file, decls: here };
    for (const r of mod.reexports) {
      if (r.name !== name) continue;
      if (r.from !== null) {
        const target = resolveSpecifier(file, r.from);
        return target === null ? null : this.declarationsOf(target, r.local, depth + 1);
      }
      return this.localOrImported(file, r.local, depth);
    }
    for (const star of mod.stars) {
      const target = resolveSpecifier(file, star);
      if (target === null) continue;
      const found = this.declarationsOf(target, name, depth + 1);
      if (found !== null) return found;
    }
    return this.localOrImported(file, name, depth);
  }
  localOrImported(file, name, depth) {
    const mod = this.module(file);
    const decls = mod.decls.get(name);
    if (decls !== undefined) return { file, decls };
    const imp = mod.imports.get(name);
    if (imp === undefined || imp.name === '*') return null;
    const target = resolveSpecifier(file, imp.from);
    return target === null ? null : this.declarationsOf(target, imp.name, depth + 1);
  }
}

/** A doc comment's text without its delimiters and leading asterisks. */
function docText(doc) {
  return doc
    .replace(/^\/\*\*\s?/, '')
    .replace(/\s*\*\/$/, '')
    .split('\n')
    .map((l) => l.replace(/^\s*\* ?/, ''))
    .join('\n')
    .trim();
}

/** A declaration as a reader wants it: private members (their types are not emitted) left out. */
function declarationText(text) {
  const out = [];
  let comment = [];
  for (const line of text.split('\n')) {
    if (comment.length > 0 || /^\s*\/\*\*/.test(line)) {
      comment.push(line);
      if (line.includes('*/')) {
        out.push(...comment);
        comment = [];
      }
      continue;
    }
    if (/^\s*(?:private\b|#private;)/.test(line)) {
      // A private member and the doc comment above it.
      while (out.length > 0 && /^\s*(?:\/\*\*|\*)/.test(out[out.length - 1])) {
        const top = out.pop();
        if (/^\s*\/\*\*/.test(top)) break;
      }
      continue;
    }
    out.push(line);
  }
  return out.join('\n');
}

/** Entry points: [{ subpath, dts, page }] from package.json's `exports`. */
function entries(root) {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const out = [];
  for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
    const types = typeof target === 'object' && target !== null ? (target.require?.types ?? target.types) : undefined;
    if (types === undefined) continue;
    const slug = subpath === '.' ? 'index' : subpath.replace(/^\.\//, '').replace(/\//g, '-');
    out.push({ subpath, specifier: subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`, dts: path.join(root, types), page: `${slug}.md` });
  }
  return out;
}

/** The source path a declaration file was emitted from (dist/packets/decode.d.ts → packets/decode.ts). */
function sourceOf(root, dts) {
  return path
    .relative(path.join(root, 'dist'), dts)
    .replace(/\.d\.ts$/, '.ts')
    .split(path.sep)
    .join('/');
}

/**
 * Builds the reference of the package at `root` (its package.json and built dist/).
 * Returns the pages by file name and the warnings.
 */
function apiReference(root) {
  const reader = new ApiReader();
  const pages = new Map();
  const warnings = [];
  const list = entries(root);
  const pageOfDts = new Map(list.map((e) => [path.resolve(e.dts), e]));
  const index = [
    '# API reference',
    '',
    'Generated by `npm run docs:api` (scripts/api-docs.js) from the declaration files of `npm run build`; do not edit.',
    '',
    '| entry point | what it holds |',
    '|---|---|',
  ];
  for (const e of list) {
    if (!fs.existsSync(e.dts)) {
      warnings.push(`${e.specifier}: ${path.relative(root, e.dts)} is not built (npm run build)`);
      continue;
    }
    const intro = statementsOf(e.dts).module;
    const introText = intro ? docText(intro) : '';
    if (introText === '') warnings.push(`${e.specifier}: its index module has no doc comment at the top`);
    index.push(
      `| [\`${e.specifier}\`](${e.page}) | ${introText
        .split(/\n\n/)[0]
        .replace(/\n/g, ' ')
        .replace(/^`[^`]*`: /, '')} |`,
    );
    const lines = [`# \`${e.specifier}\``, '', introText, ''];
    const names = [...reader.exportsOf(e.dts)].sort(([a], [b]) => a.localeCompare(b, 'en'));
    lines.push(names.map(([name]) => `[\`${name}\`](#${name.toLowerCase()})`).join(' · '), '');
    for (const [name, via] of names) {
      if (via.namespace !== undefined) {
        const target = resolveSpecifier(via.file, via.namespace);
        const linked = target === null ? undefined : pageOfDts.get(path.resolve(target));
        if (via.doc === null) warnings.push(`${e.specifier}: namespace ${name} has no doc comment`);
        if (linked === undefined) warnings.push(`${e.specifier}: namespace ${name} is not an entry point of its own`);
        lines.push(`## ${name}`, '', `namespace: every name of [\`${linked?.specifier ?? via.namespace}\`](${linked?.page ?? ''})`, '');
        if (via.doc !== null) lines.push(docText(via.doc), '');
        continue;
      }
      const found = reader.declarationsOf(e.dts, name);
      if (found === null) {
        warnings.push(`${e.specifier}: ${name} is exported but its declaration was not found`);
        continue;
      }
      const docs = found.decls.filter((d) => d.doc !== null).map((d) => docText(d.doc));
      const reexportDoc = via.doc !== null && via.doc !== undefined ? docText(via.doc) : null;
      if (docs.length === 0 && reexportDoc === null) warnings.push(`${e.specifier}: ${name} (${sourceOf(root, found.file)}) has no doc comment`);
      const kinds = [...new Set(found.decls.map((d) => d.kind))].join(', ');
      lines.push(`## ${name}`, '', `${kinds} · \`${sourceOf(root, found.file)}\``, '');
      for (const d of [...new Set(docs.length > 0 ? docs : [reexportDoc])]) lines.push(d, '');
      lines.push('```ts', ...found.decls.map((d) => declarationText(d.text)), '```', '');
    }
    pages.set(
      e.page,
      `${lines
        .join('\n')
        .replace(/\n{3,}/g, '\n\n')
        .trimEnd()}\n`,
    );
  }
  pages.set('README.md', `${index.join('\n')}\n`);
  return { pages, warnings };
}

function statementsOf(file) {
  return statements(fs.readFileSync(file, 'utf8'));
}

function main(argv) {
  const root = path.resolve(__dirname, '..');
  const outAt = argv.indexOf('--out');
  const out = outAt >= 0 ? path.resolve(argv[outAt + 1] ?? '') : path.join(root, 'docs', 'api');
  const { pages, warnings } = apiReference(root);
  for (const w of warnings) process.stderr.write(`api-docs: warning: ${w}\n`);
  if (argv.includes('--check')) {
    const stale = [...pages]
      .filter(([name, text]) => !fs.existsSync(path.join(out, name)) || fs.readFileSync(path.join(out, name), 'utf8') !== text)
      .map(([name]) => name);
    const extra = fs.existsSync(out) ? fs.readdirSync(out).filter((f) => !pages.has(f)) : [];
    if (stale.length > 0 || extra.length > 0) {
      process.stderr.write(
        `api-docs: ${path.relative(root, out)} is not what the declarations give (${[...stale, ...extra].join(', ')}); run npm run build && npm run docs:api\n`,
      );
      return 1;
    }
    return warnings.length > 0 ? 1 : 0;
  }
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  for (const [name, text] of pages) fs.writeFileSync(path.join(out, name), text);
  process.stdout.write(`api-docs: ${pages.size} pages in ${path.relative(root, out) || out}${warnings.length > 0 ? `, ${warnings.length} warnings` : ''}\n`);
  return warnings.length > 0 ? 1 : 0;
}

module.exports = { apiReference, statements };

if (require.main === module) process.exitCode = main(process.argv.slice(2));
