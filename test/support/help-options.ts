/**
 * The option lines of a `roce` command's help, as cli/args.ts formatOptions writes them
 * (`  -x, --name VALUE   help`, or four spaces where a command gives no letter).
 */
export interface HelpOption {
  /** The one-letter alias, without the dash; null for none. */
  short: string | null;
  /** The long name, without the dashes. */
  name: string;
  /** The value's placeholder; null for a flag. */
  value: string | null;
}

/** Each option line of `help`, in the order the help lists them. */
export function helpOptions(help: string): HelpOption[] {
  const out: HelpOption[] = [];
  for (const line of help.split('\n')) {
    const m = /^ {2}(?:-(\w), | {4})--([\w-]+)(?: (\S+))? /.exec(line);
    if (m !== null) out.push({ short: m[1] ?? null, name: m[2] ?? '', value: m[3] ?? null });
  }
  return out;
}
