/**
 * A star of hosts around one output-queued switch, on the virtual clock: the congestion point of
 * a RoCE network for the simulation. Each host is a `MemoryDriver` whose uplink
 * serializes at the port's line rate; the switch forwards by destination MAC into the output
 * port's queue, drops what the port's buffer cannot take (tail drop), and with PFC pauses a
 * host's uplink while the bytes it has queued in the switch are above XOFF, resuming it below XON
 * (IEEE 802.1Qbb PAUSE frames, in the capture too).
 *
 * ECN (RED thresholds Kmin, Kmax, Pmax on the instantaneous queue, or a fixed threshold) is
 * marked on ECN-capable frames as they leave the output queue, on the bytes still queued behind
 * them at that moment, as switch ASICs and the simulators the DCQCN literature cites do; the mark
 * then reaches the receiver one serialization and one propagation delay later, with no queueing
 * delay in the loop. `at: 'enqueue'` marks instead as a frame joins the queue, on the bytes ahead
 * of it: its mark waits out the whole queue before the receiver sees it.
 * Every link has the same rate and propagation delay. The same seed gives the same run.
 *
 * A host's uplink is its NIC's transmit queue, a ring of a few frames (HOST_TX_RING_FRAMES). The
 * host's driver tells its engine when the ring is full or paused and when each frame starts on the
 * wire (driver.ts TxBackpressure): PFC pauses the host's QPs, not only its wire, and their pacers
 * and byte counters are charged as frames leave.
 */
import type { Clock } from '../base/clock';
import { Rng } from '../base/rng';
import { type FramePort, type SlabRun, MemoryDriver } from './memory-link';
import { MIN_FRAME_BYTES, wireBytes } from '../packets/wire-size';
import type { TxBackpressure, TxEvents } from './driver';
import { ecnCodepoint, markEcnCe } from './faults';
import { LinkConfigError } from './link-config-error';

/**
 * Where the switch decides a frame's mark: as it leaves the output queue, on the bytes queued
 * behind it (the default), or as it joins, on the bytes ahead of it.
 */
export type EcnMarkingPoint = 'dequeue' | 'enqueue';

/** How the switch marks ECN: RED on the queue length, or every frame above one threshold; `at` where (default `'dequeue'`). */
export type EcnMarking = ({ kind: 'red'; kminBytes: number; kmaxBytes: number; pmax: number } | { kind: 'threshold'; kBytes: number }) & {
  at?: EcnMarkingPoint;
};

export interface PfcConfig {
  /** Pause a host's uplink when the bytes it has queued in the switch exceed this. */
  xoffBytes: number;
  /** Resume it when they fall below this. */
  xonBytes: number;
}

export interface StarSwitchOptions {
  clock: Clock;
  /** MAC of each host, in port order (2 to 64 hosts). */
  macs: readonly number[];
  /** Line rate of every port and uplink. */
  linkRateBps: number;
  /** Buffer of each output port. */
  bufferBytes: number;
  /** One-way propagation delay of each link (host to switch, switch to host). */
  propagationNs: number;
  ecn?: EcnMarking | null;
  pfc?: PfcConfig | null;
  seed?: number;
  /** IP MTU of the hosts (default 4200). */
  mtu?: number;
  /**
   * Frames each host's transmit queue holds waiting for the wire (its NIC's send ring; default
   * HOST_TX_RING_FRAMES). The host's requesters wait while it is full or PFC has paused the uplink.
   */
  hostTxRingFrames?: number;
  /** Called with every frame the switch sends (data as it leaves an output port, PFC frames as they are sent), and the port. */
  capture?: (frame: Uint8Array, timeNs: number) => void;
}

