/**
 * `roce probe --driver xdp|packet`: a scenario against a live DUT running the stock perftest tool
 * (apps/probe/live-runner.ts). Opens the host interface with the probe driver inside the device's
 * driver chain, prints the DUT's command line (a server waits for the DUT's tool to connect), runs,
 * and prints the figures with where the DUT's QP attributes come from.
 */
import { RealClock } from '../base/clock';
import { failureOf } from './failure';
import type { CommandContext } from './command';
import type { OptionSpec } from './args';
import type { Output } from './output';
import { type HostDevice, type HostDriverKind, openHostDevice } from '../apps/host/host-device';
import { hostOptionsFromEnv } from '../apps/host/environment';
import type { FigureKind } from '../apps/probe/measurements';
import { type LiveRunInfo, runLive } from '../apps/probe/live-runner';
import { runInMemory } from '../apps/probe/memory-runner';
import { ProbeDriver } from '../apps/probe/probe-driver';
import { ProbeCapture } from '../apps/probe/probe-capture';
import { OUTPUT_FILE_STATUS } from './output-file';
import { type ProbeOutputPaths, captureLine, writeProbeOutputs } from './probe-outputs';
import { ProbeError, ProbeErrorCode } from '../apps/probe/probe-error';
import { probeFailures, probeText } from '../apps/probe/probe-report';
import { DutRole, type ProbeScenario, dutIsServer } from '../apps/probe/scenario';
import type { DoctorCheck } from '../apps/doctor/doctor-checks';
import { preRunBoundMs, preRunChecks, preRunRefusal } from '../apps/doctor/pre-run';

/** The options of a live run (with --driver xdp or packet), named as `roce perftest` names them. */
export const PROBE_LIVE_OPTIONS: readonly OptionSpec[] = [
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'live run: the interface this stack runs RoCE on' },
  { name: 'dut', kind: 'string', value: 'IP', help: "live run: the DUT's address (needed when the DUT is the responder: its tool is the server)" },
  { name: 'gid-index', kind: 'string', value: 'N', help: 'live run: our source GID index (default: the first IPv4-mapped GID)' },
  {
    name: 'port',
    short: 'p',
    kind: 'string',
    value: 'PORT',
    help: "live run: TCP port of perftest's exchange (default 18515), or rping's RDMA CM port (default 7174)",
  },
  { name: 'timeout', kind: 'string', value: 'SECONDS', help: "live run, DUT requester: how long to wait for the DUT's tool to connect (default 300)" },
  {
    name: 'rdma_cm',
    short: 'R',
    kind: 'flag',
    help: "live run: the DUT's tool runs with -R (perftest's RDMA CM exchange and QP connection, one QP); the scenario's max-retransmit-retry reaches the DUT's QP through the CM (--retry_count when it is the client)",
  },
  {
    name: 'no-doctor',
    kind: 'flag',
    help: "live run: skip the checks made before any traffic (--doctor's interface, MTU against the scenario's path MTU, GIDs, and with --dut the neighbour and RoCE on UDP 4791), which end the run when one finds a problem",
  },
];

export interface ProbeLiveArgs {
  scenario: ProbeScenario;
  source: string;
  driver: typeof HostDriverKind.XDP | typeof HostDriverKind.PACKET;
  ifname: string;
  dut: string | undefined;
  gidIndex: number | undefined;
  port: number | undefined;
  timeoutS: number;
  /** -R: perftest's RDMA CM exchange. */
  rdmaCm: boolean;
  seed: number;
  json: boolean;
  failOn: ReadonlySet<FigureKind>;
  /** --pcap and --html. */
  paths: ProbeOutputPaths;
  /** --no-doctor: no checks before the run. */
  noDoctor: boolean;
}

/**
 * The checks before the run. Bounded by the checks' own timers: a check that hangs past them (a
 * native call that never returns) ends the run too (ROCE_ERR_PROBE_DOCTOR), rather than keeping
 * the user waiting with no word.
 */
async function checksBeforeRun(a: ProbeLiveArgs): Promise<DoctorCheck[]> {
  const boundMs = preRunBoundMs();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((res) => {
    timer = setTimeout(() => res(null), boundMs);
  });
  // The RoCE-port check waits for a DUT server that should be up already, as perftest's responder is;
  // with rping the server is the requester (rping -s), and it is given the role of one.
  const dutRole = dutIsServer(a.scenario.dut) ? DutRole.RESPONDER : DutRole.REQUESTER;
  const checks = await Promise.race([preRunChecks({ ifname: a.ifname, dut: a.dut, mtu: a.scenario.traffic.mtu, dutRole }), late]).finally(() =>
    clearTimeout(timer),
  );
  if (checks === null)
    throw new ProbeError(
      ProbeErrorCode.DOCTOR,
      `the checks before the run did not end within ${boundMs} ms (roce probe --doctor makes them alone; --no-doctor skips them)`,
    );
  return checks;
}

