/** The shared NicDriver suite against the in-memory link on a virtual clock. */
import { VirtualClock } from '../../base/clock';
import { createMemoryLink } from '../../nic-driver/memory-link';
import { driverSuite } from './driver-suite';

driverSuite('memory link', async () => {
  const clock = new VirtualClock();
  const link = createMemoryLink({ clock, seed: 1, faults: { aToB: { delayNs: 1000, jitterNs: 500 }, bToA: { delayNs: 1000 } } });
  return {
    a: link.a,
    b: link.b,
    pump: async () => {
      clock.runUntilIdle();
    },
    close: async () => link.close(),
  };
});
