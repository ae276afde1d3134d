/**
 * `roce decode FILE`: a RoCE dissector for pcap and pcapng captures.
 * One line per RoCE frame, a field tree with -v, or one JSON object per frame
 * with --json (keys documented in docs/decode.md).
 */
import { fileErrorText } from './file-error';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { parseCommand } from './command';
import type { Output } from './output';
import { describeCaptureError } from '../packets/pcap';
import type { WireError } from '../packets/errors';
import { streamCaptureFile } from '../analysis/capture-stream';
import { decodeAt, type DecodeOptions, type DecodedFrame } from '../packets/decode';
import { writeFrameJson } from '../packets/json';
import { fieldTree, writeSummaryLine } from '../packets/summary';
import { TextBytes } from '../base/text-bytes';
import { nativeIcrcV2 } from '../nic-driver/native-binding';
import { opcodeInfo, OPCODES } from '../packets/opcodes';

export const DECODE_OPTIONS: readonly OptionSpec[] = [
  { name: 'json', kind: 'flag', help: 'one JSON object per frame per line (every frame, RoCE or not)' },
  { name: 'verbose', short: 'v', kind: 'flag', help: 'full field tree for each RoCE frame' },
  { name: 'roce-port', kind: 'string', value: 'N', help: 'UDP destination port that means RoCE v2 (default 4791)' },
  { name: 'qpn', kind: 'list', value: 'QPN[,QPN]', help: 'only frames to (BTH DestQP) or from (DETH SrcQP) these QPs' },
  { name: 'opcode', kind: 'list', value: 'OP[,OP]', help: 'only these opcodes: a number, a name (RC_SEND_ONLY) or a name without its prefix (SEND_ONLY)' },
  { name: 'frames', kind: 'string', value: 'A-B', help: 'only frame numbers in this range (A-B, A-, -B or A)' },
  { name: 'count', short: 'c', kind: 'string', value: 'N', help: 'stop after printing N frames' },
  { name: 'errors', kind: 'flag', help: 'only malformed frames (bad ICRC, truncated, bad length, unknown opcode, bad MAD)' },
  { name: 'no-icrc', kind: 'flag', help: 'do not check the ICRC' },
  { name: 'time', short: 't', kind: 'string', value: 'rel|abs|delta', help: 'time column: since the first frame (default), since the epoch, or since the previous frame' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const DECODE_USAGE = `usage: roce decode [options] [FILE]

Decodes RoCE v2 (UDP port 4791) and RoCE v1 (EtherType 0x8915) frames in a pcap or
pcapng capture (Ethernet, Linux cooked SLL/SLL2, raw IP). Checks every ICRC.
Without FILE, decodes the sample capture shipped in captures/rc-conversation.pcap.

${formatOptions(DECODE_OPTIONS)}

Exit status: 0 when the whole file was read, 1 when the capture is truncated or
corrupt (frames before the problem are still printed), 2 on a usage error or an
unreadable file.`;

/** The capture decoded when no FILE is given. */
export const DEFAULT_CAPTURE = path.join(__dirname, '..', '..', 'captures', 'rc-conversation.pcap');

const NEWLINE = 0x0a;

interface Filter {
  qpns: Set<number> | null;
  opcodes: Set<number> | null;
  first: number;
  last: number;
  errorsOnly: boolean;
}

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

function parseRange(text: string): [number, number] {
  const m = /^(\d*)(-?)(\d*)$/.exec(text);
  if (m === null || (m[1] === '' && m[3] === '')) throw new UsageError(`--frames must look like A-B, A-, -B or A, not ${JSON.stringify(text)}`);
  const a = m[1] === '' ? 1 : intValue(m[1] ?? '', 'frames', 1, Number.MAX_SAFE_INTEGER);
  const b = m[2] === '' ? a : m[3] === '' ? Number.MAX_SAFE_INTEGER : intValue(m[3] ?? '', 'frames', 1, Number.MAX_SAFE_INTEGER);
  if (b < a) throw new UsageError(`--frames ${text}: the range ends before it starts`);
  return [a, b];
}

function passes(f: Filter, index: number, d: DecodedFrame): boolean {
  if (index < f.first || index > f.last) return false;
  if (f.qpns === null && f.opcodes === null && !f.errorsOnly) return true;
  if (!d.roce) return false;
  if (f.errorsOnly && d.error === null && d.madError === null) return false;
  if (f.qpns !== null) {
    const dest = d.bth?.destQp;
    const src = d.deth?.srcQp;
    if (!((dest !== undefined && f.qpns.has(dest)) || (src !== undefined && f.qpns.has(src)))) return false;
  }
  if (f.opcodes !== null && (d.bth === null || !f.opcodes.has(d.bth.opcode))) return false;
  return true;
}

export async function decodeCommand(argv: readonly string[], out: Output): Promise<number> {
  const args = parseCommand(argv, out, { name: 'decode', options: DECODE_OPTIONS, usage: DECODE_USAGE, operands: 'optional FILE' });
  if (args === null) return 0;
  const json = args.flags.has('json');
  const verbose = args.flags.has('verbose');
  if (json && verbose) throw new UsageError('--json and -v cannot be combined');
  const portText = args.values.get('roce-port');
  const opts: DecodeOptions = {
    rocePort: portText === undefined ? 4791 : intValue(portText, 'roce-port', 1, 65535),
    verifyIcrc: !args.flags.has('no-icrc'),
    icrcV2: nativeIcrcV2() ?? undefined,
  };
  const countText = args.values.get('count');
  const maxOut = countText === undefined ? Number.MAX_SAFE_INTEGER : intValue(countText, 'count', 1, Number.MAX_SAFE_INTEGER);
  const timeMode = args.values.get('time') ?? 'rel';
  if (timeMode !== 'rel' && timeMode !== 'abs' && timeMode !== 'delta') throw new UsageError(`--time must be rel, abs or delta, not ${JSON.stringify(timeMode)}`);
  const [first, last] = args.values.has('frames') ? parseRange(args.values.get('frames') ?? '') : [1, Number.MAX_SAFE_INTEGER];
  const qpnList = args.lists.get('qpn');
  const opList = args.lists.get('opcode');
  const filter: Filter = {
    qpns: qpnList === undefined ? null : new Set(qpnList.map((q) => intValue(q, 'qpn', 0, 0xffffff))),
    opcodes: opList === undefined ? null : parseOpcodes(opList),
    first,
    last,
    errorsOnly: args.flags.has('errors'),
  };

  let file = args.positionals[0];
  if (file === undefined) {
    file = DEFAULT_CAPTURE;
    out.stderr(`roce decode: no FILE given; decoding the bundled sample ${path.relative(process.cwd(), file) || file}\n`);
  }
  // The file is read a chunk at a time and each frame is printed as it is decoded, so memory stays
  // flat whatever the file's size (issue 15: reading it whole grew RSS with the file).
  let unreadable = '';
  try {
    if (fs.statSync(file).isDirectory()) unreadable = 'is a directory';
    else fs.accessSync(file, fs.constants.R_OK);
  } catch (e) {
    unreadable = fileErrorText(e);
  }
  if (unreadable !== '') {
    out.stderr(`roce decode: cannot read ${file}: ${unreadable}\n`);
    return 2;
  }
  const records = streamCaptureFile(file);
  // Lines and JSON objects are written straight into UTF-8 chunks (base/text-bytes.ts): building a
  // string per frame cost more than decoding it (docs/performance.md, "roce decode end to end").
  const text = new TextBytes((chunk) => out.stdoutBytes(chunk));
  let whole: { bytes: Uint8Array; view: DataView } = { bytes: new Uint8Array(0), view: new DataView(new ArrayBuffer(0)) };
  let firstTime: number | null = null;
  let prevTime = 0;
  let read = 0;
  let printed = 0;
  let roceFrames = 0;
  let malformed = 0;
  let badIcrc = 0;
  let truncated = 0;
  let ended: { format: 'pcap' | 'pcapng'; error: WireError | null } | null = null;
  for (;;) {
    const next = records.next();
    if (next.done === true) {
      ended = next.value;
      break;
    }
    const rec = next.value;
    read++;
    if (printed >= maxOut) {
      records.return({ format: 'pcap', error: null });
      break;
    }
    firstTime ??= rec.timeSec;
    // Records are views into one read buffer: one DataView over it serves every frame in it.
    if (rec.data.buffer !== whole.bytes.buffer) whole = { bytes: new Uint8Array(rec.data.buffer), view: new DataView(rec.data.buffer) };
    const start = rec.data.byteOffset;
    const d = decodeAt(whole.view, whole.bytes, start, start + rec.data.byteLength, rec.linkType, opts, rec.origLen);
    if (d.roce) {
      roceFrames++;
      if (d.error !== null || d.madError !== null) malformed++;
      if (d.icrcOk === false) badIcrc++;
      if (d.truncated) truncated++;
    }
    const t = timeMode === 'abs' ? rec.timeSec : timeMode === 'rel' ? rec.timeSec - firstTime : rec.timeSec - prevTime;
    prevTime = rec.timeSec;
    if (!passes(filter, rec.index, d)) continue;
    if (json) {
      writeFrameJson(text, rec.index, rec.timeSec, d);
      text.byte(NEWLINE);
      printed++;
    } else if (d.roce) {
      if (verbose) out.stdout(`${fieldTree(rec.index, t, rec.data.byteLength, d, rec.data)}\n\n`);
      else {
        writeSummaryLine(text, rec.index, t, d);
        text.byte(NEWLINE);
      }
      printed++;
    }
  }
  text.end();
  const result = { format: ended?.format ?? 'pcap', error: ended?.error ?? null, records: { length: read } };
  if (!json) {
    out.stderr(
      `${read} frames read${ended === null ? '' : ` (${result.format})`}, ${roceFrames} RoCE, ${malformed} malformed, ${badIcrc} with a bad ICRC${truncated > 0 ? `, ${truncated} truncated by the capture (headers decoded, ICRC not captured)` : ''}${printed < roceFrames ? `, ${printed} shown` : ''}\n`,
    );
  }
  if (result.error !== null) {
    out.stderr(`roce decode: ${file}: ${describeCaptureError(result)}\n`);
    return 1;
  }
  return 0;
}