function liveLines(l: LiveRunInfo): string[] {
  const lines = [
    `DUT's QP attributes: ${l.dutAttributes.map((a) => `${a.name} ${a.value} (${a.source})`).join('; ')}`,
    `our QPs: ${l.qps.map((q, i) => `QP ${i}: ours 0x${q.ourQpn.toString(16)}, DUT's 0x${q.dutQpn.toString(16)}, first request PSN 0x${q.requestStartPsn.toString(16)}`).join('; ')}`,
  ];
  const ours = l.ourCompletions.map((c, i) => (c.length === 0 ? null : `QP ${i}: ${c.join(', ')}`)).filter((x): x is string => x !== null);
  if (ours.length > 0) lines.push(`our work completions: ${ours.join('; ')}`);
  for (const w of l.warnings) lines.push(`warning: ${w}`);
  return lines;
}

/** Runs the live probe; the exit status (0 ran, 1 a --fail-on figure failed or the run did not complete). */
export async function runProbeLive(out: Output, ctx: CommandContext, a: ProbeLiveArgs): Promise<number> {
  let host: HostDevice | null = null;
  let probe: ProbeDriver | null = null;
  // The checks made before the run, for the JSON (null with --no-doctor).
  let doctor: DoctorCheck[] | null = null;
  try {
    if (!a.noDoctor) {
      doctor = await checksBeforeRun(a);
      // A problem ends the run here, before any traffic: each problem named with its fix.
      const refusal = preRunRefusal(doctor);
      if (refusal !== null) throw new ProbeError(ProbeErrorCode.DOCTOR, refusal);
    }
    // The scenario once on the in-memory link first: the engine's code the run uses (responder,
    // requester, completer, decoder) is compiled by then, so the DUT's first frames are not
    // answered late by the compiler (milliseconds per function on a busy host).
    try {
      runInMemory(a.scenario);
    } catch {
      // a scenario the memory runner refuses is refused again, with its reason, by the live runner
    }
    // The capture's time of device clock 0 is the wall clock when the probe driver's clock starts.
    const capture = new ProbeCapture(BigInt(Date.now()) * 1_000_000n);
    host = await openHostDevice(a.ifname, a.driver, {
      ...hostOptionsFromEnv(ctx.env),
      wrapDriver: (inner) => {
        const clock = new RealClock();
        // Kernel receive stamps (AF_PACKET) on the probe's clock; drivers without them give the poll's time.
        const p = new ProbeDriver(inner, clock, (ns) => clock.fromMonotonicNs(ns));
        p.onWire = capture.onWire;
        probe = p;
        return p;
      },
    });
    if (probe === null) throw new ProbeError(ProbeErrorCode.RUN, 'the host device was opened without the probe driver');
    const h = host;
    const run = await runLive(
      a.scenario,
      { device: h.device, probe, driver: a.driver, idleWait: h.idleWait, ensureNeighbor: (gid) => h.ensureNeighbor(gid) },
      {
        ...(a.dut !== undefined ? { dut: a.dut } : {}),
        ...(a.port !== undefined ? { port: a.port } : {}),
        ...(a.gidIndex !== undefined ? { gidIndex: a.gidIndex } : {}),
        connectTimeoutMs: a.timeoutS * 1000,
        seed: a.seed,
        rdmaCm: a.rdmaCm,
        onListening: (port, command) => {
          if (!a.json) {
            out.stdout(`roce probe: waiting for the DUT on port ${port}; run on it: ${command}\n`);
            // Said now, not with the report: the user (or a script) runs the DUT's command on reading it.
            void out.flush();
          }
        },
      },
    );
    // Let the last ACKs leave before the device goes away.
    await new Promise((res) => setTimeout(res, 100));
    const failures = probeFailures(run.result, a.failOn);
    const ok = failures.length === 0 && run.live.error === null;
    const written = writeProbeOutputs(a.paths, { result: run.result, scenario: a.scenario, capture, source: a.source }, out);
    if (written === 'failed') return OUTPUT_FILE_STATUS;
    if (a.json)
      out.stdout(
        `${JSON.stringify({ ok, source: a.source, ...run.result, live: run.live, doctor, ...(written === null ? {} : { pcap: written }), failures })}\n`,
      );
    else {
      if (run.live.dutIsServer) out.stdout(`DUT command: ${run.live.dutCommand}\n`);
      out.stdout(probeText(run.result));
      out.stdout(`${liveLines(run.live).join('\n')}\n`);
      if (written !== null) out.stdout(captureLine(written));
      for (const f of failures) out.stdout(`FAIL ${f}\n`);
    }
    if (run.live.error !== null) out.stderr(`roce probe: ${a.source}: the run did not complete: ${run.live.error}\n`);
    return ok ? 0 : 1;
  } catch (e) {
    const f = failureOf(e);
    if (a.json) out.stdout(`${JSON.stringify({ ok: false, ...f, ...(doctor === null ? {} : { doctor }) })}\n`);
    out.stderr(`roce probe: ${a.source}: ${f.error}\n`);
    return 1;
  } finally {
    host?.close();
  }
}
