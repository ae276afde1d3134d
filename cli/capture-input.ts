/**
 * The capture a reading command (`roce decode`, `roce analyze`) takes: a file, a FIFO, or standard
 * input given as `-` (`tcpdump --immediate-mode -U -w - udp port 4791 | roce decode -`). Without
 * one, the sample capture shipped in captures/. What cannot be read is said here, once for both.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileErrorText } from './file-error';
import type { Output } from './output';
import { STDIN_PATH } from '../analysis/capture-stream';

/** The capture decoded when no FILE is given. */
export const DEFAULT_CAPTURE = path.join(__dirname, '..', '..', 'captures', 'rc-conversation.pcap');

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

/**
 * The input `file` names, or null when it cannot be read (the reason is on stderr; the command
 * exits 2). `stdinIsTerminal`: a terminal on standard input would wait for typed bytes.
 */
export function captureInput(command: string, file: string | undefined, out: Output, stdinIsTerminal: boolean): CaptureInput | null {
  if (file === undefined) {
    out.stderr(`roce ${command}: no FILE given; ${command === 'decode' ? 'decoding' : 'analysing'} the bundled sample ${path.relative(process.cwd(), DEFAULT_CAPTURE) || DEFAULT_CAPTURE}\n`);
    file = DEFAULT_CAPTURE;
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
