/**
 * Buffered stdout/stderr for the CLI: many small writes become a few large
 * ones, and a closed pipe (`roce decode … | head`) ends output quietly.
 */
export interface Output {
  stdout(text: string): void;
  /**
   * Text already UTF-8 encoded, whole characters only. Returns true when `chunk` has been written
   * out and the caller may reuse it; else the Output keeps it (it is not copied). Node writes
   * stdout to files and terminals synchronously, and `processOutput` makes a pipe's writes block
   * too, so a slow reader holds the writer back and nothing piles up in memory.
   */
  stdoutBytes(chunk: Uint8Array): boolean;
  stderr(text: string): void;
  flush(): Promise<void>;
  /**
   * True once stdout's reader has closed it (`roce decode big.pcap | head`): nothing printed from
   * then on is read, so a command that prints as it goes stops instead of working through the rest.
   */
  readerGone(): boolean;
}

/** The part of a stdio stream's libuv handle used here (Node's Pipe handle has it). */
interface BlockingHandle {
  setBlocking?: (blocking: boolean) => number;
}

/** The process's Output, which also tells whether writing standard output failed (a full disk). */
export interface ProcessOutput extends Output {
  /** The error that ended standard output, other than its reader going (EPIPE), or null. */
  failure(): NodeJS.ErrnoException | null;
}

export function processOutput(): ProcessOutput {
  let buf: string[] = [];
  let size = 0;
  let closed = false;
  // `roce decode big.pcap > /dev/full`: the write fails. Output then ends as for a reader gone, and
  // the command's caller says why (cli/main.ts), in one line rather than a stack trace.
  let failure: NodeJS.ErrnoException | null = null;
  // Node queues what a pipe does not take at once, in memory: `roce analyze -m big.pcap | less`
  // held the whole report (measured: 1.4 GB against 0.74 to a file). Blocking writes make a slow
  // reader hold the command back instead, as a file or terminal does.
  if (!process.stdout.isTTY) (process.stdout as unknown as { _handle?: BlockingHandle })._handle?.setBlocking?.(true);
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') closed = true;
    else failure ??= e;
  });
  // A write's error is emitted on a later tick, but the stream records it at once: a command that
  // prints in one synchronous loop sees it there.
  const gone = (): boolean => {
    if (closed || failure !== null) return true;
    const e = process.stdout.errored as NodeJS.ErrnoException | null;
    if (e === null) return false;
    if (e.code !== 'EPIPE') failure = e;
    return true;
  };
  const drain = (): void => {
    if (buf.length === 0 || gone()) return;
    process.stdout.write(buf.join(''));
    buf = [];
    size = 0;
  };
  return {
    stdout(text) {
      if (gone()) return;
      buf.push(text);
      size += text.length;
      if (size >= 1 << 16) drain();
    },
    stdoutBytes(chunk) {
      if (gone()) return true;
      drain();
      process.stdout.write(chunk);
      // Nothing queued in the stream: the write went out synchronously and the chunk is free.
      return process.stdout.writableLength === 0;
    },
    stderr(text) {
      drain();
      process.stderr.write(text);
    },
    flush() {
      drain();
      return new Promise((resolve) => {
        if (gone() || process.stdout.writableLength === 0) resolve();
        else process.stdout.once('drain', () => resolve());
      });
    },
    readerGone: gone,
    failure: () => {
      gone();
      return failure;
    },
  };
}

/** An Output that collects text (for tests). */
export function memoryOutput(): Output & { out: string; err: string } {
  const decoder = new TextDecoder();
  const o = {
    out: '',
    err: '',
    stdout(text: string) {
      o.out += text;
    },
    stdoutBytes(chunk: Uint8Array) {
      o.out += decoder.decode(chunk);
      return true;
    },
    stderr(text: string) {
      o.err += text;
    },
    flush: () => Promise.resolve(),
    readerGone: () => false,
  };
  return o;
}
