/**
 * The capture a capture command (`roce decode`, `analyze`, `ladder`, `plot`, `replay`) reads: the
 * file the user named (FILE or `-r FILE`), a FIFO, or standard input, given as `-` or by naming
 * no file with standard input not a terminal (`tcpdump --immediate-mode -U -w - udp port 4791 |
 * roce decode`). Never a file of its own instead: with no file and a terminal on standard input
 * the command prints its usage and exits 2. What cannot be read, or is not a capture at all, is
 * said here, once for every command.
 */
import * as fs from 'node:fs';
import { fileErrorText } from '../base/file-error';
import type { Output } from './output';
import { STDIN_PATH, streamCaptureFile } from '../analysis/capture-stream';
import type { WireError } from '../packets/errors';
import { iterateCapture } from '../packets/pcap';

export interface CaptureInput {
  /** What to open (`-` for standard input). */
  path: string;
  /** How reports and messages name it. */
  name: string;
  /** A regular file's size; 0 for a pipe, a FIFO or standard input, read as they come. */
  bytes: number;
  /** Read as it comes, forward only: a pipe, a FIFO, standard input. */
  stream: boolean;
}

/** The exit status of a command whose input cannot be read or is not a capture. */
export const BAD_INPUT_STATUS = 2;

/** The `usage:` lines at the head of a command's help. */
function usageLines(usage: string): string {
  const end = usage.indexOf('\n\n');
  return end < 0 ? usage : usage.slice(0, end);
}

/**
 * The input `file` names (undefined: none named), or null when there is none to read (the reason
 * is on stderr; the command exits `BAD_INPUT_STATUS`). `stdinIsTerminal`: a terminal on standard
 * input would wait for someone to type a capture. `usage` is the command's help, whose usage
 * lines are printed when there is no input.
 */
export function captureInput(command: string, file: string | undefined, out: Output, stdinIsTerminal: boolean, usage: string): CaptureInput | null {
  if (file === undefined) {
    if (stdinIsTerminal) {
      out.stderr(`roce ${command}: no capture given: name a FILE (or -r FILE), or pipe one into standard input (roce ${command} -h)\n${usageLines(usage)}\n`);
      return null;
    }
    file = STDIN_PATH;
  }
  if (file === STDIN_PATH) {
    if (stdinIsTerminal) {
      out.stderr(`roce ${command}: standard input is a terminal; pipe a capture in (tcpdump --immediate-mode -U -w - udp port 4791 | roce ${command} -)\n`);
      return null;
    }
    return { path: file, name: 'stdin', bytes: 0, stream: true };
  }
  let unreadable = '';
  let st: fs.Stats | null = null;
  try {
    st = fs.statSync(file);
    if (st.isDirectory()) unreadable = 'is a directory';
    else fs.accessSync(file, fs.constants.R_OK);
  } catch (e) {
    unreadable = fileErrorText(e);
  }
  if (unreadable !== '' || st === null) {
    out.stderr(`roce ${command}: cannot read ${file}: ${unreadable}\n`);
    return null;
  }
  const stream = !st.isFile();
  return { path: file, name: file, bytes: stream ? 0 : st.size, stream };
}

/**
 * Whether reading that ended with `error` found no capture at all: the input does not start with
 * a whole pcap or pcapng file header (it is empty, a text file, or cut inside the header), so the
 * error lies at its first byte. A capture that goes wrong later is one that ends early.
 */
export function isNotACapture(error: WireError | null): error is WireError {
  return error !== null && error.offset === 0;
}

/**
 * How reading the capture at `source` (a regular file's path, or the bytes of one) ends if it ends
 * before its first record, or null: reads only as far as that record.
 */
export function captureStartError(source: string | Uint8Array): WireError | null {
  if (typeof source !== 'string') {
    const step = iterateCapture(source).next();
    return step.done === true ? step.value : null;
  }
  const it = streamCaptureFile(source);
  const step = it.next();
  if (step.done === true) return step.value.error;
  it.return({ format: 'pcap', error: null });
  return null;
}

/** Says on stderr that `name` is not a capture, and why. */
export function reportNotACapture(command: string, name: string, error: WireError, out: Output): void {
  out.stderr(`roce ${command}: ${name}: not a pcap or pcapng capture: ${error.reason}\n`);
}

/** How long to wait for a non-blocking standard input that has nothing yet, before trying again. */
const RETRY_MS = 1;

/**
 * The whole input in memory, for a command that needs it at once (`roce replay`, and `roce
 * ladder`, which reads it twice); null when it cannot be read (the reason is on stderr).
 */
export function readWholeInput(command: string, input: CaptureInput, out: Output): Uint8Array | null {
  try {
    if (input.path !== STDIN_PATH) return fs.readFileSync(input.path);
    const chunks: Uint8Array[] = [];
    const sleeper = new Int32Array(new SharedArrayBuffer(4));
    const chunk = new Uint8Array(1 << 20);
    for (;;) {
      let n: number;
      try {
        n = fs.readSync(0, chunk, 0, chunk.length, null);
      } catch (e) {
        // A standard input another process made non-blocking: nothing has arrived yet.
        if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
        Atomics.wait(sleeper, 0, 0, RETRY_MS);
        continue;
      }
      if (n === 0) break;
      chunks.push(chunk.slice(0, n));
    }
    return Buffer.concat(chunks);
  } catch (e) {
    out.stderr(`roce ${command}: cannot read ${input.name}: ${fileErrorText(e)}\n`);
    return null;
  }
}

/**
 * For standard input: Ctrl-C in a terminal goes to the whole pipeline (`tcpdump … | roce analyze
 * -`). The capturing tool then ends, which ends this input, and the command reports what came, as
 * tshark does on Ctrl-C, instead of dying with it. A second interrupt, when the command gets to see
 * it (it waits for input without looking), ends the command (exit status 130). A FIFO named as FILE
 * has its writer elsewhere, which Ctrl-C does not reach: there it ends the command at once, as by
 * default.
 */
export function finishOnInterrupt(input: CaptureInput): void {
  if (input.path !== STDIN_PATH) return;
  let seen = 0;
  process.on('SIGINT', () => {
    seen++;
    if (seen > 1) process.exit(130);
  });
}
