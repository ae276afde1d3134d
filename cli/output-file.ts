/**
 * The file a command writes its output to (`roce ladder -o`, `roce plot -o`, `roce demo --pcap`). What stops it
 * (a directory, a missing folder, no permission, a full disk) is one line naming the file, said
 * before the capture is read when it can be seen then, and the command exits 2.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileErrorText } from '../base/file-error';
import type { Output } from './output';

/** The exit status of a command whose output file cannot be written. */
export const OUTPUT_FILE_STATUS = 2;

/**
 * Why `dest` surely cannot be written, seen without writing it (it is a directory, its folder does
 * not exist or is not one), or null. The write itself may still fail: `writeOutputFile` says so.
 */
export function outputFileProblem(dest: string): string | null {
  try {
    if (fs.statSync(dest).isDirectory()) return 'is a directory';
  } catch {
    // Not there yet (or not to be looked at): the write tells.
  }
  try {
    if (!fs.statSync(path.dirname(dest)).isDirectory()) return 'a part of the path is not a directory';
  } catch (e) {
    return fileErrorText(e, true);
  }
  return null;
}

/**
 * Whether `dest` (`-`: standard output) can be written as far as can be seen before the capture is
 * read: true, or false after saying why on stderr (the command then exits OUTPUT_FILE_STATUS).
 */
export function outputFileWritable(command: string, dest: string, out: Output): boolean {
  const why = dest === '-' ? null : outputFileProblem(dest);
  if (why === null) return true;
  reportOutputFile(command, dest, why, out);
  return false;
}

/** Says on stderr that `dest` cannot be written, and why. */
export function reportOutputFile(command: string, dest: string, why: string, out: Output): void {
  out.stderr(`roce ${command}: cannot write ${dest}: ${why}\n`);
}

/**
 * Writes `content` to `dest`; false when that failed (the reason is on stderr). A file left part
 * written (the disk filled up) is removed rather than left broken.
 */
export function writeOutputFile(command: string, dest: string, content: string | Uint8Array, out: Output): boolean {
  let fd: number;
  try {
    fd = fs.openSync(dest, 'w');
  } catch (e) {
    reportOutputFile(command, dest, fileErrorText(e, true), out);
    return false;
  }
  try {
    fs.writeFileSync(fd, content);
    return true;
  } catch (e) {
    reportOutputFile(command, dest, fileErrorText(e, true), out);
    try {
      if (fs.fstatSync(fd).isFile()) fs.unlinkSync(dest);
    } catch {
      // Already gone, or not ours to remove: the message above stands.
    }
    return false;
  } finally {
    fs.closeSync(fd);
  }
}
