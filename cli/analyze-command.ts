/**
 * `roce analyze [FILE]`: transport analysis of a RoCE capture: conversations,
 * messages, expert flags per frame, loss-recovery episodes, go-back-N rule
 * checks and per-flow figures. Text summary by default, one JSON document
 * with --json (keys in docs/analysis.md).
 */
import { RXE_BEHAVIOUR_IDS } from '../analysis/rxe-behaviours';
import * as os from 'node:os';
import { isatty } from 'node:tty';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { type CommandContext, parseCommand } from './command';
import type { Output } from './output';
import { BAD_INPUT_STATUS, captureInput, finishOnInterrupt, isNotACapture, readWholeInput, reportNotACapture } from './capture-input';
import {
  NO_CONVERSATION_REASON,
  captureFileOf,
  conversationChoiceOf,
  exitStatusText,
  frameSelectionOf,
  selectionHooks,
  captureSelectionSpecs,
} from './capture-options';
import { type AnalysisResult, type AnalyzerOptions, type KeptLists, analyzeCapture, analyzeFile, parseCapturePoint } from '../analysis/analyzer';
import { chosenIds, noneChosenText } from '../analysis/conversation-choice';
import { MAX_CONVERSATIONS_SPEC, maxConversationsOf, reportAnalysisEnd } from './analysis-end';
import { analysisDocument } from '../analysis/document';
import {
  documentDigits,
  episodeLine,
  episodeText,
  frameLinesFromJson,
  messageLine,
  violationLine,
  violationText,
  writeTextReport,
} from '../analysis/text-report';
import type { Episode, Violation } from '../analysis/types';
import { TextList, writeJsonPieces } from '../base/json-pieces';
import { SortedSpool, type SpoolStore } from '../base/sorted-spool';
import { SpoolFileError, openSpoolFile } from '../capture-engine/spool-file';
import { FLAG_HELP, FLAG_NAMES } from '../analysis/flags';
import { failOnFindings, failOnNames, parseFailOn } from '../analysis/fail-on';
import { nativeIcrcV2 } from '../nic-driver/native-binding';
import { parseThreads, threadCount } from './thread-count';
import { analyzeWithWorker, analyzeWorkerScript } from '../capture-engine/analyze-workers';
import { guessabilityOfCapture } from '../analysis/guessability-capture';
import { guessReportText } from '../analysis/guessability-text';
import { DECODE_AS_SPEC, decodeAsRules } from './decode-as-option';
import { UlpName } from '../ulp/ulp-decoder';
import { nvmeCommandsOf } from '../capture-engine/nvme-command-pass';
import type { NvmeAnalysis } from '../ulp/nvme-rdma/command-analysis';
import { nvmeAnalysisText } from '../ulp/nvme-rdma/command-text';
import { iserTasksOf, rpcCallsOf, smbdRequestsOf } from '../capture-engine/ulp-report-pass';
import type { RpcRdmaAnalysis } from '../ulp/rpc-rdma/rpc-call-analysis';
import type { IserAnalysis } from '../ulp/iser/iser-task-analysis';
import type { SmbdAnalysis } from '../ulp/smbd/smb2-request-analysis';
import { rpcCallText } from '../ulp/rpc-rdma/rpc-call-text';
import { iserTaskText } from '../ulp/iser/iser-task-text';
import { smbdRequestText } from '../ulp/smbd/smb2-request-text';
import type { UlpRuleSet } from '../ulp/protocols';
import type { NvmeRules } from '../ulp/nvme-rdma/nvme-decoder';
import type { ParsedArgs } from './args';

/** One thread reads and decodes, the other analyses: the analysis is in capture order, on one thread. */
const ANALYZE_MAX_THREADS = 2;
/**
 * Smaller files stay on one thread by default: starting the worker costs about 0.1 s, which a file
 * of 26 MiB of small frames did not win back (docs/performance.md).
 */
