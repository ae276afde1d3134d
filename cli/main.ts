/**
 * The `roce` command. Each subcommand lives in its own module; this file only
 * dispatches and turns a UsageError, or a file that could not be read or
 * written, into a one-line message and exit status 2.
 * `main` is the process's composition root: it applies ROCE_NO_NATIVE and
 * makes the context every command gets (the environment, the memory testbed,
 * whether standard input is a terminal).
 */
import { UsageError } from './args';
import { fileErrorCode, fileErrorText } from '../base/file-error';
import { type Command, type CommandContext, commandContext } from './command';
import { applyNativeSwitch } from '../apps/host/native-switch';
import { tierUpEarly } from '../apps/host/jit-tier-up';
import { type Output, processOutput } from './output';
import type * as DemoCommandModule from './demo-command';
import type * as DecodeCommandModule from './decode-command';
import type * as AnalyzeCommandModule from './analyze-command';
import type * as LadderCommandModule from './ladder-command';
import type * as PlotCommandModule from './plot-command';
import type * as DevicesCommandModule from './devices-command';
import type * as PerftestCommandModule from './perftest-command';
import type * as PingpongCommandModule from './pingpong-command';
import type * as RpingCommandModule from './rping-command';
import type * as AttackCommandModule from './attack-command';
import type * as AuditCommandModule from './audit-command';
import type * as CmatoseCommandModule from './cmatose-command';
import type * as NvmfCommandModule from './nvmf-command';
import type * as RdmaServerCommandModule from './rdma-server-command';
import type * as RdmaClientCommandModule from './rdma-client-command';
import type * as UdaddyCommandModule from './udaddy-command';
import type * as VerbsCheckCommandModule from './verbs-check-command';
import type * as SimCommandModule from './sim-command';
import type * as ReplayCommandModule from './replay-command';
import type * as ProbeCommandModule from './probe-command';

// Each command's module is loaded when it runs, not at start-up: loading all of them cost every
// command about 50 ms (the simulator, the stack and the drivers for `roce decode` too).
// `live`: the command carries live traffic, so its process optimises early (apps/host/jit-tier-up.ts).
// `tool`: the real tool the command stands in for, whose command line it takes as the tool's users
// type it, its one-letter options included. Elsewhere a letter means one thing in every command
// (`-c` a count, `-r` the capture to read, `-o` the output file...; test/cli/capture-options.test.ts holds them to it).
const COMMANDS: Readonly<Record<string, { help: string; load: () => Command; live?: true; tool?: string }>> = {
  demo: {
    help: 'two stacks over a lossy in-memory link, every byte verified (run `roce demo -h`)',
    load: () => (require('./demo-command') as typeof DemoCommandModule).demoCommand,
  },
  decode: {
    help: 'decode a pcap/pcapng capture of RoCE traffic (run `roce decode -h`)',
    load: () => (require('./decode-command') as typeof DecodeCommandModule).decodeCommand,
  },
  analyze: {
    help: 'transport analysis of a capture: flags, loss recovery, rule checks (run `roce analyze -h`)',
    load: () => (require('./analyze-command') as typeof AnalyzeCommandModule).analyzeCommand,
  },
  ladder: {
    help: 'sequence diagram of one conversation as HTML or SVG (run `roce ladder -h`)',
    load: () => (require('./ladder-command') as typeof LadderCommandModule).ladderCommand,
  },
  plot: {
    help: 'PSN-versus-time graph per QP as SVG; --rate and --sim: rates, ECN marks, CNPs and queues (run `roce plot -h`)',
    load: () => (require('./plot-command') as typeof PlotCommandModule).plotCommand,
  },
  devices: {
    help: 'the interfaces RoCE can run on: driver modes, MTU, active IB MTU, GID table (run `roce devices -h`)',
    load: () => (require('./devices-command') as typeof DevicesCommandModule).devicesCommand,
  },
  perftest: {
    help: 'ib_write/read/send/atomic_bw and _lat benchmarks; either end may be the real perftest (run `roce perftest -h`)',
    load: () => (require('./perftest-command') as typeof PerftestCommandModule).perftestCommand,
    live: true,
    tool: 'perftest',
  },
  pingpong: {
    help: "ibv_rc_pingpong's exchange and traffic; either end may be the real tool (run `roce pingpong -h`)",
    load: () => (require('./pingpong-command') as typeof PingpongCommandModule).pingpongCommand,
    live: true,
    tool: 'ibv_rc_pingpong',
  },
  rping: {
    help: "librdmacm's rping: an RDMA CM connection, RDMA READ and WRITE pings; either end may be the real rping (run `roce rping -h`)",
    load: () => (require('./rping-command') as typeof RpingCommandModule).rpingCommand,
    live: true,
    tool: 'rping',
  },
  attack: {
    help: 'hostile RoCE frames toward a live QP: wrong keys, bad PSNs, ghost ACKs, a flood (run `roce attack -h`)',
    load: () => (require('./attack-command') as typeof AttackCommandModule).attackCommand,
    live: true,
  },
  audit: {
    help: 'how guessable the R_Keys, addresses, QP numbers and starting PSNs a perftest peer hands out are (run `roce audit -h`)',
    load: () => (require('./audit-command') as typeof AuditCommandModule).auditCommand,
    live: true,
  },
  cmatose: {
    help: "librdmacm's ucmatose: -c RDMA CM connections, SENDs each way, disconnects; either end may be the real ucmatose (run `roce cmatose -h`)",
    load: () => (require('./cmatose-command') as typeof CmatoseCommandModule).cmatoseCommand,
    live: true,
    tool: 'ucmatose',
  },
  nvmf: {
    help: 'NVMe over Fabrics over RDMA: `nvmf target` serves a RAM namespace to Linux nvme-cli, `nvmf host` writes and reads back through a target (run `roce nvmf -h`)',
    load: () => (require('./nvmf-command') as typeof NvmfCommandModule).nvmfCommand,
    live: true,
  },
  'rdma-server': {
    help: "librdmacm's rdma_server: one RDMA CM connection, 16 bytes each way; the client may be the real rdma_client (run `roce rdma-server -h`)",
    load: () => (require('./rdma-server-command') as typeof RdmaServerCommandModule).rdmaServerCommand,
    live: true,
    tool: 'rdma_server',
  },
  'rdma-client': {
    help: "librdmacm's rdma_client: the other end of rdma_server, which may be the real one (run `roce rdma-client -h`)",
    load: () => (require('./rdma-client-command') as typeof RdmaClientCommandModule).rdmaClientCommand,
    live: true,
    tool: 'rdma_client',
  },
  udaddy: {
    help: "librdmacm's udaddy: UD datagrams to a QP found by SIDR (UDP port space); either end may be the real udaddy (run `roce udaddy -h`)",
    load: () => (require('./udaddy-command') as typeof UdaddyCommandModule).udaddyCommand,
    live: true,
    tool: 'udaddy',
  },
  'verbs-check': {
    help: 'memory windows, SEND with invalidate, LOCAL_INV, FLUSH and ATOMIC WRITE and their failures against scripts/rxe-lab/verbs-check.c on rxe (run `roce verbs-check -h`)',
    load: () => (require('./verbs-check-command') as typeof VerbsCheckCommandModule).verbsCheckCommand,
    live: true,
    tool: 'verbs-check',
  },
  sim: {
    help: 'a congestion scenario in simulation: hosts around one switch, DCQCN, ECN marking, PFC (run `roce sim -h`)',
    load: () => (require('./sim-command') as typeof SimCommandModule).simCommand,
  },
  replay: {
    help: 'replay one side of captured RC conversations into the stack and compare (run `roce replay -h`)',
    load: () => (require('./replay-command') as typeof ReplayCommandModule).replayCommand,
  },
  probe: {
    help: 'Lumina-style scenarios against a device under test: NAK, retransmission, timeout and RNR behaviour measured and judged (run `roce probe -h`)',
    load: () => (require('./probe-command') as typeof ProbeCommandModule).probeCommand,
  },
};

