/**
 * The run's frames as a capture (`roce probe --pcap`, and the ladders of `--html`).
 *
 * The capture point is this stack's driver (probe-driver.ts): our frames at the transmit call,
 * after the events (a frame an event kept off the wire is not in the capture; a duplicated one is
 * there twice, an ECN-marked one marked), the DUT's at the receive call, before the events (a frame
 * a `drop` event threw away had arrived, so it is there). The link between the two ends loses
 * nothing of its own, so the capture holds exactly what the DUT sent and what it received: read it
 * as a capture at the DUT's NIC (`roce analyze --capture-point host:DUT-IP`), whose rules are then
 * the DUT's own. The timestamps are the figures' (the device clock at the driver), so the DUT's
 * frames are stamped one path delay after it sent them and ours one path delay before it got them.
 *
 * Frames kept off the wire are kept aside (`offWire`), for the report to draw where they would have
 * been.
 */
import { decodeFrame, packetAddresses } from '../../packets/decode';
import { LinkType, writePcap } from '../../packets/pcap';
import type { FrameRecord } from './probe-driver';

/** 1_700_000_000 s after 1970 plus the device clock: a plausible date for a run on a virtual clock starting at 0 (as `roce demo --pcap`). */
export const PROBE_CAPTURE_EPOCH_NS = 1_700_000_000_000_000_000n;

/** One frame at this stack's driver. */
export interface WireFrame {
  /** Device clock, ns (the figures' time). */
  timeNs: number;
  /** tx: sent by this stack; rx: sent by the DUT. */
  dir: 'tx' | 'rx';
  frame: Uint8Array;
  /** The DUT's frames a `drop` event threw away after they arrived (still on the wire: in the capture). */
  dropped: boolean;
  /** How many frames of the capture came before it (an off-wire frame's place among them). */
  after: number;
  /** How long a `delay-ack` event held our frame before it left, ns (0: not held). */
  heldNs: number;
}

export class ProbeCapture {
  /** The frames on the wire, in time order: the capture's frames 1, 2, ... */
  readonly frames: WireFrame[] = [];
  /** Our frames the events kept off the wire (never sent), in order. */
  readonly offWire: WireFrame[] = [];

  /** `epochNs`: the capture time of device clock 0 (a live run: the wall clock when its clock started). */
  constructor(private readonly epochNs: bigint = PROBE_CAPTURE_EPOCH_NS) {}

  /** ProbeDriver.onWire's shape: pass `capture.onWire` to the runner. */
  readonly onWire = (frame: Uint8Array, timeNs: number, dir: 'tx' | 'rx', fate: FrameRecord['fate'], heldNs = 0): void => {
    // In time order: a received frame's kernel stamp may be earlier than frames sent before it was polled.
    const fs = this.frames;
    let at = fs.length;
    while (at > 0 && (fs[at - 1] as WireFrame).timeNs > timeNs) at--;
    const w = { timeNs, dir, frame, dropped: fate === 'dropped', after: at, heldNs };
    if (dir === 'tx' && fate === 'dropped') {
      this.offWire.push(w);
      return;
    }
    fs.splice(at, 0, w);
    for (const o of this.offWire) if (o.after > at) o.after++;
  };

  /** The capture as a classic nanosecond Ethernet pcap, stamped `epochNs` + the device clock. */
  pcap(): Uint8Array {
    return writePcap(
      this.frames.map((w) => ({ data: w.frame, timestampNs: this.epochNs + BigInt(Math.round(w.timeNs)) })),
      { linkType: LinkType.Ethernet, nanosecond: true },
    );
  }

  /** The DUT's IP address (the source of its frames), for `--capture-point host:IP`; null before it sent any. */
  dutAddress(): string | null {
    for (const w of this.frames) {
      if (w.dir !== 'rx') continue;
      const d = decodeFrame(w.frame, undefined, { verifyIcrc: false });
      if (!d.roce) continue;
      const { src } = packetAddresses(d);
      if (src !== '') return src;
    }
    return null;
  }
}