/** What the switch did, in total and per output port. */
export interface SwitchStats {
  ecnMarked: number;
  drops: number;
  /** PFC XOFF frames sent (a host paused). */
  pfcPauses: number;
  /** When the first and the last XOFF frame were sent (ns), null before any. */
  firstPauseNs: number | null;
  lastPauseNs: number | null;
  /** PFC XON frames sent (a host resumed). */
  pfcResumes: number;
  /** Frames for a MAC that is not on any port (dropped). */
  unknownDestination: number;
  ports: PortStats[];
}

/** A host's transmit queue (its uplink): what waited there, and how long PFC held it. */
export interface HostQueueStats {
  /** Bytes of the frames waiting now (the one on the wire not counted), and the most ever. */
  queuedBytes: number;
  maxQueuedBytes: number;
  /** The most frames ever waiting. */
  maxQueuedFrames: number;
  /** Time the uplink spent paused by PFC (ns; a pause still on counts from the next resume). */
  pausedNs: number;
  /** Whether PFC has the uplink paused now. */
  paused: boolean;
  /** Frames and bytes (without preamble and gap) that went on the wire. */
  framesOut: number;
  bytesOut: number;
}

export interface PortStats {
  /** Bytes queued now, and the most ever. */
  queueBytes: number;
  maxQueueBytes: number;
  /** Time integral of the queue (byte·ns), for its mean. */
  queueByteNs: number;
  framesOut: number;
  bytesOut: number;
  /** (time ns, bytes) after each change of the queue. */
  samples: number[];
}

export interface StarSwitch {
  /** The hosts' NICs, in port order (each with transmit backpressure, driver.ts TxBackpressure). */
  hosts: MemoryDriver[];
  stats: SwitchStats;
  /** Each host's transmit queue, in port order. */
  hostQueues: HostQueueStats[];
  /** Time-weighted mean queue of `port` from 0 to now. */
  meanQueueBytes(port: number): number;
  /** Whether PFC has host `host`'s uplink paused now (the XOFF took effect, no XON yet). */
  hostPaused(host: number): boolean;
  /** The frames waiting in host `host`'s transmit queue (its uplink), and their bytes. */
  hostBacklog(host: number): { frames: number; bytes: number };
  close(): void;
}

/**
 * Frames a host's transmit queue holds waiting for the wire by default: a NIC's send ring is a
 * few descriptors deep ahead of the wire (16 KB of 4 KB frames), so a paused host holds that
 * much, not what its QPs would send meanwhile.
 */
export const HOST_TX_RING_FRAMES = 4;

/** The PAUSE of 802.1Qbb: MAC control frame to 01:80:C2:00:00:01, opcode 0x0101, one priority's timer. */
const PFC_DST = 0x01_80_c2_00_00_01;
const PFC_ETHERTYPE = 0x8808;
const PFC_OPCODE = 0x0101;
/** The priority RoCE traffic is paused on (the common lossless class 3). */
export const PFC_PRIORITY = 3;
const SWITCH_MAC = 0x02_00_00_00_ff_fe;

/** A PFC frame pausing (quanta 0xffff) or resuming (0) `PFC_PRIORITY`. */
export function pfcFrame(pause: boolean, dstPortMac = SWITCH_MAC): Uint8Array {
  const f = new Uint8Array(MIN_FRAME_BYTES);
  const v = new DataView(f.buffer);
  v.setUint16(0, Math.floor(PFC_DST / 2 ** 32));
  v.setUint32(2, PFC_DST >>> 0);
  v.setUint16(6, Math.floor(dstPortMac / 2 ** 32));
  v.setUint32(8, dstPortMac >>> 0);
  v.setUint16(12, PFC_ETHERTYPE);
  v.setUint16(14, PFC_OPCODE);
  v.setUint16(16, 1 << PFC_PRIORITY); // class-enable vector
  v.setUint16(18 + 2 * PFC_PRIORITY, pause ? 0xffff : 0);
  return f;
}

function destinationMac(frame: Uint8Array): number {
  if (frame.length < 6) return -1;
  return frame[0]! * 2 ** 40 + frame[1]! * 2 ** 32 + ((frame[2]! << 24) >>> 0) + (frame[3]! << 16) + (frame[4]! << 8) + frame[5]!;
}

