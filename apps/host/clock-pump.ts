/**
 * Drives a `VirtualClock` from the Node event loop, for runs whose two ends
 * live in one process but talk over real sockets (the out-of-band TCP of
 * perftest and rc_pingpong): on every turn of the loop it runs the events of
 * the next instant of virtual time, then yields, so application code polling
 * completion queues (and TCP callbacks) get their turn before time moves on.
 * Virtual time never waits for wall time, so a run takes as long as the CPU
 * needs, and timings are those of the simulated link.
 */
import type { VirtualClock } from '../../base/clock';

export interface ClockPump {
  /** Events run so far. */
  readonly events: number;
  stop(): void;
}

export function pumpVirtualClock(clock: VirtualClock, maxEventsPerTurn = 10_000): ClockPump {
  let stopped = false;
  let events = 0;
  const turn = (): void => {
    if (stopped) return;
    const next = clock.nextAt();
    if (next !== null) events += clock.runUntil(next, maxEventsPerTurn);
    setImmediate(turn);
  };
  setImmediate(turn);
  return {
    get events() {
      return events;
    },
    stop() {
      stopped = true;
    },
  };
}

/** One turn of the event loop (what a polling loop awaits between polls). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * How the perftest and pingpong loops wait when a completion queue is empty. By default they spin
 * (`nextTurn`: poll again on the next turn of the event loop, as the C tools spin on ibv_poll_cq).
 * A host device that is not in busy-poll mode registers a wait that sleeps until its driver reports
 * received frames (or a short fallback timer fires), so an idle run costs no CPU and leaves the
 * cores to the kernel's packet processing.
 */
const idleWaits = new WeakMap<object, () => Promise<void>>();

export function setIdleWait(dev: object, wait: (() => Promise<void>) | null): void {
  if (wait === null) idleWaits.delete(dev);
  else idleWaits.set(dev, wait);
}

export function idleWaitFor(dev: object): () => Promise<void> {
  return idleWaits.get(dev) ?? nextTurn;
}
