/**
 * The `roce` command. Each subcommand lives in its own module; this file only
 * dispatches and turns a UsageError into a one-line message and exit status 2.
 * `main` is the process's composition root: it applies ROCE_NO_NATIVE and
 * makes the context every command gets (the environment, the memory testbed).
 */
import { UsageError } from './args';
import { type Command, type CommandContext, commandContext } from './command';
import { applyNativeSwitch } from '../apps/host/environment';
import { type Output, processOutput } from './output';
import { decodeCommand } from './decode-command';
import { demoCommand } from './demo-command';
import { replayCommand } from './replay-command';
import { perftestCommand } from './perftest-command';
import { pingpongCommand } from './pingpong-command';
import { rpingCommand } from './rping-command';
import { cmatoseCommand } from './cmatose-command';
import { rdmaServerCommand } from './rdma-server-command';
import { rdmaClientCommand } from './rdma-client-command';
import { udaddyCommand } from './udaddy-command';
import { analyzeCommand } from './analyze-command';
import { ladderCommand } from './ladder-command';
import { plotCommand } from './plot-command';
import { devicesCommand } from './devices-command';
import { attackCommand } from './attack-command';
import { simCommand } from './sim-command';

const COMMANDS: Readonly<Record<string, { help: string; run: Command }>> = {
  demo: { help: 'two stacks over a lossy in-memory link, every byte verified (run `roce demo -h`)', run: demoCommand },
  decode: { help: 'decode a pcap/pcapng capture of RoCE traffic (run `roce decode -h`)', run: decodeCommand },
  analyze: { help: 'transport analysis of a capture: flags, loss recovery, rule checks (run `roce analyze -h`)', run: analyzeCommand },
  ladder: { help: 'sequence diagram of one conversation as HTML or SVG (run `roce ladder -h`)', run: ladderCommand },
  plot: { help: 'PSN-versus-time graph per QP as SVG; --rate and --sim: rates, ECN marks, CNPs and queues (run `roce plot -h`)', run: plotCommand },
  devices: { help: 'the interfaces RoCE can run on: driver modes, MTU, active IB MTU, GID table (run `roce devices -h`)', run: devicesCommand },
  perftest: { help: 'ib_write/read/send/atomic_bw and _lat benchmarks; either end may be the real perftest (run `roce perftest -h`)', run: perftestCommand },
  pingpong: { help: "ibv_rc_pingpong's exchange and traffic; either end may be the real tool (run `roce pingpong -h`)", run: pingpongCommand },
  rping: { help: "librdmacm's rping: an RDMA CM connection, RDMA READ and WRITE pings; either end may be the real rping (run `roce rping -h`)", run: rpingCommand },
  attack: { help: 'hostile RoCE frames toward a live QP: wrong keys, bad PSNs, ghost ACKs, a flood (run `roce attack -h`)', run: attackCommand },
  cmatose: { help: "librdmacm's ucmatose: -c RDMA CM connections, SENDs each way, disconnects; either end may be the real ucmatose (run `roce cmatose -h`)", run: cmatoseCommand },
  'rdma-server': { help: "librdmacm's rdma_server: one RDMA CM connection, 16 bytes each way; the client may be the real rdma_client (run `roce rdma-server -h`)", run: rdmaServerCommand },
  'rdma-client': { help: "librdmacm's rdma_client: the other end of rdma_server, which may be the real one (run `roce rdma-client -h`)", run: rdmaClientCommand },
  udaddy: { help: "librdmacm's udaddy: UD datagrams to a QP found by SIDR (UDP port space); either end may be the real udaddy (run `roce udaddy -h`)", run: udaddyCommand },
  sim: { help: 'a congestion scenario in simulation: hosts around one switch, DCQCN, ECN marking, PFC (run `roce sim -h`)', run: simCommand },
  replay: { help: 'replay one side of captured RC conversations into the stack and compare (run `roce replay -h`)', run: replayCommand },
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
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      out.stdout(`${(require('../../package.json') as { version: string }).version}\n`);
      return 0;
    }
    const c = COMMANDS[cmd];
    if (c === undefined) throw new UsageError(`unknown command ${JSON.stringify(cmd)} (commands: ${Object.keys(COMMANDS).join(', ')})`);
    return await c.run(rest, out, ctx);
  } catch (e) {
    if (e instanceof UsageError) {
      out.stderr(`roce: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

export async function main(argv: readonly string[]): Promise<number> {
  applyNativeSwitch(process.env);
  const out = processOutput();
  try {
    return await run(argv, out, commandContext(process.env));
  } finally {
    await out.flush();
  }
}
