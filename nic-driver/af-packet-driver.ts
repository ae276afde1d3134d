/**
 * NicDriver over an AF_PACKET socket (the fallback when AF_XDP is not available).
 *
 * Receive: a TPACKET ring that the native shim maps into a JS ArrayBuffer,
 * so the kernel writes each frame once, where `rxBurst` returns it as a view;
 * a classic BPF socket filter lets in only UDP to the RoCE port (4791), so the
 * ring carries RoCE and nothing else. The default ring is TPACKET_V2: every
 * frame slot is handed over (and the socket woken) as soon as the kernel has
 * written it. `ring: 'v3'` selects TPACKET_V3 blocks instead, handed over when
 * full or after `retireMs` (default 1 ms): fewer wake-ups, but up to a
 * millisecond added to every frame at low rates, which throttles RC (each ACK
 * waits for its block; the requester stalls at its 128-PSN window).
 * Transmit: frames are copied into a JS-owned slab and sent with one sendmmsg
 * per burst.
 *
 * Receive timestamps (driver.ts `RxTimestamps`): each ring header carries the time the kernel
 * stamped the frame on arrival (CLOCK_REALTIME, or the NIC's clock with `hardwareTimestamps`); the
 * shim copies it with the frame's descriptor, three 32-bit words per frame into one reused array
 * (nic-driver/rx-time.ts says why that form), and `rxTimeNs(i)` gives it on the monotonic clock
 * the stack times itself with.
 *
 * The kernel also sees every frame the packet socket sees. Without a UDP
 * listener on 4791 it would answer each RoCE datagram addressed to it with
 * ICMP port unreachable; the shim binds a UDP socket to the port (SO_REUSEPORT,
 * IPv4 and IPv6) with a drop-everything socket filter, so the kernel finds a
 * listener, sends nothing back and queues nothing (`udpGuard`).
 */
import { type NicDriver, type RxTimeSource, type RxTimestamps, maxFrameLen } from './driver';
import { NativeErrorCode, type NativePacketSocket, NicDriverError, intOption, macFromHex, native, nativeCall, netnsPath } from './native-binding';
import { NativeSocketDriver, RX_BURST_MAX } from './native-socket-driver';
import { RX_CLOCK_WORDS, RX_TIME_WORDS, offsetSeconds, realtimeToMonotonicNs, rxTimeSourceOf } from './rx-time';

export interface AfPacketOptions {
  ifname: string;
  /** Network namespace of the interface (a name under /var/run/netns or a path); default: this process's. */
  netns?: string;
  /** UDP destination port of the frames to receive (default 4791). */
  port?: number;
  /** IP MTU to enforce on transmit (default: the interface's). */
  mtu?: number;
  /** Receive ring: block size (bytes, a multiple of 4096, larger than the largest frame) and count. */
  blockSize?: number;
  blockCount?: number;
  /** How long a partly filled block may wait before the kernel hands it over (ms, default 1; TPACKET_V3 only). */
  retireMs?: number;
  /** Receive ring: 'v2' (TPACKET_V2, per-frame hand-over; the default) or 'v3' (TPACKET_V3 blocks). */
  ring?: 'v2' | 'v3';
  /** Check for frames on every event-loop turn instead of waiting in uv_poll (latency runs). */
  busyPoll?: boolean;
  /** Send past the qdisc layer (PACKET_QDISC_BYPASS). */
  qdiscBypass?: boolean;
  /** Bind the ICMP-preventing UDP guard socket (default true). */
  udpGuard?: boolean;
  /** Hand over each frame's kernel receive time (`rxTimeNs`; default true). */
  rxTimestamps?: boolean;
  /**
   * Prefer the NIC's raw hardware receive stamp (PACKET_TIMESTAMP with SOF_TIMESTAMPING_RAW_HARDWARE;
   * default false). The NIC stamps only once its hardware timestamping is on (SIOCSHWTSTAMP, e.g.
   * `hwstamp_ctl -i IF -r 1`), and its stamps are on its own clock, so `rxTimeNs` gives NaN for
   * them (`rxTimeSource` 'raw-hardware', `rxTimeRawNs` the value); frames it did not stamp keep
   * the kernel's software stamp.
   */
  hardwareTimestamps?: boolean;
}

/** Frames per native transmit call. */
const TX_BATCH = 64;

export class AfPacketDriver extends NativeSocketDriver<NativePacketSocket> implements NicDriver, RxTimestamps {
  readonly name: string;
  readonly mac: number;
  readonly mtu: number;
  /** What keeps the kernel from answering RoCE frames: 'udp6' / 'udp4' (our guard socket), 'port-in-use', 'off'. */
  readonly udpGuard: string;
  readonly ifindex: number;
  private readonly txSlab: Uint8Array;
  private readonly txStride: number;
  private readonly txDesc = new Uint32Array(2 * TX_BATCH);
  /** Whether the shim writes receive timestamps (asked for, and an addon that knows them). */
  readonly rxTimestamps: boolean;
  /** The shim writes each received frame's (tp_sec, tp_nsec, source) here, and the clock offset into rxClock. */
  private readonly rxTime = new Uint32Array(RX_TIME_WORDS * RX_BURST_MAX);
  private readonly rxClock = new Uint32Array(RX_CLOCK_WORDS);

