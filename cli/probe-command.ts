/**
 * `roce probe`: test scenarios in the style of Lumina against a device under test, with this stack
 * as its peer on the wire making every event happen (apps/probe/). The DUT is a second roce-ts
 * device on the in-memory link (--driver memory), or a live host running the stock perftest tool
 * behind a host interface (--driver xdp|packet, cli/probe-live.ts).
 */
import * as fs from 'node:fs';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { type CommandContext, parseCommand } from './command';
import { PROBE_LIVE_OPTIONS, runProbeLive } from './probe-live';
import { pathMtuOption, runProbeDoctor } from './probe-doctor';
import { HostDriverKind } from '../apps/host/host-device';
import type { Output } from './output';
import { BUNDLED_SCENARIOS, bundledScenario } from '../apps/probe/bundled-scenarios';
import { FIGURE_KINDS } from '../apps/probe/measurements';
import { runInMemory } from '../apps/probe/memory-runner';
import { ProbeError, ProbeErrorCode } from '../apps/probe/probe-error';
import { FAIL_ON_ANY, parseProbeFailOn, probeFailures, probeText } from '../apps/probe/probe-report';
import { ProbeCapture } from '../apps/probe/probe-capture';
import { OUTPUT_FILE_STATUS } from './output-file';
import { captureLine, probeOutputsWritable, writeProbeOutputs } from './probe-outputs';
import { type ProbeScenario, dutIsServer, parseScenario } from '../apps/probe/scenario';