/** The time `len` bytes take on a wire of `nsPerByte` (padding, preamble, FCS and gap included). */
function wireNs(len: number, nsPerByte: number): number {
  return wireBytes(len) * nsPerByte;
}

/**
 * A host's uplink: its NIC's transmit queue, a small ring of `ringFrames` frames waiting for the
 * wire, serialized at line rate unless PFC has paused it. Its driver (StarHost) reports the room
 * in the ring and each frame as it starts on the wire (driver.ts TxBackpressure), so the host's
 * requesters stop while it is full or paused and their pacers are charged at wire time.
 */
class Uplink implements FramePort {
  /** Frames waiting for the wire, oldest first from `head`; null: a frame the driver dropped, reported in its turn. */
  private readonly queue: (Uint8Array | null)[] = [];
  private head = 0;
  private busy = false;
  paused = false;
  closed = false;
  /** The engine's handlers (driver.ts TxEvents), or null. */
  events: TxEvents | null = null;
  private pausedAt = 0;
  readonly stats: HostQueueStats = { queuedBytes: 0, maxQueuedBytes: 0, maxQueuedFrames: 0, pausedNs: 0, paused: false, framesOut: 0, bytesOut: 0 };

  constructor(
    private readonly sw: Switch,
    private readonly port: number,
    private readonly ringFrames: number,
  ) {}

  /** Frames waiting (the one on the wire not counted). */
  private get waiting(): number {
    return this.queue.length - this.head;
  }

  /** Frames the ring takes now before it is full; 0 while paused. */
  room(): number {
    return this.paused || this.closed ? 0 : Math.max(0, this.ringFrames - this.waiting);
  }

  send(frame: Uint8Array): void {
    if (this.closed) return;
    this.queue.push(frame);
    const s = this.stats;
    s.queuedBytes += frame.length;
    if (!this.busy) this.next();
    // What waits once an idle wire has taken its frame.
    if (s.queuedBytes > s.maxQueuedBytes) s.maxQueuedBytes = s.queuedBytes;
    if (this.waiting > s.maxQueuedFrames) s.maxQueuedFrames = this.waiting;
  }

  /** The driver dropped a frame it took (longer than the MTU allows): reported in its turn. */
  dropped(): void {
    if (this.closed) return;
    this.queue.push(null);
    if (!this.busy) this.next();
  }

  /** Frames waiting to go on the wire, and their bytes. */
  backlog(): { frames: number; bytes: number } {
    let bytes = 0;
    for (let i = this.head; i < this.queue.length; i++) bytes += this.queue[i]!.length;
    return { frames: this.queue.length - this.head, bytes };
  }

  takesRuns(): boolean {
    return false;
  }

  sendRun(run: SlabRun): void {
    for (let i = run.next; i < run.pairs.length; i += 2) this.send(run.buf.subarray(run.pairs[i]!, run.pairs[i]! + run.pairs[i + 1]!));
  }

  /** PFC: a pause takes effect after the frame on the wire; a resume restarts the queue and opens the ring. */
  setPaused(on: boolean): void {
    if (on === this.paused) return;
    const now = this.sw.clock.now();
    this.paused = on;
    this.stats.paused = on;
    if (on) {
      this.pausedAt = now;
      return;
    }
    this.stats.pausedNs += now - this.pausedAt;
    if (!this.busy) this.next();
    this.events?.opened();
  }

