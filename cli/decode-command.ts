/**
 * `roce decode [FILE]`: a RoCE dissector for pcap and pcapng captures.
 * One line per RoCE frame, a field tree with -v, or one JSON object per frame
 * with --json (keys documented in docs/decode.md).
 */
import * as os from 'node:os';
import { isatty } from 'node:tty';
import { BAD_INPUT_STATUS, captureInput, finishOnInterrupt, isNotACapture, reportNotACapture } from './capture-input';
import {
  ALL_FRAMES,
  CONVERSATION_SPEC,
  FRAMES_SPEC,
  NO_CONVERSATION_REASON,
  QPN_SPEC,
  READ_FILE_SPEC,
  TIME_WINDOW_SPEC,
  captureFileOf,
  conversationOf,
  describedAs,
  exitStatusText,
  frameSelectionOf,
  qpnsOf,
  selectionHooks,
  selects,
} from './capture-options';
import { Analyzer } from '../analysis/analyzer';
import { noneChosenText } from '../analysis/conversation-choice';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { type CommandContext, parseCommand } from './command';
import type { Output } from './output';
import { describeCaptureError } from '../packets/pcap';
import { type StreamResult, streamCaptureFile } from '../analysis/capture-stream';
import { DEFAULT_PRINT_SETTINGS, type DecodeCounts, FramePrinter, type PrintSettings } from './decode-printer';
import { AUTO_THREADS_MIN_BYTES, MAX_AUTO_THREADS, threadCount, parseThreads } from './thread-count';
import { decodeWithWorkers, decodeWorkerScript } from './decode-workers';
import { recordSource } from './batch-source';
import { PcapBlockReader } from './pcap-block-reader';
import { PcapngBlockReader } from './pcapng-block-reader';
import { TextBytes } from '../base/text-bytes';
import { nativeIcrcV2 } from '../nic-driver/native-binding';
import { nativeIcrcBatch } from '../nic-driver/native-icrc';
import { opcodeInfo, OPCODES } from '../packets/opcodes';