export const ANALYZE_AUTO_THREADS_MIN_BYTES = 32 << 20;
/** The report's long lists wait in a temporary file, not the heap, for a capture of this size or more (or of unknown size). */
export const ANALYZE_SPOOL_MIN_BYTES = 32 << 20;

export const ANALYZE_OPTIONS: readonly OptionSpec[] = [
  { name: 'json', kind: 'flag', help: 'one JSON document (conversations, messages, episodes, violations, frames with flags)' },
  { name: 'episodes', kind: 'flag', help: 'list every loss-recovery episode' },
  { name: 'messages', short: 'm', kind: 'flag', help: 'list every message' },
  { name: 'list-frames', short: 'f', kind: 'flag', help: 'list every flagged frame' },
  { name: 'verbose', short: 'v', kind: 'flag', help: 'all of the above' },
  ...captureSelectionSpecs({
    conversation:
      'report only conversation N, numbered as roce analyze without it lists them (the analysis still takes every frame: N and its findings do not change)',
    qpn: 'report only the conversations with one of these QPs at either end (found by a first reading of the capture; the analysis still takes every frame)',
    frames: 'analyse only frames numbered A to B (A-B, A-, -B or A), as if the capture held no others',
    'time-window': `analyse only frames whose time since the capture's first frame lies in [FROM, TO], as if the capture held no others (FROM-, -TO; each a number with s, ms, us or ns after it; a bare number is µs)`,
  }),
  { name: 'all-frames', kind: 'flag', help: 'with --json: a result for every RoCE frame, not only flagged ones' },
  { name: 'roce-port', kind: 'string', value: 'N', help: 'UDP destination port that means RoCE v2 (default 4791)' },
  { name: 'ignore-icrc', kind: 'flag', help: 'do not check the ICRC: for captures whose tool did not preserve it (see "capture quality" in roce analyze)' },
  { name: 'no-icrc', kind: 'flag', help: 'the same as --ignore-icrc' },
  {
    name: 'capture-point',
    kind: 'string',
    value: 'unknown|sent|host:IP',
    help: "'sent': frames were captured as sent and dropped after the capture point (a tap before the lossy link): rules that need what the requester received are not checked; 'host:IP': captured at that host's NIC: each flow is judged on the side that host plays (requester or responder rules), not on its peer's frames as the network delivered them",
  },
  {
    name: 'follow',
    kind: 'flag',
    help: 'print each loss-recovery episode and rule violation as the analysis finds it (for a live capture on -), then the report; with --json, JSON Lines (one event per line, the report last); with --fail-on, stop at the first violation of a rule it names',
  },
  {
    name: 'threads',
    kind: 'string',
    value: '1|2',
    help: `2: a worker thread reads and decodes while this one analyses (default for a file of ${ANALYZE_AUTO_THREADS_MIN_BYTES >> 20} MiB or more on two cores or more); 1: this thread only`,
  },
  MAX_CONVERSATIONS_SPEC,
  DECODE_AS_SPEC,
  {
    name: 'audit',
    kind: 'flag',
    help: 'instead of the transport analysis: how guessable the R_Keys, addresses, QP numbers and starting PSNs each host hands out are (step pattern, distinct low bytes, entropy, verdict; docs/security.md); with --json one JSON object',
  },
  {
    name: 'fail-on',
    kind: 'list',
    value: 'RULE[,RULE...]|any',
    help: `exit 1 when the capture shows a violation of one of these go-back-N rules (any = every rule) or a frame with one of these flags; for CI. rxe behaviours (rxe’s own, not violations) fail only when named: rxe (every kind), ${RXE_BEHAVIOUR_IDS.join(', ')}`,
  },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const ANALYZE_USAGE = `usage: roce analyze [options] [FILE]
       roce analyze [options] -r FILE

Rebuilds the RC, UC and UD conversations of a pcap/pcapng capture, their
messages and completion times, flags each frame (retransmission, NAKs,
out-of-sequence, coalesced ACKs, bad ICRC, CNP, ECN CE, ...), finds
loss-recovery episodes and what triggered them, and checks go-back-N rules.
The capture is read in pieces (classic pcap in chunks, pcapng a block at a
time): memory does not grow with the file except for the lists asked for
(--json, -m, -e, -f; the summary keeps only violations and CM connections).
FILE may be a FIFO, or - for standard input, whose report comes when it ends
(tcpdump --immediate-mode -U -w - udp port 4791 | roce analyze). Without FILE,
standard input is read, unless it is a terminal. --frames and --time-window
analyse part of the capture as a capture of its own, its frames keeping their
numbers and their times since the capture's first frame. --conversation and
--qpn report part of the analysis: every frame is analysed as without them, so
a conversation keeps its number, its episodes their numbers and its findings
their verdicts; the report lists the conversations chosen, their messages,
episodes, violations and flagged frames, counts only their flags, and --fail-on
judges only them (the frame counts and the capture quality stay the whole
capture's). Best from a capture
at the requester's host; see docs/analysis.md for what each capture point can
show.

${formatOptions(ANALYZE_OPTIONS)}

flags:
${FLAG_NAMES.map((n) => `  ${n.padEnd(18)} ${FLAG_HELP[n]}`).join('\n')}

${exitStatusText('when the capture was read and analysed completely', 'when it is truncated or corrupt after its header or starts more conversations than --max-conversations (the frames before the problem are analysed), when it shows what --fail-on names, or when the temporary file for the long lists cannot be written', [NO_CONVERSATION_REASON])}`;

export async function analyzeCommand(argv: readonly string[], out: Output, ctx?: Pick<CommandContext, 'stdinIsTerminal'>): Promise<number> {
  const args = parseCommand(argv, out, { name: 'analyze', options: ANALYZE_OPTIONS, usage: ANALYZE_USAGE, operands: 'optional FILE' });
  if (args === null) return 0;
  const captureFile = captureFileOf('analyze', args);
  const json = args.flags.has('json');
  if (args.flags.has('audit')) return auditCapture(args, captureFile, json, out, ctx);
  const verbose = args.flags.has('verbose');
  if (args.flags.has('all-frames') && !json) throw new UsageError('--all-frames goes with --json (use --list-frames for a text list of flagged frames)');
  const selection = frameSelectionOf(args);
  const follow = args.flags.has('follow');
  const choice = conversationChoiceOf(args);
  if (follow && choice.qpns !== null)
    throw new UsageError('--qpn finds its conversations in the whole capture before the analysis: with --follow, choose one with --conversation N');
  const capturePointText = args.values.get('capture-point') ?? 'unknown';
  const capturePoint = parseCapturePoint(capturePointText);
  if (capturePoint === null) throw new UsageError(`--capture-point must be unknown, sent or host:IP, not ${JSON.stringify(capturePointText)}`);
  const portText = args.values.get('roce-port');
  const rocePort = portText === undefined ? 4791 : intValue(portText, 'roce-port', 1, 65535);
  const maxConversations = maxConversationsOf(args);
  const requestedThreads = parseThreads(args.values.get('threads'), ANALYZE_MAX_THREADS);
  const failOnList = args.lists.get('fail-on');
  const failOn = failOnList === undefined ? null : parseFailOn(failOnList);
  if (failOn !== null && failOn.unknown.length > 0) {
    throw new UsageError(`--fail-on: unknown rule or flag ${failOn.unknown.map((n) => JSON.stringify(n)).join(', ')}; known: ${failOnNames().join(', ')}`);
  }
  if (failOn !== null && failOn.failOn.rules.size === 0 && failOn.failOn.flags.size === 0 && failOn.failOn.rxe.size === 0)
    throw new UsageError('--fail-on needs at least one rule, flag or rxe behaviour name, or any');
  const verifyIcrc = !args.flags.has('no-icrc') && !args.flags.has('ignore-icrc');
  // The NVMe-oF command analysis works from NVMe-oF's rules.
  const ulpRules = decodeAsRules(args.lists.get('decode-as') ?? []);
  const nvmeRules = ulpRules[UlpName.Nvme];
  const input = captureInput('analyze', captureFile, out, ctx?.stdinIsTerminal ?? isatty(0), ANALYZE_USAGE);
  if (input === null) return BAD_INPUT_STATUS;
  finishOnInterrupt(input);
  const fileBytes = input.bytes;
  const decode = { rocePort, verifyIcrc, icrcV2: nativeIcrcV2() ?? undefined };
  // --qpn: the conversations with those QPs are known once the capture has been read (a requester's
  // QPN shows in the first response), so a first reading finds them; a pipe is read whole for it.
  // --conversation alone needs none: conversations are numbered as the capture starts them.
  let source: string | Uint8Array = input.path;
  let report: ((conversation: number) => boolean) | undefined;
  if (choice.qpns !== null) {
    if (input.stream) {
      const bytes = readWholeInput('analyze', input, out);
      if (bytes === null) return BAD_INPUT_STATUS;
      source = bytes;
    }
    const scout = analyzeOn(source, { decode, keep: false, maxConversations, ...selectionHooks(selection) });
    if (isNotACapture(scout.captureError)) {
      reportNotACapture('analyze', input.name, scout.captureError, out);
      return BAD_INPUT_STATUS;
    }
    const ids = new Set(chosenIds(choice, scout.conversations));
    report = (id) => ids.has(id);
  } else if (choice.conversation !== null) {
    const n = choice.conversation;
    report = (id) => id === n;
  }
  // The summary lists violations and CM connections, and counts the rest: keeping
  // every message and flagged frame only for counting them made memory grow with the file
  // (350 MiB for a million 64-byte WRITEs).
  const shown = {
    episodes: verbose || args.flags.has('episodes'),
    messages: verbose || args.flags.has('messages'),
    frames: verbose || args.flags.has('list-frames'),
  };
  const keep: KeptLists = {
    messages: json || shown.messages,
    episodes: json || shown.episodes,
    frames: json || shown.frames,
    violations: true,
    captureGaps: json,
    cmConnections: true,
  };
  const allFrames = args.flags.has('all-frames');
  const script = analyzeWorkerScript();
  const threads = threadCount(requestedThreads, {
    script,
    fileBytes,
    counted: false,
    cores: os.availableParallelism(),
    maxAuto: ANALYZE_MAX_THREADS,
    minAutoBytes: ANALYZE_AUTO_THREADS_MIN_BYTES,
  });
  // --follow: each finding on its own line, out at once (a live capture's reader sees it then).
  // With --json the lines are JSON Lines: {"event":"episode","episode":{...}} and
  // {"event":"violation","violation":{...}}, the objects the report lists, and the report last.
  const found = (line: string): void => {
    out.stdout(`${line}\n`);
    void out.flush();
  };
  const event = (name: 'episode' | 'violation', value: Episode | Violation): void => found(JSON.stringify({ event: name, [name]: value }));
  // --follow with --fail-on: the first violation of a rule it names ends the analysis (a live
  // capture has no end to wait for). Flags are judged at the end, as without --follow: a flag may
  // still be taken back (a capture gap found later clears outOfSequence).
  const stop: { by: Violation | null } = { by: null };
  const stopOn = follow && failOn !== null ? failOn.failOn.rules : null;
  // --frames and --time-window: the analysis takes only those frames, as if the capture held no others.
  const hooks = follow
    ? {
        onEpisode: (e: Episode) => (json ? event('episode', e) : found(`episode ${episodeText(e)}`)),
        onViolation: (v: Violation) => {
          if (json) event('violation', v);
          else found(`violation ${violationText(v)}`);
          if (stopOn?.has(v.rule) === true) stop.by ??= v;
        },
        ...selectionHooks(selection, () => stop.by !== null),
      }
    : selectionHooks(selection);
  // The report lists its messages, episodes, violations, flagged frames and capture gaps (those
  // asked for) after counts known only at the end. For a large capture, or one whose size is
  // unknown (a pipe), they wait in a temporary file, sorted there, not in the heap, so memory stays
  // flat in the capture's size; that costs about a fifth more time (docs/performance.md). Without
  // a usable temporary directory they are kept in memory.
  const spoolFile = input.stream || fileBytes >= ANALYZE_SPOOL_MIN_BYTES ? openSpoolFile() : null;
  const spools = spoolFile === null ? null : spoolsOn(spoolFile);
  // Each item goes in as the text it will be printed as: its JSON, or its line of the text report.
  const as =
    <T>(spool: SortedSpool, text: (item: T) => string) =>
    (key: number, item: T) =>
      spool.push(key, text(item));
  const spool =
    spools === null
      ? undefined
      : {
          messages: as(spools.messages, json ? JSON.stringify : messageLine),
          episodes: as(spools.episodes, json ? JSON.stringify : episodeLine),
          violations: as(spools.violations, json ? JSON.stringify : violationLine),
          // A flagged frame's line has the capture's decimals, known with the document: its JSON waits.
          frames: as(spools.frames, JSON.stringify),
          // Listed by --json only.
          captureGaps: as(spools.captureGaps, JSON.stringify),
        };
  try {
    const result =
      threads > 1 && script !== null && typeof source === 'string'
        ? (
            await analyzeWithWorker(
              source,
              { allFrames, capturePoint, keep, spool, maxConversations, report, ...hooks },
              { rocePort, verifyIcrc, native: decode.icrcV2 !== undefined },
              script,
            )
          ).result
        : analyzeOn(source, { decode, allFrames, capturePoint, keep, spool, maxConversations, report, ...hooks });
    // Not a capture at all: said alone, with no report of nothing before it.
    if (isNotACapture(result.captureError)) {
      reportNotACapture('analyze', input.name, result.captureError, out);
      return BAD_INPUT_STATUS;
    }
    // A conversation asked for that the capture does not hold: said alone, as an input without it.
    if (report !== undefined && !result.conversations.some((c) => report(c.id))) {
      out.stderr(`roce analyze: ${input.name}: ${noneChosenText(choice, result.conversations.length)}\n`);
      return BAD_INPUT_STATUS;
    }
    if (follow && !json && result.episodeCount + result.violationCount > 0) out.stdout('\n');
    const nvme = nvmeView(result, nvmeRules, source, input.stream, rocePort, out);
    const reports = ulpReports(result, ulpRules, source, input.stream, rocePort, out);
    const doc = analysisDocument(result, input.name, report);
    const failFindings = failOn === null ? null : failOnFindings(failOn.failOn, result);
    // Written in pieces: a capture of millions of messages makes a report longer than a string can be.
    // `roce analyze -m big.pcap | head`: once the reader has gone, the rest of the report is not made.
    const write = (text: string): void => out.stdout(text);
    const gone = (): boolean => out.readerGone();
    // The spooled lists, as their texts: JSON, or the text report's lines.
    const lists =
      spools === null
        ? {}
        : {
            messages: textsOf(spools.messages),
            episodes: textsOf(spools.episodes),
            violations: textsOf(spools.violations),
            frames: json ? textsOf(spools.frames) : frameLinesFromJson(textsOf(spools.frames), documentDigits(doc)),
          };
    if (json) {
      const gaps = spools === null ? {} : { captureGaps: textsOf(spools.captureGaps) };
      const ulp = { ...(nvme === null ? {} : { nvme }), ...reports };
      const report =
        failFindings === null
          ? { ...doc, ...lists, ...gaps, ...ulp }
          : { ...doc, ...lists, ...gaps, ...ulp, failOn: { names: failOnList, findings: failFindings } };
      writeJsonPieces(follow ? { event: 'report', report } : report, write, gone);
      out.stdout('\n');
    } else {
      writeTextReport({ ...doc, ...lists }, shown, write, gone);
      if (nvme !== null && !gone()) write(nvmeAnalysisText(nvme, verbose));
      if (reports.iser !== undefined && !gone()) write(iserTaskText(reports.iser, verbose));
      if (reports.rpcrdma !== undefined && !gone()) write(rpcCallText(reports.rpcrdma, verbose));
      if (reports.smbd !== undefined && !gone()) write(smbdRequestText(reports.smbd, verbose));
    }
    let status: number = reportAnalysisEnd('analyze', input.name, result, out);
    if (stop.by !== null)
      out.stderr(`roce analyze: ${input.name}: --fail-on: stopped at frame ${doc.frameCounts.total}, the first violation of ${stop.by.rule}\n`);
    if (failFindings !== null) {
      for (const f of failFindings) out.stderr(`roce analyze: ${input.name}: --fail-on: ${f}\n`);
      if (failFindings.length > 0) status = 1;
    }
    return status;
  } catch (e) {
    if (!(e instanceof SpoolFileError)) throw e;
    out.stderr(`roce analyze: ${e.message}\n`);
    return 1;
  } finally {
    spoolFile?.close();
  }
}

/**
 * --audit: the guessability report of the names the capture shows each host handing out, in place
 * of the transport analysis (the options that choose frames or shape that report do not apply).
 */
function auditCapture(args: ParsedArgs, captureFile: string | undefined, json: boolean, out: Output, ctx?: Pick<CommandContext, 'stdinIsTerminal'>): number {
  const other = ['episodes', 'messages', 'list-frames', 'verbose', 'all-frames', 'follow'].filter((f) => args.flags.has(f));
  const otherValues = ['frames', 'time-window', 'conversation', 'qpn', 'capture-point', 'threads', 'max-conversations']
    .filter((v) => args.values.has(v))
    .concat(args.lists.has('fail-on') ? ['fail-on'] : []);
  const bad = [...other, ...otherValues];
  if (bad.length > 0) throw new UsageError(`--audit reports on the whole capture's names; it does not take --${bad.join(', --')}`);
  const portText = args.values.get('roce-port');
  const rocePort = portText === undefined ? 4791 : intValue(portText, 'roce-port', 1, 65535);
  const verifyIcrc = !args.flags.has('no-icrc') && !args.flags.has('ignore-icrc');
  const input = captureInput('analyze', captureFile, out, ctx?.stdinIsTerminal ?? isatty(0), ANALYZE_USAGE);
  if (input === null) return BAD_INPUT_STATUS;
  let source: string | Uint8Array = input.path;
  if (input.stream) {
    const bytes = readWholeInput('analyze', input, out);
    if (bytes === null) return BAD_INPUT_STATUS;
    source = bytes;
  }
  const r = guessabilityOfCapture(source, { rocePort, verifyIcrc, icrcV2: nativeIcrcV2() ?? undefined });
  if (isNotACapture(r.captureError)) {
    reportNotACapture('analyze', input.name, r.captureError, out);
    return BAD_INPUT_STATUS;
  }
  if (json) out.stdout(`${JSON.stringify({ file: input.name, frames: r.frames, roceFrames: r.roceFrames, ...r.report, refusedRkeys: r.refusedRkeys })}\n`);
  else {
    // Keys refused at every use were never handed out (a guess, an auditor's wrong key): counted apart, not judged.
    const refused = r.refusedRkeys.map((k) => `refused R_Keys (NAK remote access error at every use, not counted above): ${k.host} ${k.count}\n`).join('');
    out.stdout(`${input.name}: ${r.frames} frames, ${r.roceFrames} RoCE\n${guessReportText(r.report)}${refused}`);
  }
  return reportAnalysisEnd('analyze', input.name, { captureError: r.captureError, stopped: null }, out);
}

/**
 * The NVMe-oF commands of the capture (ulp/nvme-rdma/command-analysis.ts), when it holds an RDMA CM
 * connection to an NVMe-oF port or --decode-as names QPs: a second reading, of the file or of the
 * capture held whole. A capture that came through a pipe cannot be read again: said on stderr.
 */
function nvmeView(result: AnalysisResult, rules: NvmeRules, source: string | Uint8Array, stream: boolean, rocePort: number, out: Output): NvmeAnalysis | null {
  const ports = new Set(rules.ports);
  const wanted = rules.qpns.length > 0 || result.cmConnections.some((c) => c.portSpace === 'TCP' && c.port !== null && ports.has(c.port));
  if (!wanted) return null;
  if (typeof source === 'string' && stream) {
    out.stderr('roce analyze: the capture holds NVMe-oF connections; their commands are analysed from a file, not from a pipe\n');
    return null;
  }
  return nvmeCommandsOf(source, rules, rocePort).analysis;
}

/**
 * The iSER tasks, RPC-over-RDMA calls and SMB Direct requests of the capture (ulp/*-analysis.ts):
 * each protocol's, when the capture holds an RDMA CM connection to one of its ports (its default,
 * or one --decode-as adds) or --decode-as names QPs for it; RPC-over-RDMA's and SMB Direct's also
 * hold the connections their decoders claim by shape. From a file, as nvmeView.
 */
function ulpReports(
  result: AnalysisResult,
  rules: UlpRuleSet,
  source: string | Uint8Array,
  stream: boolean,
  rocePort: number,
  out: Output,
): { iser?: IserAnalysis; rpcrdma?: RpcRdmaAnalysis; smbd?: SmbdAnalysis } {
  const wanted = (name: UlpName): boolean => {
    const r = rules[name];
    const ports = new Set(r.ports);
    return r.qpns.length > 0 || result.cmConnections.some((c) => c.portSpace === 'TCP' && c.port !== null && ports.has(c.port));
  };
  const names = [UlpName.Iser, UlpName.RpcRdma, UlpName.Smbd].filter(wanted);
  if (names.length === 0) return {};
  if (typeof source === 'string' && stream) {
    out.stderr(`roce analyze: the capture holds ${names.join(', ')} connections; their requests are analysed from a file, not from a pipe\n`);
    return {};
  }
  return {
    ...(names.includes(UlpName.Iser) ? { iser: iserTasksOf(source, rules[UlpName.Iser], rocePort).analysis } : {}),
    ...(names.includes(UlpName.RpcRdma) ? { rpcrdma: rpcCallsOf(source, rules[UlpName.RpcRdma], rocePort).analysis } : {}),
    ...(names.includes(UlpName.Smbd) ? { smbd: smbdRequestsOf(source, rules[UlpName.Smbd], rocePort).analysis } : {}),
  };
}

/** An analysis of the capture at a path, or of one held whole. */
function analyzeOn(source: string | Uint8Array, opts: AnalyzerOptions): AnalysisResult {
  return typeof source === 'string' ? analyzeFile(source, opts) : analyzeCapture(source, opts);
}

/** A spool for each list the report may hold, all in one file. */
function spoolsOn(file: SpoolStore): Record<'messages' | 'episodes' | 'violations' | 'frames' | 'captureGaps', SortedSpool> {
  return {
    messages: new SortedSpool(file),
    episodes: new SortedSpool(file),
    violations: new SortedSpool(file),
    frames: new SortedSpool(file),
    captureGaps: new SortedSpool(file),
  };
}

/** A spool's lines, in order, as the texts of a list. */
function textsOf(spool: SortedSpool): TextList {
  return new TextList(() => spool.lines(), spool.length);
}
