/**
 * A capture point on the in-memory link: every frame of both directions
 * written to a classic nanosecond pcap (Ethernet), which `roce decode`,
 * tshark and `readCapture` read back.
 *
 * `where: 'sent'` (default) records each frame as its sender put it on the
 * wire, at the time of `txBurst`, like tcpdump on the sending host: frames the
 * link then drops still appear, and corruption or CE marks do not.
 * `where: 'delivered'` records what the receiver gets, at its arrival time:
 * after drops, duplicates, reordering, corruption and ECN marking.
 * `where: 'host-a'` (or 'host-b') is a capture on that host's NIC: what it
 * sends, as sent, and what it receives, as delivered. That is the view a
 * replay of one side needs: its real input and its real output.
 */
import { LinkType, PcapWriter } from '../packets/pcap';
import { PcapFileWriter } from './pcap-file-writer';
import type { Direction } from './faults';
import { ProgrammingError, ProgrammingErrorCode } from '../base/programming-error';

/** Where a tap records: every frame as sent, or as delivered, or as one host's NIC sees it (what it sent, what it received). */
export type TapPoint = 'sent' | 'delivered' | 'host-a' | 'host-b';

/** When the link records a frame of `direction` for a tap at `where`. */
export function recordsAt(where: TapPoint, direction: Direction): 'sent' | 'delivered' {
  if (where === 'host-a') return direction === 'a->b' ? 'sent' : 'delivered';
  if (where === 'host-b') return direction === 'b->a' ? 'sent' : 'delivered';
  return where;
}

/** Something the link shows each frame to, at the point `where` names. */
export interface FrameTap {
  /** Where the link should call `record` (default 'sent'). */
  readonly where?: TapPoint;
  record(frame: Uint8Array, timeNs: number, direction: Direction): void;
  close(): void;
}

/** Where a `PcapTap` records, which direction, and the epoch of its timestamps. */
export interface PcapTapOptions {
  where?: TapPoint;
  /** Added to clock time for the pcap timestamps (default 1.7e18 ns, November 2023). */
  epochNs?: bigint | number;
  /** Only record this direction (default both). */
  direction?: Direction;
}

/** 1_700_000_000 s after 1970: a plausible date for captures made on a virtual clock starting at 0. */
export const DEFAULT_EPOCH_NS = 1_700_000_000_000_000_000n;

/** A tap that records pcap: in memory (`bytes()`), or to a file (`PcapTap.toFile`). */
export class PcapTap implements FrameTap {
  readonly where: TapPoint;
  private readonly epochNs: bigint;
  private readonly only: Direction | null;
  private mem: PcapWriter | null;
  private file: PcapFileWriter | null;
  private closed = false;
  /** Frames recorded so far. */
  frames = 0;

  /** An in-memory capture; read it with `bytes()`. */
  constructor(opts: PcapTapOptions = {}, file: PcapFileWriter | null = null) {
    this.where = opts.where ?? 'sent';
    const e = opts.epochNs ?? DEFAULT_EPOCH_NS;
    this.epochNs = typeof e === 'bigint' ? e : BigInt(Math.round(e));
    this.only = opts.direction ?? null;
    this.file = file;
    this.mem = file === null ? new PcapWriter({ linkType: LinkType.Ethernet, nanosecond: true }) : null;
  }

  /** A capture streamed to `path` (created or truncated now). */
  static toFile(path: string, opts: PcapTapOptions = {}): PcapTap {
    return new PcapTap(opts, PcapFileWriter.open(path, { linkType: LinkType.Ethernet, nanosecond: true }));
  }

  record(frame: Uint8Array, timeNs: number, direction: Direction): void {
    if (this.closed || (this.only !== null && direction !== this.only)) return;
    const ts = this.epochNs + BigInt(Math.round(timeNs));
    if (this.mem !== null) this.mem.add(frame, ts);
    else this.file?.write(frame, ts);
    this.frames++;
  }

  /** The capture so far (in-memory taps only). */
  bytes(): Uint8Array {
    if (this.mem === null) throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'PcapTap.bytes(): this tap writes to a file');
    return this.mem.toBytes();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.file?.close();
    this.file = null;
  }
}