  private next(): void {
    for (;;) {
      if (this.closed || this.paused || this.head === this.queue.length) {
        this.busy = false;
        return;
      }
      const frame = this.queue[this.head++]!;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      if (frame === null) {
        this.events?.started(1);
        continue;
      }
      this.busy = true;
      const s = this.stats;
      s.queuedBytes -= frame.length;
      s.framesOut++;
      s.bytesOut += frame.length;
      const clock = this.sw.clock;
      const done = clock.now() + wireNs(frame.length, this.sw.nsPerByte);
      clock.schedule(Math.round(done), () => {
        clock.schedule(Math.round(done + this.sw.propagationNs), () => this.sw.arrive(this.port, frame));
        this.next();
      });
      // On the wire now: the engine charges its QP's pacer and byte counter, and may fill the ring again.
      const ev = this.events;
      if (ev !== null) {
        ev.started(1);
        ev.opened();
      }
      return;
    }
  }
}

/**
 * A host's NIC: the memory link's driver, sending through its uplink, with transmit backpressure
 * and the on-wire report (driver.ts TxBackpressure) of that uplink.
 */
class StarHost extends MemoryDriver implements TxBackpressure {
  constructor(
    name: string,
    mac: number,
    mtu: number,
    private readonly up: Uplink,
  ) {
    super(name, mac, mtu, 1 << 20);
    this.attach(up);
  }

  txRoom(): number {
    return this.closed ? 0 : this.up.room();
  }

  setTxEvents(h: TxEvents | null): void {
    this.up.events = h;
  }

  /** A frame the link cannot carry is dropped, and reported to the engine in its turn. */
  protected override admit(buf: Uint8Array, off: number, len: number): boolean {
    if (super.admit(buf, off, len)) return true;
    this.up.dropped();
    return false;
  }
}

/** One output port: its queue and the link to its host. */
class OutputPort {
  readonly queue: { frame: Uint8Array; from: number }[] = [];
  head = 0;
  busy = false;
  readonly stats: PortStats = { queueBytes: 0, maxQueueBytes: 0, queueByteNs: 0, framesOut: 0, bytesOut: 0, samples: [0, 0] };
  private changedAt = 0;

  /** The queue changes by `delta` bytes at `now`. */
  change(now: number, delta: number): void {
    const s = this.stats;
    s.queueByteNs += s.queueBytes * (now - this.changedAt);
    this.changedAt = now;
    s.queueBytes += delta;
    if (s.queueBytes > s.maxQueueBytes) s.maxQueueBytes = s.queueBytes;
    s.samples.push(now, s.queueBytes);
  }

  meanUntil(now: number): number {
    const s = this.stats;
    const integral = s.queueByteNs + s.queueBytes * (now - this.changedAt);
    return now > 0 ? integral / now : 0;
  }
}

class Switch {
  readonly nsPerByte: number;
  readonly hosts: MemoryDriver[] = [];
  readonly uplinks: Uplink[] = [];
  readonly outputs: OutputPort[] = [];
  /** Bytes each input port has in the switch's queues (PFC's ingress accounting). */
  private readonly ingressBytes: number[];
  private readonly pausedUp: boolean[];
  private readonly portOfMac = new Map<number, number>();
  private readonly rng: Rng;
  readonly stats: SwitchStats;
  private readonly markAtEnqueue: boolean;
  private closed = false;

  constructor(
    readonly clock: Clock,
    readonly propagationNs: number,
    private readonly o: StarSwitchOptions,
  ) {
    this.nsPerByte = 8e9 / o.linkRateBps;
    this.rng = new Rng(o.seed ?? 1);
    this.markAtEnqueue = o.ecn?.at === 'enqueue';
    const n = o.macs.length;
    this.ingressBytes = new Array<number>(n).fill(0);
    this.pausedUp = new Array<boolean>(n).fill(false);
    o.macs.forEach((mac, i) => {
      const up = new Uplink(this, i, o.hostTxRingFrames ?? HOST_TX_RING_FRAMES);
      const host = new StarHost(`host-${i}`, mac, o.mtu ?? 4200, up);
      this.hosts.push(host);
      this.uplinks.push(up);
      this.outputs.push(new OutputPort());
      this.portOfMac.set(mac, i);
    });
    this.stats = {
      ecnMarked: 0,
      drops: 0,
      pfcPauses: 0,
      firstPauseNs: null,
      lastPauseNs: null,
      pfcResumes: 0,
      unknownDestination: 0,
      ports: this.outputs.map((p) => p.stats),
    };
  }

