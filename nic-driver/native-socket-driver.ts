/**
 * What the AF_PACKET and AF_XDP drivers share: a socket of the native addon
 * (native-binding.ts) whose received frames lie in one JS ArrayBuffer (the
 * TPACKET ring, the UMEM), and its life cycle. The base class receives
 * (`rxBurst`: views of that buffer at the offsets the addon writes into
 * `rxDesc`), runs the rx handler (from the socket's uv_poll, or from the
 * busy-poll loop), counts, and closes, also at process exit. The subclass
 * opens the socket, handing it `rxDesc`, and transmits.
 *
 * Hot path: `rxBurst` is one native call and one view per frame, as before
 * the drivers shared it; nothing is looked up through the subclass per burst.
 */
import type { DriverStats } from './driver';
import { emptyStats } from './driver';
import type { NativeSocket } from './native-binding';

/** Most frames one receive burst returns (rxDesc holds that many (offset, length) pairs). */
export const RX_BURST_MAX = 256;

export abstract class NativeSocketDriver<S extends NativeSocket> {
  protected readonly counters: DriverStats = emptyStats();
  /** The addon writes each receive burst here: (offset from `rxBase`, length) pairs. Handed to the socket at open. */
  protected readonly rxDesc = new Uint32Array(2 * RX_BURST_MAX);
  /** The open socket; null before `attach` and after `close`. */
  protected sock: S | null = null;
  /** Where received frames lie (set by `attach`; not read while `sock` is null). */
  private rxBuffer!: ArrayBuffer;
  /** Offset in `rxBuffer` that the addon's descriptor offsets count from. */
  protected rxBase = 0;
  /** Frames the last `rxBurst` returned (what per-frame receive metadata of the subclass is valid for). */
  protected rxCount = 0;
  private readonly busy: BusyLoop | null;
  private handler: (() => void) | null = null;
  /** What the poller (or busy loop) calls: the current handler, so replacing it needs no re-registration. */
  private readonly callHandler = (): void => this.handler?.();

  /** `busyPoll`: check for frames on every event-loop turn instead of waiting in uv_poll. */
  protected constructor(busyPoll: boolean) {
    this.busy = busyPoll ? new BusyLoop(() => this.sock !== null && this.sock.pending(), this.callHandler) : null;
  }

  /**
   * The end of the subclass's constructor: `sock` is open, its received frames lie in `rxBuffer`
   * from `rxBase` on; from now on the driver is closed at process exit if not before.
   */
  protected attach(sock: S, rxBuffer: ArrayBuffer, rxBase: number): void {
    this.sock = sock;
    this.rxBuffer = rxBuffer;
    this.rxBase = rxBase;
    closeAtExit(this);
  }

  get stats(): DriverStats {
    if (this.sock !== null) this.counters.rxDropped = this.sock.stats().rxDropped;
    return this.counters;
  }

  rxBurst(max: number): Uint8Array[] {
    const sock = this.sock;
    this.rxCount = 0;
    if (sock === null) return [];
    const want = Math.max(0, Math.min(Math.floor(max), RX_BURST_MAX));
    if (want === 0) return [];
    const n = sock.rx(want);
    this.rxCount = n;
    const desc = this.rxDesc;
    const buffer = this.rxBuffer;
    const base = this.rxBase;
    const out = new Array<Uint8Array>(n);
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      const len = desc[2 * i + 1] as number;
      out[i] = new Uint8Array(buffer, base + (desc[2 * i] as number), len);
      bytes += len;
    }
    this.counters.rxFrames += n;
    this.counters.rxBytes += bytes;
    return out;
  }

  /** The handler runs on the busy loop in busy-poll mode, else from the socket's uv_poll. */
  setRxHandler(fn: (() => void) | null): void {
    if (this.sock === null) return;
    this.handler = fn;
    if (this.busy !== null) {
      if (fn === null) this.busy.stop();
      else this.busy.start();
      return;
    }
    this.sock.setRxHandler(fn === null ? null : this.callHandler);
  }

  /** Runs the handler now when frames are waiting (driver.ts `pollRx`), in either mode. */
  pollRx(): boolean {
    if (this.handler === null || this.sock === null || !this.sock.pending()) return false;
    this.handler();
    return true;
  }

  close(): void {
    if (this.sock === null) return;
    this.busy?.stop();
    this.handler = null;
    this.sock.close();
    this.sock = null;
    forgetAtExit(this);
  }
}

/**
 * The opt-in busy-poll mode: instead of sleeping in uv_poll, check for frames on every turn of
 * the event loop (setImmediate) and run the handler when there are some. Costs a core while a
 * handler is set; for latency runs only.
 */
class BusyLoop {
  private timer: NodeJS.Immediate | null = null;
  constructor(
    private readonly ready: () => boolean,
    private readonly fire: () => void,
  ) {}

  start(): void {
    if (this.timer !== null) return;
    const spin = (): void => {
      if (this.ready()) this.fire();
      if (this.timer !== null) this.timer = setImmediate(spin);
    };
    this.timer = setImmediate(spin);
  }

  stop(): void {
    if (this.timer !== null) clearImmediate(this.timer);
    this.timer = null;
  }
}

const openDrivers = new Set<{ close(): void }>();
let exitHooked = false;

/** Registers a driver to be closed at process exit (detaching its XDP program even on process.exit()). */
function closeAtExit(d: { close(): void }): void {
  openDrivers.add(d);
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const x of [...openDrivers]) {
        try {
          x.close();
        } catch {
          // exiting anyway
        }
      }
    });
  }
}

function forgetAtExit(d: { close(): void }): void {
  openDrivers.delete(d);
}
