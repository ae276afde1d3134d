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
  NO_CONVERSATION_REASON,
  captureFileOf,
  conversationOf,
  exitStatusText,
  frameSelectionOf,
  qpnsOf,
  selectionHooks,
  selects,
  captureSelectionSpecs,
} from './capture-options';
import { Analyzer } from '../analysis/analyzer';
import { noneChosenText } from '../analysis/conversation-choice';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { type CommandContext, parseCommand } from './command';
import type { Output } from './output';
import { describeCaptureError } from '../packets/pcap';
import { type StreamResult, streamCaptureFile } from '../analysis/capture-stream';
import { DEFAULT_PRINT_SETTINGS, type DecodeCounts, FramePrinter, type PrintSettings } from '../capture-engine/decode-printer';
import { AUTO_THREADS_MIN_BYTES, MAX_AUTO_THREADS, threadCount, parseThreads } from './thread-count';
import { decodeWithWorkers, decodeWorkerScript } from '../capture-engine/decode-workers';
import { recordSource } from '../capture-engine/batch-source';
import { PcapBlockReader } from '../capture-engine/pcap-block-reader';
import { PcapngBlockReader } from '../capture-engine/pcapng-block-reader';
import { TextBytes } from '../base/text-bytes';
import { nativeIcrcV2 } from '../nic-driver/native-binding';
import { nativeIcrcBatch } from '../nic-driver/native-icrc';
import { opcodeInfo, OPCODES } from '../packets/opcodes';
import { DisplayFilterError, compileDisplayFilter } from '../packets/display-filter';
import { decodeField } from '../capture-engine/ulp-decoding';
import { DECODE_AS_SPEC, decodeAsRules } from './decode-as-option';
import { type FieldsFormat, fieldsHeader } from '../capture-engine/tshark-output';
import { fieldsFormat } from './fields-option';
import { PcapOutput } from './pcap-output';
import type { TimeMode } from '../capture-engine/decode-printer';
import { fileErrorText } from '../base/file-error';
import * as fs from 'node:fs';

/** -t's values: tshark's letters, and the long names they stand for. */
const TIME_MODES: Readonly<Record<string, TimeMode>> = {
  r: 'rel',
  rel: 'rel',
  e: 'abs',
  abs: 'abs',
  d: 'delta',
  delta: 'delta',
  dd: 'dd',
  ad: 'ad',
  a: 'a',
  ud: 'ud',
  u: 'u',
};