  private constructor(opts: AfPacketOptions) {
    super(opts.busyPoll === true);
    const ring = opts.ring ?? 'v2';
    if (ring !== 'v2' && ring !== 'v3') throw new NicDriverError(NativeErrorCode.BadArgument, `ring must be 'v2' or 'v3', not '${String(ring)}'`);
    const blockSize = intOption('blockSize', opts.blockSize, 1 << 18, 4096, 1 << 26);
    const port = intOption('port', opts.port, 4791, 1, 65535);
    const b = native();
    const ns = netnsPath(opts.netns);
    const info = nativeCall(() => b.interfaceInfo(opts.ifname, ns));
    this.mtu = intOption('mtu', opts.mtu, info.mtu, 68, 65535);
    const maxFrame = this.mtu + 18;
    // TPACKET_V2 slot: the kernel's header and address (at most 84 bytes before the MAC header with
    // the 4 reserved bytes), the frame with a VLAN tag, rounded to TPACKET_ALIGNMENT (16).
    const slot = (maxFrame + 4 + 128 + 15) & ~15;
    // V2: enough blocks for at least 1024 frame slots (a 64-frame burst per flow, many flows).
    const v2Blocks = Math.max(16, Math.ceil(1024 / Math.max(1, Math.floor(blockSize / slot))));
    const blockCount = intOption('blockCount', opts.blockCount, ring === 'v2' ? v2Blocks : 16, 2, 4096);
    if (maxFrame + 128 > blockSize) {
      throw new NicDriverError(
        NativeErrorCode.BadArgument,
        `blockSize ${blockSize} cannot hold a ${maxFrame}-byte frame (MTU ${this.mtu}); use at least ${Math.ceil((maxFrame + 128) / 4096) * 4096}`,
      );
    }
    const ringBuffer = new ArrayBuffer(blockSize * blockCount + 4096);
    this.txStride = (maxFrame + 63) & ~63;
    this.txSlab = new Uint8Array(this.txStride * TX_BATCH);
    const sock = nativeCall(
      () =>
        new b.PacketSocket({
          ifname: opts.ifname,
          ...(ns !== undefined ? { netns: ns } : {}),
          port,
          ring: ringBuffer,
          blockSize,
          blockCount,
          retireMs: intOption('retireMs', opts.retireMs, 1, 0, 1000),
          ringVersion: ring === 'v2' ? 2 : 3,
          frameSize: slot,
          txSlab: this.txSlab.buffer as ArrayBuffer,
          rxDesc: this.rxDesc,
          txDesc: this.txDesc,
          ...(opts.rxTimestamps !== false ? { rxTime: this.rxTime, rxClock: this.rxClock } : {}),
          ...(opts.hardwareTimestamps === true ? { hwTimestamps: true } : {}),
          qdiscBypass: opts.qdiscBypass ?? false,
          udpGuard: opts.udpGuard ?? true,
        }),
    );
    const d = sock.describe();
    this.udpGuard = d.udpGuard;
    this.rxTimestamps = d.rxTimestamps === true;
    this.ifindex = d.ifindex;
    this.mac = macFromHex(d.mac);
    this.name = `af-packet:${opts.ifname}`;
    this.attach(sock, ringBuffer, d.ringOffset);
  }

  /** Opens the driver on `opts.ifname`. Throws NicDriverError (no such interface, no privileges, ...). */
  static open(opts: AfPacketOptions): AfPacketDriver {
    return new AfPacketDriver(opts);
  }

  /** Frame `i` of the last `rxBurst`: its kernel receive time on CLOCK_MONOTONIC, ns (driver.ts `RxTimestamps`). */
  rxTimeNs(i: number): number {
    if (!this.rxTimestamps || !(i >= 0 && i < this.rxCount)) return Number.NaN;
    const t = this.rxTime;
    const k = RX_TIME_WORDS * Math.floor(i);
    if (t[k + 2]! > 2) return Number.NaN; // 4: the NIC's clock (3, above 4: no kernel writes them)
    const c = this.rxClock;
    return realtimeToMonotonicNs(t[k]!, t[k + 1]!, offsetSeconds(c[0]!, c[1]!), c[2]!);
  }

  /** Which clock stamped frame `i` of the last `rxBurst`; null without a stamp. */
  rxTimeSource(i: number): RxTimeSource | null {
    if (!this.rxTimestamps || !(i >= 0 && i < this.rxCount)) return null;
    return rxTimeSourceOf(this.rxTime[RX_TIME_WORDS * Math.floor(i) + 2]!);
  }

  /**
   * Frame `i`'s stamp as the ring header has it, ns on its own clock (CLOCK_REALTIME, or the NIC's
   * for 'raw-hardware'), or null without one. A BigInt per call: for the odd frame, not a burst.
   */
  rxTimeRawNs(i: number): bigint | null {
    if (this.rxTimeSource(i) === null) return null;
    const k = RX_TIME_WORDS * Math.floor(i);
    return BigInt(this.rxTime[k]!) * 1_000_000_000n + BigInt(this.rxTime[k + 1]!);
  }

  txBurst(frames: readonly Uint8Array[]): number {
    const sock = this.sock;
    if (sock === null) return 0;
    let queued = 0;
    let taken = 0;
    const flush = (): void => {
      if (queued === 0) return;
      const sent = sock.tx(queued);
      for (let i = 0; i < sent; i++) this.counters.txBytes += this.txDesc[2 * i + 1]!;
      this.counters.txFrames += sent;
      this.counters.txDropped += queued - sent;
      queued = 0;
    };
    for (const f of frames) {
      taken++;
      if (f.length > maxFrameLen(this.mtu, f)) {
        this.counters.txDropped++;
        continue;
      }
      const off = queued * this.txStride;
      this.txSlab.set(f, off);
      this.txDesc[2 * queued] = off;
      this.txDesc[2 * queued + 1] = f.length;
      if (++queued === TX_BATCH) flush();
    }
    flush();
    return taken;
  }
}