  /** A frame from host `from` reaches the switch. */
  arrive(from: number, frame: Uint8Array): void {
    if (this.closed) return;
    const out = this.portOfMac.get(destinationMac(frame));
    if (out === undefined) {
      this.stats.unknownDestination++;
      return;
    }
    const port = this.outputs[out]!;
    const len = frame.length;
    const queued = port.stats.queueBytes;
    if (queued + len > this.o.bufferBytes) {
      this.stats.drops++;
      return;
    }
    if (this.markAtEnqueue) this.markIfCongested(frame, queued);
    const now = this.clock.now();
    port.queue.push({ frame, from });
    port.change(now, len);
    this.ingressBytes[from]! += len;
    const pfc = this.o.pfc;
    if (pfc != null && !this.pausedUp[from] && this.ingressBytes[from]! > pfc.xoffBytes) {
      this.pausedUp[from] = true;
      this.stats.pfcPauses++;
      this.stats.firstPauseNs ??= this.clock.now();
      this.stats.lastPauseNs = this.clock.now();
      this.sendPfc(from, true);
    }
    if (!port.busy) this.transmit(out);
  }

  /** Marks `frame` CE if it is ECN-capable (ECT(0) or ECT(1)) and a queue of `queued` bytes calls for it. */
  private markIfCongested(frame: Uint8Array, queued: number): void {
    // RED draws for every frame, ECN-capable or not, so the draws follow the frames alone.
    if (this.marks(queued) && ecnCodepoint(frame) > 0 && ecnCodepoint(frame) < 3) {
      markEcnCe(frame);
      this.stats.ecnMarked++;
    }
  }

  /** Whether a queue of `queued` bytes calls for a mark (RED, or the threshold). */
  private marks(queued: number): boolean {
    const e = this.o.ecn;
    if (e == null) return false;
    if (e.kind === 'threshold') return queued >= e.kBytes;
    if (queued <= e.kminBytes) return false;
    if (queued >= e.kmaxBytes) return true;
    return this.rng.chance((e.pmax * (queued - e.kminBytes)) / (e.kmaxBytes - e.kminBytes));
  }

  /** Output port `out` sends its next frame, if any. */
  private transmit(out: number): void {
    const port = this.outputs[out]!;
    if (this.closed || port.head === port.queue.length) {
      port.busy = false;
      return;
    }
    port.busy = true;
    const { frame, from } = port.queue[port.head++]!;
    if (port.head > 1024 && port.head * 2 > port.queue.length) {
      port.queue.splice(0, port.head);
      port.head = 0;
    }
    const now = this.clock.now();
    port.change(now, -frame.length);
    // Marked on departure, on the bytes left behind the frame: the departing frame is taken off
    // the egress count before the RED decision (HPCC's ns-3, switch-node.cc SwitchNotifyDequeue:
    // RemoveFromEgressAdmission, then SwitchMmu::ShouldSendCN; Zhu's ns3-rdma, qbb-net-device.cc
    // DequeueAndTransmit, in the same order).
    if (!this.markAtEnqueue) this.markIfCongested(frame, port.stats.queueBytes);
    port.stats.framesOut++;
    port.stats.bytesOut += frame.length;
    this.ingressBytes[from]! -= frame.length;
    const pfc = this.o.pfc;
    if (pfc != null && this.pausedUp[from] && this.ingressBytes[from]! < pfc.xonBytes) {
      this.pausedUp[from] = false;
      this.stats.pfcResumes++;
      this.sendPfc(from, false);
    }
    this.o.capture?.(frame, now);
    const done = now + wireNs(frame.length, this.nsPerByte);
    this.clock.schedule(Math.round(done + this.propagationNs), () => {
      if (!this.closed) this.hosts[out]!.receive([frame]);
    });
    this.clock.schedule(Math.round(done), () => this.transmit(out));
  }