export const PROBE_OPTIONS: readonly OptionSpec[] = [
  { name: 'scenario', kind: 'string', value: 'NAME', help: 'run a bundled scenario (see --list) instead of a FILE' },
  { name: 'list', kind: 'flag', help: 'list the bundled scenarios and what each measures' },
  { name: 'show', kind: 'flag', help: "print the scenario's YAML (with --scenario: the bundled text, to copy and edit) instead of running it" },
  {
    name: 'driver',
    kind: 'string',
    value: 'KIND',
    help: 'where the DUT is: memory (default: a second roce-ts on the in-memory link), or xdp or packet (a live DUT running the stock tool, reached through --dev with AF_XDP or AF_PACKET)',
  },
  ...PROBE_LIVE_OPTIONS,
  { name: 'latency-us', kind: 'string', value: 'N', help: 'one-way delay of the in-memory link, µs (default 2)' },
  { name: 'seed', kind: 'string', value: 'N', help: "seed of the devices' QP numbers and start PSNs (default 1)" },
  { name: 'json', kind: 'flag', help: 'print one JSON object (the figures, timestamps, frames) instead of the table' },
  {
    name: 'pcap',
    kind: 'string',
    value: 'FILE',
    help: "write the run's frames to FILE (pcap, ns): the DUT's NIC's view, stamped with the figures' times (roce analyze --capture-point host:DUT-IP)",
  },
  {
    name: 'html',
    kind: 'string',
    value: 'FILE',
    help: 'also write the report as one self-contained HTML page: the table, the details, and a ladder of each figure with the event marked',
  },
  { name: 'fail-on', kind: 'list', value: 'KINDS', help: `exit 1 when a figure of these kinds fails: ${FAIL_ON_ANY} or ${FIGURE_KINDS.join(', ')}` },
  {
    name: 'doctor',
    kind: 'flag',
    help: "instead of a run: check --dev's configuration (up, MTU, GIDs) and, with --dut, the DUT's neighbour entry and whether it answers UDP 4791 with ICMP unreachable; ECN settings",
  },
  { name: 'mtu', kind: 'string', value: 'N', help: "with --doctor: the path MTU to check the interface's MTU against (default: the scenario's, else 1024)" },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const PROBE_USAGE = `usage: roce probe [options] SCENARIO.yml
       roce probe [options] --scenario NAME
       roce probe --list
       roce probe --doctor --dev IFACE [--dut IP] [--mtu N]

Runs a test scenario against a device under test (DUT): this stack is the DUT's
peer (the other end of its ib_write_bw, ib_read_bw or ib_send_bw) and makes the
scenario's events happen on the wire: it drops the DUT's frames, skips its own
PSNs, withholds its ACKs, answers with RNR NAKs, drops its READ responses. Then
it measures what the DUT did from its own timestamps: NAK latency and NAKs per
gap, retransmission after a NAK and its first PSN, timeout retransmission
against 4.096 us x 2^timeout, retries against retry_cnt, RNR waits against the
NAK's timer, READ retries from the middle of a response. Each figure has a
verdict citing its IBTA clause. Scenario format: docs/probe.md.

The DUT is a second roce-ts on the in-memory link (--driver memory), or a live
host running the tool (--driver xdp or packet, --dev IFACE): when the DUT is
the requester this stack is the tool's server, prints the DUT's command line
and waits for it; when the DUT is the responder this stack connects to its
server at --dut IP (rping the other way round: rping -s, its server, is the
requester of its READs and WRITEs). Before any traffic a live run makes the
checks of --doctor that apply (the interface is up, its MTU carries the
scenario's path MTU, a GID, and with --dut the DUT's neighbour entry and RoCE
on its UDP 4791) and ends with status 1 naming each problem and its fix;
--no-doctor skips them.

${formatOptions(PROBE_OPTIONS)}

--pcap FILE writes every frame that was on the wire, as this stack's driver
saw it: its own after the events (a frame an event kept off the wire is not
there), the DUT's before them (a frame a drop event threw away is there). That
is what the DUT sent and received, so read it as a capture at the DUT's NIC:
roce analyze --capture-point host:DUT-IP FILE (the report says the address).
--html FILE writes the report as one page with a ladder of each figure's
frames (the event's, the DUT's reaction, a few around), the event marked.

Exit status: 0 when the run was made (and no figure named by --fail-on failed),
1 when a --fail-on figure failed or the run could not be made, 2 on a usage
error, a scenario that cannot be read (one line naming the file and line) or
an output file that cannot be written.`;

function loadScenario(args: { file: string | undefined; name: string | undefined }): { scenario: ProbeScenario; yaml: string; source: string } {
  if (args.name !== undefined) {
    if (args.file !== undefined) throw new UsageError('give a SCENARIO file or --scenario NAME, not both');
    const b = bundledScenario(args.name);
    if (b === undefined)
      throw new UsageError(`--scenario ${JSON.stringify(args.name)} names no bundled scenario (${BUNDLED_SCENARIOS.map((s) => s.name).join(', ')})`);
    return { scenario: parseScenario(b.yaml), yaml: b.yaml, source: `bundled ${b.name}` };
  }
  if (args.file === undefined) throw new UsageError('give a SCENARIO file, --scenario NAME or --list');
  const yaml = fs.readFileSync(args.file, 'utf8');
  return { scenario: parseScenario(yaml), yaml, source: args.file };
}

export async function probeCommand(argv: readonly string[], out: Output, ctx?: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'probe', options: PROBE_OPTIONS, usage: PROBE_USAGE, operands: 'optional FILE' });
  if (args === null) return 0;
  const json = args.flags.has('json');
  const latencyUs = intValue(args.values.get('latency-us') ?? '2', 'latency-us', 0, 1_000_000);
  const seed = intValue(args.values.get('seed') ?? '1', 'seed', 0, 0x7fffffff);
  const driver = args.values.get('driver') ?? HostDriverKind.MEMORY;
  if (driver !== HostDriverKind.MEMORY && driver !== HostDriverKind.XDP && driver !== HostDriverKind.PACKET)
    throw new UsageError(`--driver must be memory, xdp or packet, not ${JSON.stringify(driver)}`);
  const liveOnly = PROBE_LIVE_OPTIONS.map((o) => o.name).filter((n) => args.values.has(n) || args.flags.has(n));
  if (driver === HostDriverKind.MEMORY && liveOnly.length > 0 && !args.flags.has('doctor'))
    throw new UsageError(`--${liveOnly[0]} is for a live DUT (--driver xdp or packet)`);
  if (driver !== HostDriverKind.MEMORY && args.values.has('latency-us'))
    throw new UsageError('--latency-us sets the in-memory link; a live run has the real one');
  const failOn = parseProbeFailOn(args.lists.get('fail-on') ?? []);
  if (failOn.unknown.length > 0) throw new UsageError(`--fail-on: unknown ${failOn.unknown.join(', ')} (${FAIL_ON_ANY}, ${FIGURE_KINDS.join(', ')})`);

  if (args.flags.has('doctor')) {
    if (args.flags.has('no-doctor')) throw new UsageError('--doctor makes the checks alone; --no-doctor skips them before a live run: give one');
    // The scenario, when given, says the path MTU to check; nothing else of it applies.
    let scenarioMtu: number | undefined;
    if (args.positionals.length > 0 || args.values.has('scenario')) {
      try {
        scenarioMtu = loadScenario({ file: args.positionals[0], name: args.values.get('scenario') }).scenario.traffic.mtu;
      } catch (e) {
        if (!(e instanceof ProbeError)) throw e;
        out.stderr(`roce probe: ${args.positionals[0] ?? args.values.get('scenario') ?? 'scenario'}: ${e.message}\n`);
        return 2;
      }
    }
    return runProbeDoctor(out, {
      ifname: args.values.get('dev'),
      dut: args.values.get('dut'),
      mtu: pathMtuOption(args.values.get('mtu')) ?? scenarioMtu,
      json,
    });
  }
  if (args.values.has('mtu')) throw new UsageError("--mtu goes with --doctor (a scenario sets its run's path MTU)");

  if (args.flags.has('list')) {
    if (args.positionals.length > 0 || args.values.has('scenario')) throw new UsageError('--list takes no scenario');
    if (json) out.stdout(`${JSON.stringify(BUNDLED_SCENARIOS.map((s) => ({ name: s.name, summary: s.summary })))}\n`);
    else {
      const w = Math.max(...BUNDLED_SCENARIOS.map((s) => s.name.length));
      out.stdout(`${BUNDLED_SCENARIOS.map((s) => `${s.name.padEnd(w)}  ${s.summary}`).join('\n')}\n`);
    }
    return 0;
  }

  let loaded: ReturnType<typeof loadScenario>;
  try {
    loaded = loadScenario({ file: args.positionals[0], name: args.values.get('scenario') });
  } catch (e) {
    // A scenario that cannot be read is the user's input, as a bad option is: one line, status 2.
    if (e instanceof ProbeError) {
      out.stderr(`roce probe: ${args.positionals[0] ?? args.values.get('scenario') ?? 'scenario'}: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (args.flags.has('show')) {
    out.stdout(loaded.yaml.endsWith('\n') ? loaded.yaml : `${loaded.yaml}\n`);
    return 0;
  }

  const paths = { pcap: args.values.get('pcap'), html: args.values.get('html') };
  if (!probeOutputsWritable(paths, out)) return OUTPUT_FILE_STATUS;

  if (driver !== HostDriverKind.MEMORY) {
    const ifname = args.values.get('dev');
    if (ifname === undefined) throw new UsageError(`--driver ${driver} needs --dev IFACE (the interface this stack runs RoCE on)`);
    const dut = args.values.get('dut');
    if (dutIsServer(loaded.scenario.dut) && dut === undefined)
      throw new UsageError(
        loaded.scenario.dut.tool === 'rping'
          ? 'the DUT is the requester (rping -s, the server): give its address with --dut IP'
          : 'the DUT is the responder (its tool is the server): give its address with --dut IP',
      );
    const num = (name: string, min: number, max: number): number | undefined => {
      const v = args.values.get(name);
      return v === undefined ? undefined : intValue(v, name, min, max);
    };
    if (ctx === undefined) throw new UsageError('a live run needs the command context (the environment)');
    return runProbeLive(out, ctx, {
      scenario: loaded.scenario,
      source: loaded.source,
      driver,
      ifname,
      dut,
      gidIndex: num('gid-index', 0, 255),
      port: num('port', 1, 65535),
      timeoutS: num('timeout', 1, 86_400) ?? 300,
      rdmaCm: args.flags.has('rdma_cm'),
      seed,
      json,
      failOn: failOn.kinds,
      paths,
      noDoctor: args.flags.has('no-doctor'),
    });
  }

  try {
    const capture = new ProbeCapture();
    const result = runInMemory(loaded.scenario, { latencyNs: latencyUs * 1000, seed, onWire: capture.onWire });
    const failures = probeFailures(result, failOn.kinds);
    const written = writeProbeOutputs(paths, { result, scenario: loaded.scenario, capture, source: loaded.source }, out);
    if (written === 'failed') return OUTPUT_FILE_STATUS;
    if (json)
      out.stdout(
        `${JSON.stringify({ ok: failures.length === 0, source: loaded.source, ...result, ...(written === null ? {} : { pcap: written }), failures })}\n`,
      );
    else {
      out.stdout(probeText(result));
      if (written !== null) out.stdout(captureLine(written));
      for (const f of failures) out.stdout(`FAIL ${f}\n`);
    }
    return failures.length === 0 ? 0 : 1;
  } catch (e) {
    if (!(e instanceof ProbeError) || e.code !== ProbeErrorCode.RUN) throw e;
    if (json) out.stdout(`${JSON.stringify({ ok: false, code: e.code, error: e.message })}\n`);
    else out.stderr(`roce probe: ${loaded.source}: ${e.message}\n`);
    return 1;
  }
}
