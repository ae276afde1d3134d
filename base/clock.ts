/**
 * Time for the stack. Every timer of the transport (local ACK timeout, RNR
 * wait, ACK coalescing) goes through a `Clock`, so a simulated run on a
 * `VirtualClock` is deterministic and runs as fast as the CPU allows.
 * Time is in nanoseconds, as a number (exact up to 2^53 ns, about 104 days).
 */

export interface TimerId {
  readonly id: number;
}

/** Time and timers as the engine sees them: `VirtualClock` for simulation, `RealClock` for the wire. */
export interface Clock {
  /** Current time in nanoseconds. */
  now(): number;
  /** Runs `fn` at `atNs` (or as soon as possible when that is in the past). */
  schedule(atNs: number, fn: () => void): TimerId;
  cancel(t: TimerId): void;
  /** Runs `fn` soon, after the current work (a zero-delay event; setImmediate in real time). */
  soon(fn: () => void): void;
}

interface Event {
  at: number;
  seq: number;
  fn: () => void;
  id: number;
}

/**
 * A virtual clock with an event queue. Events at the same time run in the
 * order they were scheduled. Time only moves when `step`/`run*` moves it.
 */
export class VirtualClock implements Clock {
  private t: number;
  private seq = 0;
  private readonly heap: Event[] = [];
  private readonly cancelled = new Set<number>();

  constructor(startNs = 0) {
    this.t = startNs;
  }

  now(): number {
    return this.t;
  }

  schedule(atNs: number, fn: () => void): TimerId {
    const id = ++this.seq;
    this.push({ at: Math.max(atNs, this.t), seq: id, fn, id });
    return { id };
  }

  cancel(t: TimerId): void {
    this.cancelled.add(t.id);
    // Cancelled events leave the heap lazily, when they come to its head. A run whose timers are
    // mostly cancelled long before they are due (a retransmission timer per message, due a
    // timeout later) would keep them all until then: compact once they are half of the heap.
    if (this.cancelled.size >= 1024 && this.cancelled.size * 2 >= this.heap.length) this.compact();
  }

  soon(fn: () => void): void {
    this.schedule(this.t, fn);
  }

  /** Number of events waiting (cancelled ones included until they are popped). */
  get pending(): number {
    return this.heap.length;
  }

  /** Time of the next event, or null when there is none. */
  nextAt(): number | null {
    this.dropCancelledHead();
    return this.heap[0]?.at ?? null;
  }

  /** Runs the next event; false when there is none. */
  step(): boolean {
    this.dropCancelledHead();
    const e = this.pop();
    if (e === undefined) return false;
    this.t = e.at;
    e.fn();
    return true;
  }

  /** Runs events until none is left or `maxEvents` ran; returns the number run. */
  runUntilIdle(maxEvents = Number.MAX_SAFE_INTEGER): number {
    let n = 0;
    while (n < maxEvents && this.step()) n++;
    return n;
  }

  /** Runs every event due at or before `tNs`, then sets the time to `tNs`. */
  runUntil(tNs: number, maxEvents = Number.MAX_SAFE_INTEGER): number {
    let n = 0;
    for (;;) {
      const next = this.nextAt();
      if (next === null || next > tNs || n >= maxEvents) break;
      this.step();
      n++;
    }
    if (tNs > this.t) this.t = tNs;
    return n;
  }

  /** Runs events while `cond()` holds and events remain; returns the number run. */
  runWhile(cond: () => boolean, maxEvents = Number.MAX_SAFE_INTEGER): number {
    let n = 0;
    while (n < maxEvents && cond() && this.step()) n++;
    return n;
  }

  private dropCancelledHead(): void {
    while (this.heap.length > 0 && this.cancelled.has((this.heap[0] as Event).id)) {
      this.cancelled.delete((this.heap[0] as Event).id);
      this.pop();
    }
  }

