/**
 * A driver that hands every frame it transmits or receives to a recorder (a live capture, see
 * live-capture.ts) and otherwise passes everything through. It sits right on the real driver, so
 * the capture shows the link as tcpdump on the host would, including with AF_XDP, whose frames
 * the kernel's taps never see. Without `--pcap` it is not in the path at all.
 *
 * The zero-copy transmit and descriptor receive extensions (driver.ts) are kept when the inner
 * driver has them: a committed frame is recorded from the driver's own transmit memory just before
 * the commit, a received run from the run's buffer, so turning the capture on costs a copy per
 * frame into the capture's chunk and nothing else on the data path. Receive timestamps
 * (`RxTimestamps`) are passed through too: `rxBurst` returns the inner driver's frames as they are.
 */
import { type NicDriver, type RxTimeSource, type TxSpace, hasRunReceive, hasRxTimestamps, hasZeroCopyTx } from './driver';
import type { FrameRecorder } from './live-capture';
import { PassThroughDriver } from './pass-through-driver';

const EMPTY = new Uint8Array(0);

export class CaptureDriver extends PassThroughDriver {
  /** Zero-copy transmit, passed through when the inner driver has it: a getter (PassThroughDriver.passTxSpace). */
  declare readonly txSpace?: TxSpace;
  readonly txReserve?: (len: number) => number;
  readonly txCommit?: () => number;
  readonly rxRun?: (max: number, desc: Uint32Array) => number;
  readonly rxTimeNs?: (i: number) => number;
  readonly rxTimeSource?: (i: number) => RxTimeSource | null;
  /** Offsets and lengths of the frames reserved since the last commit (zero-copy transmit). */
  private reserved: number[] = [];

  constructor(
    inner: NicDriver,
    private readonly recorder: FrameRecorder,
  ) {
    super(inner);
    if (hasRxTimestamps(inner)) {
      this.rxTimeNs = (i) => inner.rxTimeNs(i);
      this.rxTimeSource = (i) => inner.rxTimeSource(i);
    }
    if (hasZeroCopyTx(inner)) {
      this.passTxSpace();
      this.txReserve = (len) => {
        const off = inner.txReserve(len);
        if (off >= 0) this.reserved.push(off, len);
        return off;
      };
      this.txCommit = () => {
        // The memory the frames were reserved in: the driver lends other memory only after a commit.
        const space = inner.txSpace;
        const r = this.reserved;
        for (let i = 0; i < r.length; i += 2) this.recorder.record(space.buf.subarray(r[i]!, r[i]! + r[i + 1]!));
        r.length = 0;
        return inner.txCommit();
      };
    }
    if (hasRunReceive(inner)) {
      this.rxRun = (max, desc) => {
        const n = inner.rxRun(max, desc);
        const buf = inner.rxRunBuffer;
        for (let i = 0; i < n; i++) this.recorder.record(buf.subarray(desc[2 * i]!, desc[2 * i]! + desc[2 * i + 1]!));
        return n;
      };
    }
  }

  /** The buffer of the inner driver's last run (driver.ts RunReceive; empty without the extension). */
  get rxRunBuffer(): Uint8Array {
    const inner = this.inner;
    return hasRunReceive(inner) ? inner.rxRunBuffer : EMPTY;
  }

  override txBurst(frames: readonly Uint8Array[]): number {
    // A txBurst commits what is reserved first (driver.ts), so those frames are recorded first.
    if (this.reserved.length > 0) {
      const space = this.inner.txSpace;
      const r = this.reserved;
      if (space !== undefined) for (let i = 0; i < r.length; i += 2) this.recorder.record(space.buf.subarray(r[i]!, r[i]! + r[i + 1]!));
      r.length = 0;
    }
    const n = this.inner.txBurst(frames);
    for (let i = 0; i < n; i++) this.recorder.record(frames[i]!);
    return n;
  }

  override rxBurst(max: number): Uint8Array[] {
    const frames = this.inner.rxBurst(max);
    for (const f of frames) this.recorder.record(f);
    return frames;
  }
}
