/**
 * What every `roce` command shares: its signature, the context the process
 * hands it, and its prologue (parse the options against the command's table,
 * print the usage on -h/--help, check the positional operands).
 */
import { isatty } from 'node:tty';
import { type OptionSpec, type ParsedArgs, UsageError, parseArgs } from './args';
import type { Output } from './output';
import type { Environment } from '../apps/host/native-switch';
import type { MemoryTestbed } from '../apps/host/memory-testbed';
import type * as MemoryTestbedModule from '../apps/host/memory-testbed';
import type * as EnvironmentModule from '../apps/host/environment';

/** What the process hands every command (cli/main.ts makes one; a test may make its own). */
export interface CommandContext {
  /** The environment; a command that opens a host device reads its settings from it (apps/host/environment.ts). */
  readonly env: Environment;
  /** The in-memory link whose two ends `--driver memory` opens, shared by the commands run in this process. */
  readonly testbed: MemoryTestbed;
  /**
   * Whether standard input is a terminal. A capture command given no FILE reads standard input
   * unless it is one (someone would have to type the capture): then it prints its usage instead.
   */
  readonly stdinIsTerminal: boolean;
}

/**
 * A context on `env` with a testbed of its own, made when a command first asks for it: the testbed
 * loads the stack and the simulator, which cost every other command (`roce decode`) start-up time.
 */
export function commandContext(env: Environment, stdinIsTerminal: boolean = isatty(0)): CommandContext {
  let testbed: MemoryTestbed | null = null;
  return {
    env,
    stdinIsTerminal,
    get testbed(): MemoryTestbed {
      // A malformed ROCE_ALLOCATION fails the command that opens an end, as for a host device.
      // The module is named first: tsc drops the parentheses of `new (require(...) as T).C(...)`,
      // and `new require(...).C(...)` calls the class without `new`.
      const m = require('../apps/host/memory-testbed') as typeof MemoryTestbedModule;
      testbed ??= new m.MemoryTestbed((require('../apps/host/environment') as typeof EnvironmentModule).allocationFromEnv(env));
      return testbed;
    },
  };
}

/** A command: its arguments (after the command's name) in, its exit status out. */
export type Command = (argv: readonly string[], out: Output, ctx: CommandContext) => Promise<number>;

/**
 * The positional operands a command takes: none; at most one FILE; exactly one FILE; or any
 * (the command checks them itself).
 */
export type Operands = 'none' | 'optional FILE' | 'FILE' | 'any';

export interface CommandSyntax {
  /** The command's name, as typed after `roce`. */
  name: string;
  options: readonly OptionSpec[];
  usage: string;
  operands: Operands;
}

/**
 * The prologue of a command: its options parsed (an unknown option, or a value missing, is a
 * UsageError), its usage printed on -h/--help (then null: the command exits with status 0), and its
 * positional operands checked against `syntax.operands`.
 */
export function parseCommand(argv: readonly string[], out: Output, syntax: CommandSyntax): ParsedArgs | null {
  const args = parseArgs(argv, syntax.options);
  if (args.flags.has('help')) {
    out.stdout(`${syntax.usage}\n`);
    return null;
  }
  const p = args.positionals;
  switch (syntax.operands) {
    case 'none':
      if (p.length > 0) throw new UsageError(`${syntax.name} takes no positional arguments, got ${p.join(' ')}`);
      break;
    case 'optional FILE':
      if (p.length > 1) throw new UsageError(`${syntax.name} takes one FILE, got ${p.length}: ${p.join(' ')}`);
      break;
    case 'FILE':
      if (p.length !== 1) throw new UsageError(`${syntax.name} takes one FILE`);
      break;
    case 'any':
      break;
  }
  return args;
}
