/**
 * NicDriver over an AF_XDP socket (libxdp/libbpf through the native shim).
 *
 * The UMEM is a JS ArrayBuffer registered with the kernel: `rxBurst` returns
 * views of the UMEM frames the kernel wrote (valid until the next `rxBurst`,
 * which hands them back to the fill ring), and `txBurst` copies the caller's
 * frames straight into UMEM transmit slots. Nothing is copied between native
 * and JS memory. The zero-copy transmit extension (`txSpace`, `txReserve`,
 * `txCommit`; see driver.ts) skips even that copy: the caller builds each frame
 * in the UMEM transmit slots it reserved, and the commit only writes
 * descriptors. A frame longer than a UMEM frame takes consecutive slots (one
 * contiguous stretch of memory, multi-buffer descriptors); when it would wrap
 * past the last slot, the slots left at the end are skipped (handed back
 * without being sent) and the frame starts again at slot 0. The XDP program (native/bpf/roce_filter.bpf.c) redirects only
 * UDP to the RoCE port (4791 by default) to the socket; ARP, ICMP, TCP and the
 * rest stay with the kernel.
 *
 * Bind: 'auto' lets the kernel pick zero-copy when the driver has it and copy
 * mode otherwise (veth, for one, has no zero-copy); `mode` reports which.
 * `xdpMode` reports where the program runs: 'native' (in the driver) or 'skb'
 * (generic, after the skb is built) when the driver has no XDP support.
 * Frames larger than a UMEM frame (jumbo MTUs) use multi-buffer AF_XDP
 * (XDP_USE_SG, kernel >= 6.6): their pieces are gathered into a reassembly
 * area after the frames, still inside the shared ArrayBuffer.
 *
 * Idle costs nothing: the rx handler runs from uv_poll on the socket's fd.
 * `busyPoll: true` instead checks on every event-loop turn and sets the
 * kernel's preferred busy polling on the socket, for latency runs; an empty
 * look at the ring then also drives the driver's NAPI with a `recvfrom`, as
 * SO_PREFER_BUSY_POLL expects, except on a veth (`napiBusyPoll`).
 */
import { type NicDriver, type RunReceive, type TxSpace, maxFrameLen, maxFrameLenAt } from './driver';
import { NativeErrorCode, type NativeXskSocket, NicDriverError, bpfObjectPath, intOption, macFromHex, native, nativeCall, netnsPath } from './native-binding';
import { NativeSocketDriver, RX_BURST_MAX } from './native-socket-driver';

export type XskBindMode = 'auto' | 'copy' | 'zerocopy';
export type XdpAttachMode = 'auto' | 'native' | 'skb';

export interface AfXdpOptions {
  ifname: string;
  /** Network namespace of the interface (a name under /var/run/netns or a path); default: this process's. */
  netns?: string;
  /** Receive queue to bind (default 0). Open one driver per queue to use several. */
  queue?: number;
  /** UDP destination port the XDP program redirects (default 4791). */
  port?: number;
  mode?: XskBindMode;
  xdpMode?: XdpAttachMode;
  /** UMEM frame size: 2048 or 4096 (default 4096). */
  frameSize?: number;
  /** UMEM frames, half for receiving and half for sending (default 4096). */
  frames?: number;
  busyPoll?: boolean;
  /**
   * With `busyPoll`: an empty look at the receive ring also drives the driver's NAPI (`recvfrom`).
   * Default: yes, except on a veth, where the sender's transmit already runs the receiver's NAPI
   * and the call only adds to the round trip (docs/performance.md, "Latency").
   */
  napiBusyPoll?: boolean;
  /** IP MTU to enforce on transmit (default: the interface's). */
  mtu?: number;
  /** Multi-buffer frames (default: when the MTU does not fit one UMEM frame). */
  multiBuffer?: boolean;
  /**
   * How long (ms, 0..60000, default 2000) to keep retrying the bind while the queue is still held
   * (EBUSY): after a socket on it was closed or its process died, the kernel releases the queue's
   * buffer pool asynchronously. 0: fail at once. Still held after the wait: XdpBusy.
   */
  busyWaitMs?: number;
}

