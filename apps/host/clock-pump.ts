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

/** One turn of the event loop (what a polling loop awaits between polls when it spins). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
