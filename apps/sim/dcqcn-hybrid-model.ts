/**
 * A third oracle for the packet-level simulation: N DCQCN flows, each reaction point
 * discrete (model-reaction-point.ts), on one fluid queue. It has what the two fixed points leave
 * out, a queue that moves and is shared, and none of the packet simulation's machinery: no frames,
 * no switch, no pacer, no stack.
 *
 * In steps of `stepUs`:
 *   dq/dt = Σ R_i − C          (frame bytes; C is the port's rate of frame bytes), 0 <= q <= buffer
 *   p     = RED(q)              (0 up to Kmin, pmax·(q − Kmin)/(Kmax − Kmin) up to Kmax, 1 above)
 * and a flow with k packets marked at p in the step has a marked one with probability 1 − e^(−p·k)
 * (marks a Poisson process of p per packet), independently of the others. Where the packets are
 * marked follows the switch (nic-driver/star-switch.ts, `EcnMarking.at`):
 *   - on departure (the default, as switches and the cited simulators mark): the port sends
 *     C·dt of packets in the step, each flow its share of what joined the queue q/C earlier, and
 *     they are marked on q as they leave. A marked packet is on its way to the receiver, so the
 *     mark reaches the RP after the base feedback delay alone;
 *   - on arrival (`marking: 'enqueue'`): flow i's k = R_i·dt/(8·frame) packets of the step are
 *     marked on q as they join, and a marked one waits out the queue, q/C, before the base delay.
 * The NP judges a mark as it arrives, as a NIC does, and its CNP reaches the flow's RP at once (the
 * base delay stands for both ways). The marking probability it reports is marks over the packets
 * judged, counted in expectation (Σ p·k), as the switch counts marked frames over frames sent. A
 * flow sends at R_i, or less when its transport's window holds it: at most window/(base + q/C),
 * which is what keeps the queue below Kmax when the flows start at the line rate.
 *
 * So where the packet simulation and this model agree, the behaviour is DCQCN's and RED's, not
 * the simulator's; where they part, the packets (their spacing, their order in the queue) matter.
 */
import { Rng } from '../../base/rng';
import { invalid } from '../../stack/errors';
import { type MarksModelInput, checkMarksModelInput } from './dcqcn-marks-model';
import { redMark } from './red-marking';
import { ModelNotificationPoint, ModelReactionPoint } from './model-reaction-point';
import type { EcnMarkingPoint } from '../../nic-driver/star-switch';

export interface HybridInput extends MarksModelInput {
  /**
   * The loop's base delay, µs, without the queueing delay: from a rate change through the port to
   * the CNP back at the RP. The model's queue answers a rate change at once, so all of it sits
   * between the mark and the RP (the fluid model's feedback delay, fluid-comparison.ts).
   */
  feedbackDelayUs: number;
  bufferBytes: number;
  /**
   * The packets a flow keeps in flight on average, at most: its transport's window (0 for none).
   * A flow then sends at most window/(base delay + q/C), as a window-limited sender does.
   */
  windowPackets: number;
  /** Where packets are marked, as the switch's `EcnMarking.at`: as they leave the queue (the default) or as they join it. */
  marking?: EcnMarkingPoint;
}

export interface HybridRun {
  /** Over the steady window. */
  fromUs: number;
  toUs: number;
  /** Per flow, Gb/s of wire bytes. */
  flowsGbps: number[];
  queueMeanBytes: number;
  queueMinBytes: number;
  queueMaxBytes: number;
  markProbability: number;
  cnpsPerFlowPerMs: number;
  /** The share of packets sent while the queue was above Kmax (all of them marked). */
  aboveKmax: number;
  /** [µs, queue bytes, Σ rates Gb/s of wire bytes] every `sampleUs`. */
  overTime: [number, number, number][];
}

// Read once: a global's lookup costs much more inside a vm context (the test runner's) than a local's.
const { min, max: maxOf, exp } = Math;