/** ethtool's driver name of a veth: its transmit runs the peer's receive (NAPI) in the sender's context. */
const VETH_DRIVER = 'veth';
/** The kernel keeps this much headroom in front of each received frame (XDP_PACKET_HEADROOM). */
const XDP_HEADROOM = 256;
/** Descriptors per native tx call on the copying path (txBurst). */
const TX_DESC = 256;
const CONTD = 0x80000000;
/** txDesc value of a slot that is skipped (handed back unsent): a zero length, which no frame has. */
const SKIP = 0;

export class AfXdpDriver extends NativeSocketDriver<NativeXskSocket> implements NicDriver, RunReceive {
  readonly name: string;
  readonly mac: number;
  readonly mtu: number;
  /** 'zerocopy' or 'copy': what the bind got. */
  readonly mode: 'zerocopy' | 'copy';
  /** Where the XDP program runs. */
  readonly xdpMode: 'native' | 'skb';
  readonly queue: number;
  readonly ifindex: number;
  readonly multiBuffer: boolean;
  /** Whether an empty look at the ring drives the driver's NAPI (busy-poll mode only). */
  readonly napiBusyPoll: boolean;
  /** ethtool's name of the interface's driver ("veth", "mlx5_core"), empty when it reports none. */
  readonly ifDriver: string;
  private readonly umemU8: Uint8Array;
  private readonly frameSize: number;
  private readonly txFrames: number;
  private readonly txSlotBase: number;
  private readonly txDesc: Uint32Array;
  /** Zero-copy transmit: descriptors written to txDesc by txReserve and not yet committed (skips included). */
  private resvDesc = 0;
  /** ... and the frames they hold: offset in the UMEM buffer, length, index of the first descriptor. */
  private resvFrames = 0;
  private readonly resvOff: Uint32Array;
  private readonly resvLen: Uint32Array;
  private readonly resvFirst: Uint32Array;
  readonly txSpace: TxSpace;
  /** [next transmit slot, free slots, descriptors the kernel has not taken yet]. */
  private readonly txState = new Uint32Array(3);
  private retryScheduled = false;

  private constructor(opts: AfXdpOptions) {
    super(opts.busyPoll === true);
    const b = native();
    const ns = netnsPath(opts.netns);
    const frameSize = intOption('frameSize', opts.frameSize, 4096, 2048, 4096);
    if (frameSize !== 2048 && frameSize !== 4096) {
      throw new NicDriverError(NativeErrorCode.BadArgument, `frameSize must be 2048 or 4096, not ${frameSize}`);
    }
    const frames = intOption('frames', opts.frames, 4096, 1, 1 << 20);
    if (frames < 64) {
      throw new NicDriverError(NativeErrorCode.UmemTooSmall, `the UMEM needs at least 64 frames (32 to receive, 32 to send), not ${frames}`);
    }
    const info = nativeCall(() => b.interfaceInfo(opts.ifname, ns));
    this.mtu = intOption('mtu', opts.mtu, info.mtu, 68, 65535);
    const maxFrame = this.mtu + 18;
    this.multiBuffer = opts.multiBuffer ?? maxFrame > frameSize - XDP_HEADROOM;
    if (!this.multiBuffer && maxFrame > frameSize - XDP_HEADROOM) {
      throw new NicDriverError(
        NativeErrorCode.UmemTooSmall,
        `a ${frameSize}-byte UMEM frame holds at most ${frameSize - XDP_HEADROOM} bytes, the MTU allows ${maxFrame}: enable multiBuffer or lower the MTU`,
      );
    }
    const jumboBytes = this.multiBuffer ? RX_BURST_MAX * ((maxFrame + 63) & ~63) : 0;
    const umem = new ArrayBuffer(frames * frameSize + jumboBytes + 4096);
    this.umemU8 = new Uint8Array(umem);
    this.txSpace = { buf: this.umemU8, view: new DataView(umem) };
    // Room for a descriptor per transmit slot (the native side uses the second half of the frames to send).
    const txSlots = frames - (frames >>> 1);
    this.txDesc = new Uint32Array(Math.max(TX_DESC, txSlots));
    this.resvOff = new Uint32Array(txSlots);
    this.resvLen = new Uint32Array(txSlots);
    this.resvFirst = new Uint32Array(txSlots);
    const modes: Record<XskBindMode, number> = { auto: 0, copy: 1, zerocopy: 2 };
    const xdpModes: Record<XdpAttachMode, number> = { auto: 0, native: 1, skb: 2 };
    const mode = opts.mode ?? 'auto';
    const xdpMode = opts.xdpMode ?? 'auto';
    if (!(mode in modes)) throw new NicDriverError(NativeErrorCode.BadArgument, `mode must be 'auto', 'copy' or 'zerocopy', not '${String(mode)}'`);
    if (!(xdpMode in xdpModes)) throw new NicDriverError(NativeErrorCode.BadArgument, `xdpMode must be 'auto', 'native' or 'skb', not '${String(xdpMode)}'`);
    const sock = nativeCall(
      () =>
        new b.XskSocket({
          ifname: opts.ifname,
          ...(ns !== undefined ? { netns: ns } : {}),
          queue: intOption('queue', opts.queue, 0, 0, 4095),
          umem,
          frameSize,
          frameCount: frames,
          bindMode: modes[mode],
          xdpMode: xdpModes[xdpMode],
          port: intOption('port', opts.port, 4791, 1, 65535),
          objectPath: bpfObjectPath(),
          multiBuffer: this.multiBuffer,
          busyPoll: opts.busyPoll ?? false,
          napiBusyPoll: opts.napiBusyPoll ?? info.driver !== VETH_DRIVER,
          jumboBytes,
          busyWaitMs: intOption('busyWaitMs', opts.busyWaitMs, 2000, 0, 60_000),
          rxDesc: this.rxDesc,
          txDesc: this.txDesc,
          txState: this.txState,
        }),
    );
    const d = sock.describe();
    this.frameSize = d.frameSize;
    this.txFrames = d.txFrames;
    this.txSlotBase = d.umemOffset + d.txSlotBase;
    this.mode = d.zeroCopy ? 'zerocopy' : 'copy';
    this.xdpMode = d.xdpMode;
    this.napiBusyPoll = d.napiBusyPoll;
    this.ifDriver = info.driver;
    this.queue = d.queue;
    this.ifindex = d.ifindex;
    this.mac = macFromHex(d.mac);
    this.name = `af-xdp:${opts.ifname}/${d.queue}`;
    this.attach(sock, umem, d.umemOffset);
  }

