/**
 * Finds every import of a TypeScript source file: static `import ... from`,
 * `import type`, `export ... from`, side-effect `import '...'`, `require(...)`
 * and `import(...)`. Comments, string contents and template literals are
 * skipped, so an import written in a comment or a string is not one. A
 * `require` or `import()` whose argument is not a string literal is reported
 * with `specifier: null` (its target cannot be checked).
 */

export interface ImportRef {
  /** The module specifier, or null for a computed `require(...)` / `import(...)`. */
  specifier: string | null;
  /** 1-based line of the keyword. */
  line: number;
  kind: 'import' | 'export' | 'require' | 'dynamic';
}

/**
 * Marks which characters of `src` are code (true) and which are inside a comment,
 * a string, a template literal's text or a regular-expression literal (false).
 */
export function codeMask(src: string): Uint8Array {
  const mask = new Uint8Array(src.length);
  /** Brace depth of each open template substitution `${`. */
  const templates: number[] = [];
  let depth = 0;
  let i = 0;
  let lastSignificant = '';
  let lastWord = '';
  const regexMayStart = (): boolean =>
    lastSignificant === '' ||
    '(,=:[!&|?{};+-*%<>~^'.includes(lastSignificant) ||
    ['return', 'typeof', 'case', 'in', 'of', 'void', 'delete', 'throw'].includes(lastWord);
  const skipTemplateText = (): void => {
    // i is just past '`' or '}' closing a substitution; stop after the closing '`' or just after '${'.
    while (i < src.length) {
      const c = src[i];
      if (c === '\\') i += 2;
      else if (c === '`') {
        i++;
        return;
      } else if (c === '$' && src[i + 1] === '{') {
        i += 2;
        templates.push(depth);
        depth++;
        return;
      } else i++;
    }
  };
  while (i < src.length) {
    const c = src[i] as string;
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    if (c === '/' && next === '*') {
      const end = src.indexOf('*/', i + 2);
      i = end < 0 ? src.length : end + 2;
      continue;
    }
    if (c === '"' || c === "'") {
      mask[i] = 1; // the quote itself counts as code, so a specifier's position is known
      i++;
      while (i < src.length && src[i] !== c && src[i] !== '\n') i += src[i] === '\\' ? 2 : 1;
      if (i < src.length) mask[i] = 1;
      i++;
      lastSignificant = c;
      lastWord = '';
      continue;
    }
    if (c === '`') {
      i++;
      skipTemplateText();
      lastSignificant = '`';
      lastWord = '';
      continue;
    }
    if (c === '/' && regexMayStart()) {
      i++;
      let inClass = false;
      while (i < src.length && src[i] !== '\n') {
        const r = src[i];
        if (r === '\\') i += 2;
        else {
          if (r === '[') inClass = true;
          else if (r === ']') inClass = false;
          else if (r === '/' && !inClass) break;
          i++;
        }
      }
      i++;
      while (i < src.length && /[a-z]/i.test(src[i] as string)) i++;
      lastSignificant = '/';
      lastWord = '';
      continue;
    }
    if (c === '{') depth++;
    if (c === '}') {
      depth--;
      if (templates.length > 0 && templates[templates.length - 1] === depth) {
        templates.pop();
        i++;
        skipTemplateText();
        lastSignificant = '`';
        lastWord = '';
        continue;
      }
    }
    mask[i] = 1;
    if (/[A-Za-z_$0-9]/.test(c)) {
      let j = i;
      while (j < src.length && /[A-Za-z_$0-9]/.test(src[j] as string)) {
        mask[j] = 1;
        j++;
      }
      lastWord = src.slice(i, j);
      lastSignificant = 'a';
      i = j;
      continue;
    }
    if (!/\s/.test(c)) {
      lastSignificant = c;
      lastWord = '';
    }
    i++;
  }
  return mask;
}

const PATTERNS: { re: RegExp; kind: ImportRef['kind'] }[] = [
  // import x from '...', import type { X } from '...', import * as x from '...' (possibly over several lines)
  { re: /\bimport\s+(?:type\s+)?[\w*${}\s,]*?\bfrom\s*(['"])([^'"\n]+)\1/g, kind: 'import' },
  // import '...'
  { re: /\bimport\s*(['"])([^'"\n]+)\1/g, kind: 'import' },
  // export { x } from '...', export * from '...', export type { X } from '...'
  { re: /\bexport\s+(?:type\s+)?(?:\*(?:\s+as\s+\w+)?|\{[^}]*\})\s*from\s*(['"])([^'"\n]+)\1/g, kind: 'export' },
  // import x = require('...')  and plain require('...')
  { re: /\brequire\s*\(\s*(?:(['"])([^'"\n]+)\1\s*\)|([^)]*)\))/g, kind: 'require' },
  { re: /\bimport\s*\(\s*(?:(['"])([^'"\n]+)\1\s*\)|([^)]*)\))/g, kind: 'dynamic' },
];

/** Every import of `src`, in source order. */
export function scanImports(src: string): ImportRef[] {
  const mask = codeMask(src);
  const found: (ImportRef & { at: number })[] = [];
  for (const { re, kind } of PATTERNS) {
    re.lastIndex = 0;
    for (let m = re.exec(src); m !== null; m = re.exec(src)) {
      if (mask[m.index] !== 1) continue; // in a comment, a string or a template
      // The quote that opens the specifier must be code too (not inside a longer string).
      const quoteAt = m[2] !== undefined ? src.indexOf((m[1] as string) + m[2], m.index) : -1;
      if (quoteAt >= 0 && mask[quoteAt] !== 1) continue;
      const line = src.slice(0, m.index).split('\n').length;
      found.push({ specifier: m[2] ?? null, line, kind, at: m.index });
    }
  }
  found.sort((a, b) => a.at - b.at);
  return found.map(({ specifier, line, kind }) => ({ specifier, line, kind }));
}