  /** Drops every cancelled event and rebuilds the heap; ids cancelled after their event ran go too. */
  private compact(): void {
    const h = this.heap;
    let w = 0;
    for (let r = 0; r < h.length; r++) {
      const e = h[r] as Event;
      if (!this.cancelled.has(e.id)) h[w++] = e;
    }
    h.length = w;
    this.cancelled.clear();
    for (let i = (w >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  private siftDown(start: number): void {
    const h = this.heap;
    let i = start;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.less(h[l] as Event, h[m] as Event)) m = l;
      if (r < h.length && this.less(h[r] as Event, h[m] as Event)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m] as Event, h[i] as Event];
      i = m;
    }
  }

  private less(a: Event, b: Event): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  private push(e: Event): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(h[i] as Event, h[p] as Event)) break;
      [h[i], h[p]] = [h[p] as Event, h[i] as Event];
      i = p;
    }
  }

  private pop(): Event | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last !== undefined) {
      h[0] = last;
      this.siftDown(0);
    }
    return top;
  }
}

/** Wall-clock time from `process.hrtime`, timers from `setTimeout` (unref'd). */
export class RealClock implements Clock {
  private seq = 0;
  private readonly soonQueue: (() => void)[] = [];
  private soonScheduled = false;
  private readonly timers = new Map<number, NodeJS.Timeout>();
  private readonly origin = process.hrtime.bigint();

  /** `origin` as a number (exact while the host has been up less than 2^53 ns, 104 days). */
  private readonly originNs = Number(this.origin);

  now(): number {
    return Number(process.hrtime.bigint() - this.origin);
  }

  /**
   * A CLOCK_MONOTONIC time in ns (`process.hrtime`'s clock, and a driver's `rxTimeNs`,
   * nic-driver/driver.ts `RxTimestamps`) on this clock, comparable with `now()`: this clock is the
   * monotonic clock less the moment it was made. NaN stays NaN.
   */
  fromMonotonicNs(monoNs: number): number {
    return monoNs - this.originNs;
  }

  /**
   * Never runs `fn` before `atNs`. Node measures a timeout from libuv's loop time, which is taken once
   * per turn of the event loop and counts whole milliseconds: a timer set late in a turn can come due
   * up to a millisecond early by `now()`, and an RNR wait that ends early finds the requester still
   * waiting, with nothing to wake it until the local ACK timeout. Such a timer is set again for the rest.
   */
  schedule(atNs: number, fn: () => void): TimerId {
    const id = ++this.seq;
    const arm = (): void => {
      const h = setTimeout(
        () => {
          if (this.now() < atNs) {
            arm();
            return;
          }
          this.timers.delete(id);
          fn();
        },
        Math.max(0, (atNs - this.now()) / 1e6),
      );
      h.unref();
      this.timers.set(id, h);
    };
    arm();
    return { id };
  }

  /** Work given to `soon`, in order, run by one immediate (or by `runSoon`, whichever comes first). */
  soon(fn: () => void): void {
    this.soonQueue.push(fn);
    if (!this.soonScheduled) {
      this.soonScheduled = true;
      setImmediate(this.drainSoon);
    }
  }

  /**
   * Runs the work given to `soon` now, and what that work gives to `soon` in turn. A loop that
   * spins without yielding to the event loop (the busy-poll wait, apps/host/host-device.ts) calls it,
   * so a transmit kicked by a post leaves at once instead of a turn of the event loop later.
   */
  runSoon(): void {
    const q = this.soonQueue;
    // Index, not shift: work added while draining runs in this pass too. What ran leaves the
    // queue even when one throws, so nothing runs twice.
    let i = 0;
    try {
      for (; i < q.length; i++) (q[i] as () => void)();
    } finally {
      q.splice(0, Math.min(i + 1, q.length));
    }
  }

  private readonly drainSoon = (): void => {
    this.soonScheduled = false;
    this.runSoon();
  };

  cancel(t: TimerId): void {
    const h = this.timers.get(t.id);
    if (h !== undefined) clearTimeout(h);
    this.timers.delete(t.id);
  }
}