  /** A PFC frame to host `to`: it takes effect there after its own wire time and the propagation delay. */
  private sendPfc(to: number, pause: boolean): void {
    const now = this.clock.now();
    const f = pfcFrame(pause);
    this.o.capture?.(f, now);
    this.clock.schedule(Math.round(now + wireNs(f.length, this.nsPerByte) + this.propagationNs), () => {
      if (!this.closed) this.uplinks[to]!.setPaused(pause);
    });
  }

  close(): void {
    this.closed = true;
    for (const u of this.uplinks) u.closed = true;
    for (const h of this.hosts) h.close();
  }
}

/** Builds the star: one switch, one port per MAC. */
export function createStarSwitch(o: StarSwitchOptions): StarSwitch {
  const n = o.macs.length;
  if (!Number.isInteger(n) || n < 2 || n > 64) throw new LinkConfigError(`a star needs 2 to 64 hosts, not ${n}`);
  if (new Set(o.macs).size !== n) throw new LinkConfigError('every host needs its own MAC');
  if (!(o.linkRateBps > 0 && Number.isFinite(o.linkRateBps))) throw new LinkConfigError(`linkRateBps must be more than 0, not ${o.linkRateBps}`);
  if (!(o.bufferBytes >= 9000 && Number.isFinite(o.bufferBytes)))
    throw new LinkConfigError(`bufferBytes must be at least 9000 (one jumbo frame), not ${o.bufferBytes}`);
  if (!(o.propagationNs >= 0 && Number.isFinite(o.propagationNs))) throw new LinkConfigError(`propagationNs must be at least 0, not ${o.propagationNs}`);
  const e = o.ecn;
  if (e != null) {
    if (e.kind === 'red' && !(e.kminBytes >= 0 && e.kmaxBytes > e.kminBytes && e.pmax >= 0 && e.pmax <= 1)) {
      throw new LinkConfigError(`RED marking needs 0 <= kmin < kmax and 0 <= pmax <= 1, not kmin ${e.kminBytes}, kmax ${e.kmaxBytes}, pmax ${e.pmax}`);
    }
    if (e.kind === 'threshold' && !(e.kBytes >= 0)) throw new LinkConfigError(`the marking threshold must be at least 0, not ${e.kBytes}`);
    if (e.at !== undefined && e.at !== 'dequeue' && e.at !== 'enqueue')
      throw new LinkConfigError(`ECN marks at 'dequeue' or 'enqueue', not ${JSON.stringify(e.at)}`);
  }
  const p = o.pfc;
  if (p != null && !(p.xonBytes >= 0 && p.xoffBytes > p.xonBytes && p.xoffBytes < o.bufferBytes)) {
    throw new LinkConfigError(`PFC needs 0 <= xon < xoff < the buffer (${o.bufferBytes}), not xon ${p.xonBytes}, xoff ${p.xoffBytes}`);
  }
  const ring = o.hostTxRingFrames;
  if (ring !== undefined && !(Number.isInteger(ring) && ring >= 1 && ring <= 65536))
    throw new LinkConfigError(`hostTxRingFrames must be an integer 1..65536, not ${ring}`);
  const sw = new Switch(o.clock, o.propagationNs, o);
  return {
    hosts: sw.hosts,
    stats: sw.stats,
    hostQueues: sw.uplinks.map((u) => u.stats),
    meanQueueBytes: (port) => sw.outputs[port]?.meanUntil(o.clock.now()) ?? 0,
    hostPaused: (host) => sw.uplinks[host]?.paused ?? false,
    hostBacklog: (host) => sw.uplinks[host]?.backlog() ?? { frames: 0, bytes: 0 },
    close: () => sw.close(),
  };
}
