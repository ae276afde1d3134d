/**
 * Items kept outside the heap and read back in the order of a numeric key: an external merge
 * sort. A report that lists every message of a capture (`roce analyze --json`) must print them
 * in order after the counts it learns only at the end; kept as objects they made the command's
 * memory grow with the capture (about 300 bytes of heap a message).
 *
 * Each item is pushed as one line of text with its key, and becomes UTF-8 bytes in the run being
 * filled at once (a string kept until its run is written lives long enough to burden the GC). A
 * full run is sorted by key (stably: equal keys keep their push order) and written to the store.
 * Reading merges the runs, each through a small buffer. The heap holds the run being filled
 * (RUN_BYTES) and, while reading, READ_BYTES for each run written: 1/64 of the spooled text.
 *
 * The store is where the runs' bytes go (a temporary file, given by the composition root; an
 * array of bytes in tests). A line must not hold a newline: JSON text never does, as
 * `JSON.stringify` escapes it.
 */
import { ProgrammingError, ProgrammingErrorCode, internalError } from './programming-error';

/** Where the runs are written and read back; several spools may share one. */
export interface SpoolStore {
  /** Adds `bytes` at the end; returns the position they start at. */
  append(bytes: Uint8Array): number;
  /** Reads up to `into.length` bytes at `position`; returns how many. */
  read(into: Uint8Array, position: number): number;
}

/** Bytes of lines gathered before a run is sorted and written. */
const RUN_BYTES = 4 << 20;
const NEWLINE = 0x0a;
const SPACE = 0x20;
/** Bytes read from a run at a time while merging. */
const READ_BYTES = 64 << 10;

interface Run {
  start: number;
  end: number;
}

/** A run being merged: its next line, read through a buffer. */
class RunCursor {
  private readonly buf: Uint8Array;
  /** Text read and decoded but not yet taken, from `at`. */
  private text = '';
  private at = 0;
  private next: number;
  private readonly decoder = new TextDecoder();
  key = 0;
  line = '';

  constructor(
    private readonly store: SpoolStore,
    private readonly run: Run,
    readBytes: number,
  ) {
    this.buf = new Uint8Array(readBytes);
    this.next = run.start;
  }

  /** Moves to the run's next line; false at the run's end. */
  advance(): boolean {
    for (;;) {
      const nl = this.text.indexOf('\n', this.at);
      if (nl >= 0) {
        const space = this.text.indexOf(' ', this.at);
        this.key = Number(this.text.slice(this.at, space));
        this.line = this.text.slice(space + 1, nl);
        this.at = nl + 1;
        return true;
      }
      if (this.next >= this.run.end) {
        if (this.at !== this.text.length) throw internalError('a spool run ends inside a line');
        return false;
      }
      const n = this.store.read(this.buf.subarray(0, Math.min(this.buf.length, this.run.end - this.next)), this.next);
      if (n <= 0) throw internalError(`the spool store gave ${n} bytes at ${this.next}, inside a run written there`);
      this.next += n;
      // A character cut at the end of a read is completed by the next (stream: true).
      this.text = this.text.slice(this.at) + this.decoder.decode(this.buf.subarray(0, n), { stream: this.next < this.run.end });
      this.at = 0;
    }
  }
}

export class SortedSpool {
  /** The run being filled: each line's UTF-8 bytes end to end, with its key and where it starts. */
  private run = new Uint8Array(0);
  private used = 0;
  private keys = new Float64Array(1024);
  private starts = new Uint32Array(1025);
  private count = 0;
  private readonly runs: Run[] = [];
  private items = 0;
  private reading = false;
  private readonly encoder = new TextEncoder();

  private readonly readBytes: number;
  private readonly runBytes: number;

  /** `runBytes` and `readBytes` (the run and merge buffer sizes) are for tests; the defaults suit a report. */
  constructor(
    private readonly store: SpoolStore,
    opts: { runBytes?: number; readBytes?: number } = {},
  ) {
    this.runBytes = opts.runBytes ?? RUN_BYTES;
    this.readBytes = opts.readBytes ?? READ_BYTES;
  }

