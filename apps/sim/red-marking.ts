/**
 * RED marking as DCQCN's switch does it (Zhu et al., SIGCOMM 2015, §4), for the model oracles
 * (dcqcn-fluid.ts, dcqcn-marks-model.ts, dcqcn-hybrid-model.ts): no mark up to Kmin, a
 * probability rising linearly to pmax at Kmax, every packet above. The switch model
 * (nic-driver/star-switch.ts) marks by the same rule, packet by packet.
 */
import { invalid } from '../../stack/errors';

export interface RedMarking {
  kminBytes: number;
  kmaxBytes: number;
  pmax: number;
}

/** The marking probability of a packet that finds `q` bytes queued. */
export function redMark(m: RedMarking, q: number): number {
  if (q <= m.kminBytes) return 0;
  if (q > m.kmaxBytes) return 1;
  return (m.pmax * (q - m.kminBytes)) / (m.kmaxBytes - m.kminBytes);
}

/** The queue at which RED's slope gives probability `p` (its inverse on the slope). */
export function redQueueFor(m: RedMarking, p: number): number {
  return m.kminBytes + (p / m.pmax) * (m.kmaxBytes - m.kminBytes);
}

/** Refuses a model of no flow or without RED on a slope, naming the model (`'fluid model'`, …). */
export function checkFlowsAndRed(m: RedMarking & { flows: number }, model: string): void {
  if (!(Number.isInteger(m.flows) && m.flows >= 1)) throw invalid(`the ${model} needs at least one flow, not ${m.flows}`);
  if (!(m.kmaxBytes > m.kminBytes && m.kminBytes >= 0 && m.pmax > 0 && m.pmax <= 1))
    throw invalid(`the ${model} needs RED marking with 0 <= kmin < kmax and 0 < pmax <= 1`);
}