export const DECODE_OPTIONS: readonly OptionSpec[] = [
  { name: 'json', kind: 'flag', help: 'one JSON object per frame per line (every frame, RoCE or not)' },
  { name: 'verbose', short: 'v', kind: 'flag', help: 'full field tree for each RoCE frame' },
  { name: 'tree', short: 'V', kind: 'flag', help: 'the same as -v (tshark -V)' },
  {
    name: 'display-filter',
    short: 'Y',
    kind: 'string',
    value: 'FILTER',
    help: "only frames that pass this display filter, in Wireshark's syntax over its field names (ip.dst == 198.18.0.2 && infiniband.bth.opcode in {4, 17}); docs/decode.md lists the fields and operators",
  },
  {
    name: 'output-format',
    short: 'T',
    kind: 'string',
    value: 'text|fields',
    help: 'fields: one line per frame of the -e fields (tshark -T fields); text: the summary lines (default)',
  },
  { name: 'field', short: 'e', kind: 'list', value: 'FIELD', help: "with -T fields: a field to print, by Wireshark's name (repeat for more)" },
  {
    name: 'field-option',
    short: 'E',
    kind: 'repeat',
    value: 'OPT=V',
    help: 'with -T fields: header=y|n, separator=C (/t, /s), quote=d|s|n, occurrence=a|f|l, aggregator=C, as tshark -E',
  },
  { name: 'hex', short: 'x', kind: 'flag', help: "each frame's bytes as a hex dump, as tshark -x, after its line (or tree)" },
  {
    name: 'write',
    short: 'w',
    kind: 'string',
    value: 'OUT',
    help: 'write the frames that pass the filters to OUT as a classic pcap (the input\'s link type and time resolution; "-": standard output) and print none',
  },
  { name: 'no-resolve', short: 'n', kind: 'flag', help: "accepted for tshark's sake: no name is ever resolved" },
  { name: 'roce-port', kind: 'string', value: 'N', help: 'UDP destination port that means RoCE v2 (default 4791)' },
  ...captureSelectionSpecs({
    conversation:
      'only frames of conversation N, numbered as roce analyze lists them with the same --frames, --time-window, --roce-port and --no-icrc (each frame is analysed as it is read: this thread only)',
    qpn: "only frames to (BTH DestQP) or from (DETH SrcQP) these QPs, each frame judged by its own headers as a dissector's field filter judges it (--conversation: every frame of a conversation)",
  }),
  { name: 'opcode', kind: 'list', value: 'OP[,OP]', help: 'only these opcodes: a number, a name (RC_SEND_ONLY) or a name without its prefix (SEND_ONLY)' },
  { name: 'count', short: 'c', kind: 'string', value: 'N', help: 'stop after printing N frames' },
  { name: 'errors', kind: 'flag', help: 'only malformed frames (bad ICRC, truncated, bad length, unknown opcode, bad MAD)' },
  { name: 'no-icrc', kind: 'flag', help: 'do not check the ICRC' },
  DECODE_AS_SPEC,
  {
    name: 'threads',
    kind: 'string',
    value: 'N',
    help: `threads that decode, this one included (1: no worker; default: one per core up to ${MAX_AUTO_THREADS} for a file of ${AUTO_THREADS_MIN_BYTES >> 20} MiB or more, 1 with --count, --time-window or --conversation, which take this thread only)`,
  },
  {
    name: 'time',
    short: 't',
    kind: 'string',
    value: 'r|e|d|dd|ad|a|ud|u',
    help: 'time column, as tshark -t: r (rel) since the first frame (default), e (abs) since the epoch, d (delta) since the frame before, dd since the frame shown before, ad date and time of day in local time (TZ), a time of day, ud and u the same in UTC',
  },
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
  const verbose = args.flags.has('verbose') || args.flags.has('tree');
  if (json && verbose) throw new UsageError('--json and -v cannot be combined');
  const filterText = args.values.get('display-filter') ?? null;
  if (filterText !== null) {
    try {
      compileDisplayFilter(filterText, decodeField);
    } catch (e) {
      if (e instanceof DisplayFilterError) throw new UsageError(`-Y ${JSON.stringify(filterText)}: ${e.message}`);
      throw e;
    }
  }
  const format = args.values.get('output-format') ?? 'text';
  if (format !== 'text' && format !== 'fields')
    throw new UsageError(`-T ${format}: roce decode prints text (summary lines, -v trees) or fields; for JSON, --json`);
  const fieldNames = args.lists.get('field') ?? [];
  const fieldOptions = args.lists.get('field-option') ?? [];
  let fields: FieldsFormat | null = null;
  if (format === 'fields') {
    if (json || verbose) throw new UsageError('-T fields cannot be combined with --json or -v');
    fields = fieldsFormat(fieldNames, fieldOptions);
  } else if (fieldNames.length > 0 || fieldOptions.length > 0) throw new UsageError('-e and -E go with -T fields');
  const writeTo = args.values.get('write') ?? null;
  if (writeTo !== null && (json || verbose || fields !== null || args.flags.has('hex')))
    throw new UsageError('-w writes the frames and prints none: it cannot be combined with --json, -v, -T fields or -x');
  const portText = args.values.get('roce-port');
  const countText = args.values.get('count');
  const maxOut = countText === undefined ? Number.MAX_SAFE_INTEGER : intValue(countText, 'count', 1, Number.MAX_SAFE_INTEGER);
  const timeText = args.values.get('time') ?? 'r';
  const timeMode = Object.hasOwn(TIME_MODES, timeText) ? TIME_MODES[timeText] : undefined;
  if (timeMode === undefined) throw new UsageError(`-t must be r, e, d, dd, ad, a, ud or u (or rel, abs, delta), not ${JSON.stringify(timeText)}`);
  const selection = frameSelectionOf(args);
  const { first, last } = selection;
  // A time window is judged here, on each record's exact timestamp: on this thread only.
  const windowed = selection.fromNs !== ALL_FRAMES.fromNs || selection.toNs !== ALL_FRAMES.toNs;
  const qpns = qpnsOf(args);
  const opList = args.lists.get('opcode');
  const requestedThreads = parseThreads(args.values.get('threads'));
  if (windowed && requestedThreads !== null && requestedThreads > 1)
    throw new UsageError('--time-window decodes on this thread only: it goes with --threads 1');
  // A display filter, fields, -w, -x and -t dd work on this thread, frame after frame in order.
  const ownThread = filterText !== null || fields !== null || writeTo !== null || args.flags.has('hex') || timeMode === 'dd';
  if (ownThread && requestedThreads !== null && requestedThreads > 1)
    throw new UsageError('-Y, -T fields, -w, -x and -t dd decode on this thread only: they go with --threads 1');
  const conversation = conversationOf(args);
  if (conversation !== null && requestedThreads !== null && requestedThreads > 1)
    throw new UsageError('--conversation decodes on this thread only: it goes with --threads 1');
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
    displayFilter: filterText,
    fields,
    hexDump: args.flags.has('hex'),
    silent: writeTo !== null,
    ulp: decodeAsRules(args.lists.get('decode-as') ?? []),
  };
  const icrcV2 = nativeIcrcV2() ?? undefined;

  const input = captureInput('decode', file, out, ctx?.stdinIsTerminal ?? isatty(0), DECODE_USAGE);
  if (input === null) return BAD_INPUT_STATUS;
  // -w: the file is opened before the capture is read, so that what stops it is said first.
  let pcapOut: PcapOutput | null = null;
  let pcapFd: number | null = null;
  if (writeTo !== null) {
    if (writeTo === '-') pcapOut = new PcapOutput((chunk) => out.stdoutBytes(chunk));
    else {
      try {
        pcapFd = fs.openSync(writeTo, 'w');
      } catch (e) {
        out.stderr(`roce decode: cannot write ${writeTo}: ${fileErrorText(e, true)}\n`);
        return BAD_INPUT_STATUS;
      }
      const fd = pcapFd;
      pcapOut = new PcapOutput((chunk) => fs.writeSync(fd, chunk));
    }
  }
  let writeError: string | null = null;
  finishOnInterrupt(input);
  const fileBytes = input.bytes;
  // A pipe's lines are handed over before each wait for its writer, so a live capture prints as it comes.
  let flushWaiting: () => void = () => undefined;
  const records = streamCaptureFile(input.path, { beforeWait: () => flushWaiting() });
  // Lines and JSON objects are written straight into UTF-8 chunks (base/text-bytes.ts): building a
  // string per frame cost more than decoding it (docs/performance.md, "roce decode end to end").
  const script = decodeWorkerScript();
  const threads = threadCount(requestedThreads, {
    script,
    fileBytes,
    counted: countText !== undefined || windowed || conversation !== null || ownThread,
    cores: os.availableParallelism(),
  });
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
    if (fields !== null && fields.header) {
      text.text(fieldsHeader(fields));
      text.byte(0x0a);
    }
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
      pcapOut?.start(rec.linkType, rec.timeDigits);
      if (
        printer.record(whole.view, whole.bytes, start, start + rec.data.byteLength, rec.linkType, rec.origLen, rec.index, rec.sec, rec.nsec, rec.timeDigits) &&
        pcapOut !== null
      ) {
        writeError = pcapOut.add(rec);
        if (writeError !== null) {
          records.return({ format: 'pcap', error: null });
          break;
        }
      }
    }
    text.end();
  }
  if (pcapOut !== null) {
    pcapOut.finish();
    if (pcapFd !== null) fs.closeSync(pcapFd);
  }
  if (writeError !== null) {
    out.stderr(`roce decode: -w ${writeTo}: ${writeError}\n`);
    return 1;
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