  /** Opens the driver. Throws NicDriverError: no such interface, no privileges, XDP busy, no XDP, UMEM too small. */
  static open(opts: AfXdpOptions): AfXdpDriver {
    return new AfXdpDriver(opts);
  }

  /** `recvfrom` calls made to drive the driver's NAPI on an empty ring (or for a fill-ring wake-up). */
  get rxKicks(): number {
    return this.sock?.stats().rxKicks ?? 0;
  }

  txBurst(frames: readonly Uint8Array[]): number {
    const sock = this.sock;
    if (sock === null) return 0;
    if (this.resvDesc > 0) this.txCommit(); // frames reserved earlier leave first
    const fs = this.frameSize;
    let free = this.txState[1]!;
    let head = this.txState[0]!;
    let used = 0; // buffers written since the last flush
    let taken = 0;
    let bytes = 0;
    let framesQueued = 0;
    const flush = (): void => {
      if (used === 0) return;
      sock.tx(used);
      head = this.txState[0]!;
      free = this.txState[1]!;
      this.counters.txFrames += framesQueued;
      this.counters.txBytes += bytes;
      used = 0;
      framesQueued = 0;
      bytes = 0;
    };
    for (const f of frames) {
      if (f.length > maxFrameLen(this.mtu, f) || f.length === 0 || (f.length > fs && !this.multiBuffer)) {
        taken++;
        this.counters.txDropped++;
        continue;
      }
      const segs = Math.ceil(f.length / fs);
      if (used + segs > TX_DESC) flush();
      if (used + segs > free) {
        free = sock.txReclaim();
        if (used + segs > free) {
          flush();
          if (segs > free) break; // the ring is full: the caller keeps the rest
        }
      }
      for (let s = 0; s < segs; s++) {
        const slot = (head + used) % this.txFrames;
        const start = s * fs;
        const end = Math.min(f.length, start + fs);
        this.umemU8.set(start === 0 && end === f.length ? f : f.subarray(start, end), this.txSlotBase + slot * fs);
        this.txDesc[used] = (end - start) | (s < segs - 1 ? CONTD : 0);
        used++;
      }
      framesQueued++;
      bytes += f.length;
      taken++;
    }
    flush();
    if (this.txState[2]! > 0) this.scheduleRetry();
    return taken;
  }