/** N flows from t = 0 at their maximum rate, `durationUs` long; figures over [steadyFromUs, durationUs]. */
export function runDcqcnHybrid(m: HybridInput, durationUs: number, steadyFromUs: number, seed = 1, stepUs = 0.25, sampleUs = 100): HybridRun {
  checkMarksModelInput(m, 'hybrid model');
  if (!(m.bufferBytes > 0)) throw invalid('the hybrid model needs a buffer');
  if (m.windowPackets > 0 && m.feedbackDelayUs <= 0) throw invalid('the hybrid model needs a feedback delay > 0 with a window');
  if (!(stepUs > 0 && durationUs > stepUs && steadyFromUs >= 0 && steadyFromUs < durationUs))
    throw invalid('the hybrid model needs 0 < step < duration and 0 <= steady from < duration');
  const atEnqueue = (m.marking ?? 'dequeue') === 'enqueue';
  if (!atEnqueue && m.marking !== undefined && m.marking !== 'dequeue')
    throw invalid(`the hybrid model marks at 'dequeue' or 'enqueue', not ${JSON.stringify(m.marking)}`);
  const n = m.flows;
  const rng = new Rng(seed);
  const rps = Array.from({ length: n }, () => new ModelReactionPoint(m.rules, m.maxRateMbps));
  const nps = Array.from({ length: n }, () => new ModelNotificationPoint(m.rules.npMinTimeBetweenCnps));
  // Marked packets on their way, per flow, by arrival time (the delay shrinks with q, so a later one could pass an earlier one; it is held behind it, as in a FIFO queue).
  const inFlight: number[][] = Array.from({ length: n }, () => []);
  const drainPerUs = (m.linkRateBps / 8e6) * (m.packetFrameBytes / m.packetWireBytes); // frame bytes per µs
  const bitsPerPacket = 8 * m.packetFrameBytes;
  const windowBits = m.windowPackets * bitsPerPacket;
  const toWire = m.packetWireBytes / m.packetFrameBytes;
  const steps = Math.round(durationUs / stepUs);
  const sampleEvery = maxOf(1, Math.round(sampleUs / stepUs));
  // Marking on departure: each step's rates, a full buffer's drain time back, so that the packets
  // leaving at t are shared among the flows as they joined the queue, q/C earlier (FIFO).
  const historySteps = atEnqueue ? 1 : Math.ceil(m.bufferBytes / drainPerUs / stepUs) + 2;
  const history = new Float64Array(historySteps * n);
  const departingPackets = (drainPerUs * stepUs) / m.packetFrameBytes;
  let q = 0;
  let qArea = 0;
  let qMin = Number.POSITIVE_INFINITY;
  let qMax = 0;
  let packets = 0;
  let marked = 0;
  let packetsAbove = 0;
  let cnps = 0;
  let from = -1;
  const rateArea = new Float64Array(n);
  const overTime: [number, number, number][] = [];
  for (let i = 0; i < steps; i++) {
    const t = i * stepUs;
    const counting = t >= steadyFromUs;
    if (counting && from < 0) from = t;
    const p = redMark(m, q);
    const queueingUs = q / drainPerUs;
    const markDelay = atEnqueue ? m.feedbackDelayUs + queueingUs : m.feedbackDelayUs;
    // On departure from a busy port: the step whose arrivals leave now, and their total rate. An
    // empty port passes each flow's packets straight through.
    const joined = atEnqueue || q === 0 ? -1 : (maxOf(0, i - 1 - Math.round(queueingUs / stepUs)) % historySteps) * n;
    let joinedRate = 0;
    if (joined >= 0) for (let f = 0; f < n; f++) joinedRate += history[joined + f]!;
    let sending = 0;
    for (let f = 0; f < n; f++) {
      const rp = rps[f]!;
      const queue = inFlight[f]!;
      while (queue.length > 0 && queue[0]! <= t) {
        const at = queue.shift()!;
        if (!nps[f]!.mark(at)) continue;
        if (at >= steadyFromUs) cnps++;
        rp.runDue(at);
        rp.cnp(at);
      }
      rp.runDue(t);
      rp.cap = windowBits > 0 ? windowBits / (m.feedbackDelayUs + queueingUs) : Number.POSITIVE_INFINITY;
      const rate = rp.sendRate;
      sending += rate;
      if (!atEnqueue) history[(i % historySteps) * n + f] = rate;
      // The packets judged in this step: those joining (enqueue), or this flow's share of those leaving (dequeue).
      const pk = joinedRate > 0 ? (departingPackets * history[joined + f]!) / joinedRate : (rate * stepUs) / bitsPerPacket;
      if (p > 0 && rng.float() < 1 - exp(-pk * p)) {
        queue.push(maxOf(t + markDelay, queue.length > 0 ? queue[queue.length - 1]! : 0));
      }
      if (counting) {
        rateArea[f]! += rate * stepUs;
        packets += pk;
        marked += pk * p;
        if (q > m.kmaxBytes) packetsAbove += pk;
      }
    }
    q = min(m.bufferBytes, maxOf(0, q + (sending / 8 - drainPerUs) * stepUs));
    if (counting) {
      qArea += q * stepUs;
      qMin = min(qMin, q);
      qMax = maxOf(qMax, q);
    }
    if ((i + 1) % sampleEvery === 0) overTime.push([Math.round((i + 1) * stepUs), Math.round(q), (sending / 1e3) * toWire]);
  }
  const span = maxOf(stepUs, steps * stepUs - maxOf(0, from));
  return {
    fromUs: maxOf(0, from),
    toUs: steps * stepUs,
    flowsGbps: Array.from(rateArea, (a) => (a / span / 1e3) * toWire),
    queueMeanBytes: qArea / span,
    queueMinBytes: Number.isFinite(qMin) ? qMin : 0,
    queueMaxBytes: qMax,
    markProbability: packets > 0 ? marked / packets : 0,
    cnpsPerFlowPerMs: (1000 * cnps) / n / span,
    aboveKmax: packets > 0 ? packetsAbove / packets : 0,
    overTime,
  };
}
