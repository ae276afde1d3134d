/** The result of a `roce probe` run: the figures, where their timestamps come from, and what the run saw. */
import type { Figure } from './measurements';
import type { DutRole } from './scenario';

/** Where the figures' timestamps come from and how far off they may be. */
export interface TimestampSource {
  where: string;
  /** Bound of a timestamp's error against the wire, ns. */
  errorNs: number;
}

export interface ProbeResult {
  scenario: string;
  /** Where the DUT is: a second roce-ts on the in-memory link, or a live host behind this stack's AF_XDP or AF_PACKET driver. */
  dut: { role: DutRole; tool: string; driver: 'memory' | 'xdp' | 'packet' };
  timestamps: TimestampSource;
  /** The path's round trip, which figures spanning one include (`dutNs` removes it). */
  pathRttNs: number | null;
  figures: Figure[];
  /** How the DUT's send work requests ended, per QP (known only when the DUT is this stack: the in-memory link). */
  dutCompletions: string[][];
  /** Frames seen at this stack's driver: sent, received, and dropped by the events. */
  frames: { tx: number; rx: number; dropped: number };
  /** Virtual time until the last of the requester's work requests completed, ns. */
  durationNs: number;
}