const USAGE = `usage: roce COMMAND [options]

commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(11)} ${c.help}`)
  .join('\n')}
  help       this text
  version    print the version`;

/** Runs `roce ARGV`; `ctx` defaults to one of its own on this process's environment. */
export async function run(argv: readonly string[], out: Output, ctx: CommandContext = commandContext(process.env)): Promise<number> {
  const [cmd, ...rest] = argv;
  try {
    if (cmd === undefined || cmd === 'help' || cmd === '-h' || cmd === '--help') {
      out.stdout(`${USAGE}\n`);
      return cmd === undefined ? 2 : 0;
    }
    if (cmd === 'version' || cmd === '--version') {
      out.stdout(`${(require('../../package.json') as { version: string }).version}\n`);
      return 0;
    }
    const c = commandNamed(cmd);
    if (c === undefined) throw new UsageError(`unknown command ${JSON.stringify(cmd)} (commands: ${Object.keys(COMMANDS).join(', ')})`);
    try {
      return await c.load()(rest, out, ctx);
    } catch (e) {
      // Each command says what it cannot read or write itself; this is the net under them all.
      const code = fileErrorCode(e);
      if (code === null) throw e;
      const { path: file, syscall } = e as NodeJS.ErrnoException;
      out.stderr(`roce ${cmd}: ${file ?? `${syscall ?? 'a file operation'} failed`}: ${fileErrorText(e)}\n`);
      return 2;
    }
  } catch (e) {
    if (e instanceof UsageError) {
      // `roce analyze: unknown option --foo (roce analyze -h)`: the command, and where its options are.
      const known = cmd !== undefined && commandNamed(cmd) !== undefined;
      out.stderr(known ? `roce ${cmd}: ${e.message} (roce ${cmd} -h)\n` : `roce: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

/** The command `name`, or undefined: only COMMANDS' own entries (`__proto__` and `toString` are not commands). */
function commandNamed(name: string): (typeof COMMANDS)[string] | undefined {
  return Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
}

/** The names of the `roce` commands, in the order `roce help` lists them. */
export function commandNames(): string[] {
  return Object.keys(COMMANDS);
}

/** The real tool `roce NAME` stands in for, whose one-letter options it takes; null for a command of roce's own. */
export function toolOf(name: string): string | null {
  return commandNamed(name)?.tool ?? null;
}

/** Whether `roce NAME` carries live traffic (its process then optimises early). */
export function isLiveCommand(name: string): boolean {
  return commandNamed(name)?.live === true;
}

export async function main(argv: readonly string[]): Promise<number> {
  applyNativeSwitch(process.env);
  if (argv[0] !== undefined && isLiveCommand(argv[0])) tierUpEarly();
  const out = processOutput();
  let status: number;
  try {
    status = await run(argv, out, commandContext(process.env));
  } finally {
    await out.flush();
  }
  // Standard output could not be written (a full disk): said once, not as a stack trace.
  const failed = out.failure();
  if (failed !== null) {
    process.stderr.write(
      `roce${argv[0] === undefined || commandNamed(argv[0]) === undefined ? '' : ` ${argv[0]}`}: cannot write standard output: ${fileErrorText(failed, true)}\n`,
    );
    return 2;
  }
  return status;
}