export const DECODE_OPTIONS: readonly OptionSpec[] = [
  READ_FILE_SPEC,
  { name: 'json', kind: 'flag', help: 'one JSON object per frame per line (every frame, RoCE or not)' },
  { name: 'verbose', short: 'v', kind: 'flag', help: 'full field tree for each RoCE frame' },
  { name: 'roce-port', kind: 'string', value: 'N', help: 'UDP destination port that means RoCE v2 (default 4791)' },
  describedAs(QPN_SPEC, 'only frames to (BTH DestQP) or from (DETH SrcQP) these QPs, each frame judged by its own headers as a dissector\'s field filter judges it (--conversation: every frame of a conversation)'),
  describedAs(CONVERSATION_SPEC, 'only frames of conversation N, numbered as roce analyze lists them with the same --frames, --time-window, --roce-port and --no-icrc (each frame is analysed as it is read: this thread only)'),
  { name: 'opcode', kind: 'list', value: 'OP[,OP]', help: 'only these opcodes: a number, a name (RC_SEND_ONLY) or a name without its prefix (SEND_ONLY)' },
  FRAMES_SPEC,
  TIME_WINDOW_SPEC,
  { name: 'count', short: 'c', kind: 'string', value: 'N', help: 'stop after printing N frames' },
  { name: 'errors', kind: 'flag', help: 'only malformed frames (bad ICRC, truncated, bad length, unknown opcode, bad MAD)' },
  { name: 'no-icrc', kind: 'flag', help: 'do not check the ICRC' },
  { name: 'threads', kind: 'string', value: 'N', help: `threads that decode, this one included (1: no worker; default: one per core up to ${MAX_AUTO_THREADS} for a file of ${AUTO_THREADS_MIN_BYTES >> 20} MiB or more, 1 with --count, --time-window or --conversation, which take this thread only)` },
  { name: 'time', short: 't', kind: 'string', value: 'rel|abs|delta', help: 'time column: since the first frame (default), since the epoch, or since the previous frame' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const DECODE_USAGE = `usage: roce decode [options] [FILE]
       roce decode [options] -r FILE

Decodes RoCE v2 (UDP port 4791) and RoCE v1 (EtherType 0x8915) frames in a pcap or
pcapng capture (Ethernet, Linux cooked SLL/SLL2, raw IP). Checks every ICRC.
FILE may be a FIFO, or - for standard input: frames are printed as they arrive
(tcpdump --immediate-mode -U -w - udp port 4791 | roce decode). Without FILE,
standard input is read, unless it is a terminal. The filters choose the frames
printed; the closing line (on stderr) counts every frame read.

${formatOptions(DECODE_OPTIONS)}

${exitStatusText('when the whole capture was read', 'when it is truncated or corrupt after its header (the frames before the problem are still printed)', [NO_CONVERSATION_REASON])}`;

function parseOpcodes(list: readonly string[]): Set<number> {
  const out = new Set<number>();
  for (const item of list) {
    if (/^(0x[0-9a-f]+|\d+)$/i.test(item)) {
      const n = intValue(item, 'opcode', 0, 255);
      if (opcodeInfo(n) === undefined) throw new UsageError(`--opcode ${item}: opcode ${n} is not in the opcode table`);
      out.add(n);
      continue;
    }
    const want = item.toUpperCase();
    const hits = OPCODES.filter((e) => e !== undefined && (e.name === want || e.name.slice(e.name.indexOf('_') + 1) === want));
    if (hits.length === 0) throw new UsageError(`--opcode ${item}: no opcode has that name (try RC_SEND_ONLY, SEND_ONLY, ACKNOWLEDGE or a number)`);
    for (const e of hits) if (e) out.add(e.opcode);
  }
  return out;
}

export async function decodeCommand(argv: readonly string[], out: Output, ctx?: Pick<CommandContext, 'stdinIsTerminal'>): Promise<number> {
  const args = parseCommand(argv, out, { name: 'decode', options: DECODE_OPTIONS, usage: DECODE_USAGE, operands: 'optional FILE' });
  if (args === null) return 0;
  const file = captureFileOf('decode', args);
  const json = args.flags.has('json');
  const verbose = args.flags.has('verbose');
  if (json && verbose) throw new UsageError('--json and -v cannot be combined');
  const portText = args.values.get('roce-port');
  const countText = args.values.get('count');
  const maxOut = countText === undefined ? Number.MAX_SAFE_INTEGER : intValue(countText, 'count', 1, Number.MAX_SAFE_INTEGER);
  const timeMode = args.values.get('time') ?? 'rel';
  if (timeMode !== 'rel' && timeMode !== 'abs' && timeMode !== 'delta') throw new UsageError(`--time must be rel, abs or delta, not ${JSON.stringify(timeMode)}`);
  const selection = frameSelectionOf(args);
  const { first, last } = selection;
  // A time window is judged here, on each record's exact timestamp: on this thread only.
  const windowed = selection.fromNs !== ALL_FRAMES.fromNs || selection.toNs !== ALL_FRAMES.toNs;
  const qpns = qpnsOf(args);
  const opList = args.lists.get('opcode');
  const requestedThreads = parseThreads(args.values.get('threads'));
  if (windowed && requestedThreads !== null && requestedThreads > 1) throw new UsageError('--time-window decodes on this thread only: it goes with --threads 1');
  const conversation = conversationOf(args);
  if (conversation !== null && requestedThreads !== null && requestedThreads > 1) throw new UsageError('--conversation decodes on this thread only: it goes with --threads 1');
  const settings: PrintSettings = {
    ...DEFAULT_PRINT_SETTINGS,
    json,
    verbose,
    timeMode,
    rocePort: portText === undefined ? DEFAULT_PRINT_SETTINGS.rocePort : intValue(portText, 'roce-port', 1, 65535),
    verifyIcrc: !args.flags.has('no-icrc'),
    qpns,
    opcodes: opList === undefined ? null : [...parseOpcodes(opList)],
    first,
    last,
    errorsOnly: args.flags.has('errors'),
  };
  const icrcV2 = nativeIcrcV2() ?? undefined;

  const input = captureInput('decode', file, out, ctx?.stdinIsTerminal ?? isatty(0), DECODE_USAGE);
  if (input === null) return BAD_INPUT_STATUS;
  finishOnInterrupt(input);
  const fileBytes = input.bytes;
  // A pipe's lines are handed over before each wait for its writer, so a live capture prints as it comes.
  let flushWaiting: () => void = () => undefined;
  const records = streamCaptureFile(input.path, { beforeWait: () => flushWaiting() });
  // Lines and JSON objects are written straight into UTF-8 chunks (base/text-bytes.ts): building a
  // string per frame cost more than decoding it (docs/performance.md, "roce decode end to end").
  const script = decodeWorkerScript();
  const threads = threadCount(requestedThreads, { script, fileBytes, counted: countText !== undefined || windowed || conversation !== null, cores: os.availableParallelism() });
  let read = 0;
  let counts: DecodeCounts;
  let ended: StreamResult | null = null;
  // `roce decode big.pcap | head`: once the reader has gone, reading stops.
  let gone = false;
  const write = (chunk: Uint8Array): boolean => {
    const free = out.stdoutBytes(chunk);
    gone = out.readerGone();
    return free;
  };
  // --conversation: each frame goes through the analysis roce analyze makes (with the same frames
  // selected and the same decoding) as it is read, which says whose conversation it belongs to.
  let frameConversation: number | null = null;
  const analyzer =
    conversation === null
      ? null
      : new Analyzer({
          decode: { rocePort: settings.rocePort, verifyIcrc: settings.verifyIcrc, icrcV2 },
          keep: false,
          ...selectionHooks(selection),
          onFrame: (r) => (frameConversation = r.conversation),
        });
  if (threads > 1 && script !== null) {
    // A capture file, classic pcap or pcapng, is read in blocks straight into the batches; standard
    // input and pipes record by record.
    const source = PcapBlockReader.open(input.path) ?? PcapngBlockReader.open(input.path) ?? recordSource(records);
    const r = await decodeWithWorkers(source, settings, threads - 1, script, icrcV2, nativeIcrcBatch()?.compute ?? null, write, () => gone);
    ({ read, counts, ended } = r);
  } else {
    const text = new TextBytes(write);
    flushWaiting = () => text.end();
    const printer = new FramePrinter(text, settings, icrcV2);
    counts = printer.counts;
    let whole: { bytes: Uint8Array; view: DataView } = { bytes: new Uint8Array(0), view: new DataView(new ArrayBuffer(0)) };
    let t0: bigint | null = null;
    for (;;) {
      const next = records.next();
      if (next.done === true) {
        ended = next.value;
        break;
      }
      const rec = next.value;
      read++;
      if (counts.printed >= maxOut || gone) {
        records.return({ format: 'pcap', error: null });
        break;
      }
      // Records are views into one read buffer: one DataView over it serves every frame in it.
      if (rec.data.buffer !== whole.bytes.buffer) whole = { bytes: new Uint8Array(rec.data.buffer), view: new DataView(rec.data.buffer) };
      const start = rec.data.byteOffset;
      // The window's times count from the capture's first frame, printed or not.
      if (windowed) t0 ??= rec.timestampNs;
      if (analyzer !== null) {
        frameConversation = null;
        if (!analyzer.wantsStop) analyzer.push(rec);
        if (frameConversation !== conversation) {
          // Another conversation's frame, or none's: counted, not printed.
          printer.decode(whole.view, whole.bytes, start, start + rec.data.byteLength, rec.linkType, rec.origLen);
          printer.passOver(rec.sec, rec.nsec, rec.timeDigits);
          continue;
        }
      }
      if (windowed && t0 !== null) {
        if (!selects(selection, rec.index, Number(rec.timestampNs - t0))) {
          // Outside the window: counted, as a frame outside --frames is, and the time columns'
          // references move on, but nothing is printed.
          printer.decode(whole.view, whole.bytes, start, start + rec.data.byteLength, rec.linkType, rec.origLen);
          printer.passOver(rec.sec, rec.nsec, rec.timeDigits);
          continue;
        }
      }
      printer.record(whole.view, whole.bytes, start, start + rec.data.byteLength, rec.linkType, rec.origLen, rec.index, rec.sec, rec.nsec, rec.timeDigits);
    }
    text.end();
  }
  // Nothing more is read, so the closing line would count only part of the file; stop quietly.
  if (gone) return 0;
  const { roce: roceFrames, malformed, badIcrc, truncated, printed } = counts;
  const result = { format: ended?.format ?? 'pcap', error: ended?.error ?? null, records: { length: read } };
  if (isNotACapture(result.error)) {
    reportNotACapture('decode', input.name, result.error, out);
    return BAD_INPUT_STATUS;
  }
  if (analyzer !== null && conversation !== null) {
    const count = analyzer.finish().conversations.length;
    if (conversation > count) {
      out.stderr(`roce decode: ${input.name}: ${noneChosenText({ conversation, qpns: null }, count)}\n`);
      return BAD_INPUT_STATUS;
    }
  }
  if (!json) {
    out.stderr(
      `${read} frames read${ended === null ? '' : ` (${result.format})`}, ${roceFrames} RoCE, ${malformed} malformed, ${badIcrc} with a bad ICRC${truncated > 0 ? `, ${truncated} truncated by the capture (headers decoded, ICRC not captured)` : ''}${printed < roceFrames ? `, ${printed} shown` : ''}\n`,
    );
  }
  if (result.error !== null) {
    out.stderr(`roce decode: ${input.name}: ${describeCaptureError(result)}\n`);
    return 1;
  }
  return 0;
}
