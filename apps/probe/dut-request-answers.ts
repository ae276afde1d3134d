/**
 * What this stack does itself when one of the DUT's requests reaches the probe driver, for the
 * events that need more than a fault rule, on the in-memory link and live alike:
 *  - `seq-nak`: the request (dropped by its rule before our responder took it) is answered with a
 *    PSN sequence NAK for its own PSN, and our responder then behaves as one that has NAKed a gap:
 *    it drops what follows silently until that PSN comes again (IBTA vol. 1 §9.7.5.2.2, one NAK per
 *    gap; rxe `rxe_resp.c` sent_psn_nak). A later request of the same receive burst may have drawn
 *    our responder's own NAK for the gap already: then none is added.
 *  - `cnp`: the event's CNPs go from our QP to the DUT's, the first at once and the others
 *    `interval-us` apart on the device's clock.
 * Each acts on the event's `iter`-th copy of the request (every copy for `all`).
 */
import { psnAdd } from '../../base/psn';
import { NakCode } from '../../packets/aeth';
import type { Device } from '../../stack/device';
import type { QueuePair } from '../../stack/queue-pair';
import { sendNak } from '../../stack/responder';
import type { ProbeQp } from './measurements';
import type { FrameRecord } from './probe-driver';
import { EventType, type ProbeEvent, type ProbeScenario } from './scenario';

/**
 * The probe driver's `onReceived` for `scenario` (null when no event needs one): `qps` are the
 * QPs as numbers on the wire, `ours` this stack's QPs in the same order, on `dev`.
 */
export function dutRequestAnswers(
  scenario: ProbeScenario,
  qps: readonly ProbeQp[],
  ours: readonly QueuePair[],
  dev: Device,
): ((r: FrameRecord) => void) | null {
  const watch = (type: EventType): { e: ProbeEvent; seen: number; psn: number }[] =>
    scenario.events.filter((e) => e.type === type).map((e) => ({ e, seen: 0, psn: psnAdd(qps[e.qpn]?.requestStartPsn ?? 0, e.psn) }));
  const naks = watch(EventType.SEQ_NAK);
  const cnps = watch(EventType.CNP);
  if (naks.length === 0 && cnps.length === 0) return null;
  const clock = dev.clock;
  // The request at the event's PSN to our QP, on the copy the event names.
  const hit = (w: { e: ProbeEvent; seen: number; psn: number }, r: FrameRecord): QueuePair | null => {
    const qp = ours[w.e.qpn];
    if (qp === undefined || r.dir !== 'rx' || r.psn !== w.psn || r.destQp !== qp.qpNum) return null;
    w.seen++;
    return w.e.iter === 'all' || w.seen === w.e.iter ? qp : null;
  };
  return (r: FrameRecord): void => {
    for (const c of cnps) {
      const qp = hit(c, r);
      if (qp === null) continue;
      const now = clock.now();
      for (let k = 0; k < (c.e.count ?? 1); k++) clock.schedule(now + k * (c.e.intervalUs ?? 0) * 1000, () => dev.sendCnp(qp));
    }
    if (r.fate !== 'dropped') return;
    for (const n of naks) {
      const qp = hit(n, r);
      if (qp === null) continue;
      // After the driver's receive call, as the stack would have answered it.
      clock.schedule(clock.now(), () => {
        if (qp.resp.sentPsnNak) return;
        sendNak(qp, NakCode.PSN_SEQUENCE_ERROR, n.psn, `roce probe seq-nak event (line ${n.e.line})`);
        qp.resp.sentPsnNak = true;
        qp.ctx.flush();
      });
    }
  };
}
