/**
 * The frame I/O interface every transport in nic-driver/ implements: the
 * in-memory link, AF_XDP, AF_PACKET and pcap replay. The stack sees only this.
 * Frames are whole Ethernet frames without FCS. I/O is batched: one call per
 * burst, never one per packet.
 */

export interface DriverStats {
  txFrames: number;
  txBytes: number;
  rxFrames: number;
  rxBytes: number;
  /** Frames the driver could not queue for transmission (ring full). */
  txDropped: number;
  /** Frames lost on receive (ring overflow). */
  rxDropped: number;
}

export interface NicDriver {
  readonly name: string;
  /** The interface's MAC address as a 48-bit integer. */
  readonly mac: number;
  /** IP MTU of the link (1500, 9000, ...). */
  readonly mtu: number;
  readonly stats: DriverStats;
  /**
   * Queues `frames` for transmission. The driver copies what it needs before
   * returning, so the caller may reuse the buffers. Returns how many were taken.
   */
  txBurst(frames: readonly Uint8Array[]): number;
  /**
   * Takes up to `max` received frames. A returned frame stays valid until the
   * next `rxBurst` call on this driver.
   */
  rxBurst(max: number): Uint8Array[];
  /** `fn` runs when frames become available (once per burst of arrivals, not per frame). */
  setRxHandler(fn: (() => void) | null): void;
  close(): void;
}

export function emptyStats(): DriverStats {
  return { txFrames: 0, txBytes: 0, rxFrames: 0, rxBytes: 0, txDropped: 0, rxDropped: 0 };
}