  /**
   * Zero-copy transmit (driver.ts): room for a `len`-byte frame in the UMEM transmit slots after the
   * ones already reserved; -1 when the slots are all in flight or reserved (or the frame could never
   * fit). The frame's slots are consecutive in memory, so the caller writes it in one piece.
   */
  txReserve(len: number): number {
    if (this.sock === null) return -1;
    const fs = this.frameSize;
    const n = this.txFrames;
    const segs = len > 0 ? Math.ceil(len / fs) : 1;
    if (segs > n >>> 1) return -1;
    const slot = (this.txState[0]! + this.resvDesc) % n;
    const skip = slot + segs > n ? n - slot : 0;
    const need = this.resvDesc + skip + segs;
    if (need > this.txDesc.length) return -1;
    if (need > this.txState[1]! && (this.sock.txReclaim(), need > this.txState[1]!)) return -1;
    let d = this.resvDesc;
    for (let i = 0; i < skip; i++) this.txDesc[d++] = SKIP;
    const first = d;
    for (let rest = len; rest > fs; rest -= fs) this.txDesc[d++] = fs | CONTD;
    this.txDesc[d++] = len - (segs - 1) * fs;
    const off = this.txSlotBase + (skip > 0 ? 0 : slot) * fs;
    const k = this.resvFrames++;
    this.resvOff[k] = off;
    this.resvLen[k] = len;
    this.resvFirst[k] = first;
    this.resvDesc = d;
    return off;
  }

  /** Zero-copy transmit: queues the reserved frames (one native call, no copy) and kicks the kernel. */
  txCommit(): number {
    const sock = this.sock;
    const count = this.resvDesc;
    if (count === 0) return 0;
    this.resvDesc = 0;
    const frames = this.resvFrames;
    this.resvFrames = 0;
    if (sock === null) return 0;
    let sent = 0;
    let bytes = 0;
    const fs = this.frameSize;
    for (let k = 0; k < frames; k++) {
      const len = this.resvLen[k]!;
      if (len === 0 || len > maxFrameLenAt(this.mtu, this.umemU8, this.resvOff[k]!) || (len > fs && !this.multiBuffer)) {
        // Not sent: its slots are handed back as skipped.
        const first = this.resvFirst[k]!;
        for (let i = 0, segs = Math.max(1, Math.ceil(len / fs)); i < segs; i++) this.txDesc[first + i] = SKIP;
        this.counters.txDropped++;
        continue;
      }
      sent++;
      bytes += len;
    }
    sock.tx(count);
    this.counters.txFrames += sent;
    this.counters.txBytes += bytes;
    if (this.txState[2]! > 0) this.scheduleRetry();
    return sent;
  }

  /**
   * Copy-mode transmit takes a small batch per kick and says EAGAIN/EBUSY when the link is busy; what
   * is left in the TX ring would otherwise wait for the next txBurst (in a ping-pong, for a
   * retransmission timeout). Kick again on the next turn of the event loop until the ring is empty.
   */
  private scheduleRetry(): void {
    if (this.retryScheduled) return;
    this.retryScheduled = true;
    setImmediate(() => {
      this.retryScheduled = false;
      if (this.sock === null) return;
      this.sock.tx(0);
      if (this.txState[2]! > 0) this.scheduleRetry();
    });
  }

  /** Descriptor receive (driver.ts RunReceive): the UMEM, where every received frame lies. */
  get rxRunBuffer(): Uint8Array {
    return this.umemU8;
  }

  /** Descriptor receive: up to `max` received frames as (offset, length) pairs in `rxRunBuffer`, no view each. */
  rxRun(max: number, desc: Uint32Array): number {
    const sock = this.sock;
    if (sock === null) return 0;
    const want = Math.max(0, Math.min(Math.floor(max), RX_BURST_MAX, desc.length >> 1));
    if (want === 0) return 0;
    const n = sock.rx(want);
    const rx = this.rxDesc;
    let bytes = 0;
    for (let i = 0; i < n; i++) {
      const len = rx[2 * i + 1] as number;
      desc[2 * i] = this.rxBase + (rx[2 * i] as number);
      desc[2 * i + 1] = len;
      bytes += len;
    }
    this.counters.rxFrames += n;
    this.counters.rxBytes += bytes;
    return n;
  }

  /** Closes the socket; the XDP program is detached when the last socket on the interface closes. */
  override close(): void {
    this.resvDesc = 0; // reserved frames are dropped unsent
    this.resvFrames = 0;
    super.close();
  }
}
