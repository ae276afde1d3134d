/**
 * Buffered stdout/stderr for the CLI: many small writes become a few large
 * ones, and a closed pipe (`roce decode … | head`) ends output quietly.
 */
export interface Output {
  stdout(text: string): void;
  /**
   * Text already UTF-8 encoded, whole characters only. Returns true when `chunk` has been written
   * out and the caller may reuse it; else the Output keeps it (it is not copied). On Linux, Node
   * writes stdout to files, pipes and terminals synchronously, so a slow reader holds the writer
   * back and nothing piles up in memory.
   */
  stdoutBytes(chunk: Uint8Array): boolean;
  stderr(text: string): void;
  flush(): Promise<void>;
}

export function processOutput(): Output {
  let buf: string[] = [];
  let size = 0;
  let closed = false;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') closed = true;
    else throw e;
  });
  const drain = (): void => {
    if (buf.length === 0 || closed) return;
    process.stdout.write(buf.join(''));
    buf = [];
    size = 0;
  };
  return {
    stdout(text) {
      if (closed) return;
      buf.push(text);
      size += text.length;
      if (size >= 1 << 16) drain();
    },
    stdoutBytes(chunk) {
      if (closed) return true;
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
        if (closed || process.stdout.writableLength === 0) resolve();
        else process.stdout.once('drain', () => resolve());
      });
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
  };
  return o;
}
