/**
 * A small command-line parser: `--name value`, `--name=value`, `-x value`,
 * boolean flags and positionals, checked against a declared option table.
 * Bad flags are a `UsageError` with a clear message, never a crash.
 */
import { RoceError } from '../base/roce-error';

export class UsageError extends RoceError<'ROCE_ERR_USAGE'> {
  constructor(message: string) {
    super('ROCE_ERR_USAGE', message);
  }
}

export interface OptionSpec {
  /** Long name without dashes, e.g. `roce-port`. */
  name: string;
  /** One-letter alias without the dash. */
  short?: string;
  /** `flag` takes no value; `string` takes one; `list` may repeat and accepts comma lists; `repeat` may repeat, each value whole (commas kept). */
  kind: 'flag' | 'string' | 'list' | 'repeat';
  help: string;
  /** Placeholder for the value in help text. */
  value?: string;
}

export interface ParsedArgs {
  flags: Set<string>;
  values: Map<string, string>;
  lists: Map<string, string[]>;
  positionals: string[];
}

export function parseArgs(argv: readonly string[], specs: readonly OptionSpec[]): ParsedArgs {
  const byLong = new Map(specs.map((s) => [s.name, s]));
  const byShort = new Map(specs.filter((s) => s.short !== undefined).map((s) => [s.short as string, s]));
  const out: ParsedArgs = { flags: new Set(), values: new Map(), lists: new Map(), positionals: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      out.positionals.push(...argv.slice(i + 1));
      break;
    }
    let spec: OptionSpec | undefined;
    let inline: string | undefined;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      if (eq >= 0) inline = arg.slice(eq + 1);
      spec = byLong.get(name);
      if (spec === undefined) throw new UsageError(`unknown option --${name}`);
    } else if (arg.startsWith('-') && arg.length > 1 && !/^-\d/.test(arg)) {
      spec = byShort.get(arg.slice(1, 2));
      if (spec === undefined) throw new UsageError(`unknown option ${arg.slice(0, 2)}`);
      if (arg.length > 2) inline = arg.slice(2);
    } else {
      out.positionals.push(arg);
      continue;
    }
    if (spec.kind === 'flag') {
      if (inline !== undefined) throw new UsageError(`option --${spec.name} takes no value`);
      out.flags.add(spec.name);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      if (next === undefined) throw new UsageError(`option --${spec.name} needs a value (${spec.value ?? 'VALUE'})`);
      value = next;
      i++;
    }
    if (spec.kind === 'string') {
      out.values.set(spec.name, value);
    } else {
      const list = out.lists.get(spec.name) ?? [];
      if (spec.kind === 'repeat') list.push(value);
      else list.push(...value.split(',').filter((v) => v !== ''));
      out.lists.set(spec.name, list);
    }
  }
  return out;
}

/** An integer option value in [min, max]; decimal or 0x-hex. */
export function intValue(text: string, name: string, min: number, max: number): number {
  const n = /^0x[0-9a-f]+$/i.test(text) ? parseInt(text, 16) : /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be an integer from ${min} to ${max} (decimal or 0x-hex), not ${JSON.stringify(text)}`);
  }
  return n;
}

export function formatOptions(specs: readonly OptionSpec[]): string {
  return specs
    .map((s) => {
      const left = `${s.short ? `-${s.short}, ` : '    '}--${s.name}${s.kind === 'flag' ? '' : ` ${s.value ?? 'VALUE'}`}`;
      return `  ${left.padEnd(30)} ${s.help}`;
    })
    .join('\n');
}