  /** How many lines were pushed. */
  get length(): number {
    return this.items;
  }

  /** Adds `line` (no newline in it) under `key`, a finite number. */
  push(key: number, line: string): void {
    if (this.reading) throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'a spool cannot take lines once read');
    if (!Number.isFinite(key)) throw new ProgrammingError(ProgrammingErrorCode.Misuse, `a spool key must be a finite number, not ${key}`);
    if (line.includes('\n')) throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'a spool line cannot hold a newline');
    // The text becomes bytes at once, so the string dies young (kept, strings made the GC work).
    // A UTF-8 character takes at most 3 bytes per UTF-16 unit.
    if (this.used + 3 * line.length > this.run.length) {
      this.flushRun();
      // The run's buffer is made at the first line (a spool that gets none costs nothing), and
      // made larger for a line longer than it.
      if (3 * line.length > this.run.length) this.run = new Uint8Array(Math.max(this.runBytes, 3 * line.length));
    }
    if (this.count === this.keys.length) {
      const keys = new Float64Array(this.keys.length * 2);
      keys.set(this.keys);
      this.keys = keys;
      const starts = new Uint32Array(keys.length + 1);
      starts.set(this.starts);
      this.starts = starts;
    }
    this.keys[this.count] = key;
    this.starts[this.count] = this.used;
    this.used += this.encoder.encodeInto(line, this.run.subarray(this.used)).written;
    this.count++;
    this.starts[this.count] = this.used;
    this.items++;
  }

  /** The lines in key order (equal keys in push order). The spool takes no more lines after this. */
  *lines(): Generator<string> {
    this.reading = true;
    this.flushRun();
    // A binary heap of the runs' cursors by (key, run index): the run index keeps equal keys in
    // push order, since earlier runs hold earlier lines.
    const heap: { c: RunCursor; run: number }[] = [];
    const less = (a: { c: RunCursor; run: number }, b: { c: RunCursor; run: number }): boolean => a.c.key < b.c.key || (a.c.key === b.c.key && a.run < b.run);
    const up = (i: number): void => {
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!less(heap[i]!, heap[parent]!)) return;
        [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
        i = parent;
      }
    };
    const down = (i: number): void => {
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === i) return;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    };
    this.runs.forEach((run, i) => {
      const c = new RunCursor(this.store, run, this.readBytes);
      if (c.advance()) {
        heap.push({ c, run: i });
        up(heap.length - 1);
      }
    });
    while (heap.length > 0) {
      const top = heap[0]!;
      yield top.c.line;
      if (!top.c.advance()) {
        const last = heap.pop()!;
        if (heap.length === 0) return;
        heap[0] = last;
      }
      down(0);
    }
  }

  /** Sorts the run being filled by key (stably) and writes it as lines "key text\n". */
  private flushRun(): void {
    const n = this.count;
    if (n === 0) return;
    const keys = this.keys;
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    order.sort((a, b) => keys[a]! - keys[b]! || a - b);
    // A finite number's text is ASCII (digits, '-', '.', 'e', '+'): a byte a character.
    const texts = new Array<string>(n);
    let size = 0;
    for (let i = 0; i < n; i++) {
      const t = String(keys[i]!);
      texts[i] = t;
      size += t.length + 1 + this.starts[i + 1]! - this.starts[i]! + 1;
    }
    const out = new Uint8Array(size);
    let at = 0;
    for (let k = 0; k < n; k++) {
      const i = order[k]!;
      const t = texts[i]!;
      for (let j = 0; j < t.length; j++) out[at++] = t.charCodeAt(j);
      out[at++] = SPACE;
      out.set(this.run.subarray(this.starts[i]!, this.starts[i + 1]!), at);
      at += this.starts[i + 1]! - this.starts[i]!;
      out[at++] = NEWLINE;
    }
    const start = this.store.append(out);
    this.runs.push({ start, end: start + out.length });
    this.used = 0;
    this.count = 0;
  }
}
