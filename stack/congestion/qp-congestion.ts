/**
 * Congestion control of one QP: its notification point, its DCQCN reaction point and the pacer
 * that holds its requester to the reaction point's rate. A QP has one (`qp.cc`) only while
 * congestion control is on for it; with it off, `qp.cc` is null and the stack's only cost is
 * testing that field (once per packet sent by the requester, once per packet received).
 *
 * The hooks, all in the stack's existing paths:
 *   requester.ts   `qp.cc.admit()` before each request packet (the pacer's gate);
 *   port.ts        `qp.cc.sent(t, len)` for each frame built (requests feed the pacer and the
 *                  byte counter), a CE mark on a received packet → `np.due()` → a CNP,
 *                  a received CNP → `rp.onCnp()`.
 * With a driver that reports frames as they start on the wire (nic-driver/driver.ts
 * TxBackpressure), port.ts charges them then instead: `waitsForWire(t)` when the frame is built,
 * `onWire(len)` when it starts on the wire (stack/wire-charges.ts keeps them in order).
 *
 * The byte counter counts frame bytes (without preamble, FCS and gap), as Zhu's DCQCN simulator
 * does (ns3-rdma qbb-net-device.cc DequeueAndTransmit: `m_txBytes[fIndex][i] -= p->GetSize()`
 * as the packet is dequeued for the wire); mlx5's rp_byte_reset is "bytes transmitted" with no
 * wire overhead named. The pacer's gap counts the wire's bytes (pacer.ts).
 */
import type { Clock } from '../../base/clock';
import type { TransportSpec } from '../../packets/build';
import { OPCODES, OpFlag } from '../../packets/opcodes';
import { NotificationPoint } from './np';
import { Pacer } from './pacer';
import { DcqcnReactionPoint } from './rp/dcqcn';
import type { CongestionSettings } from './parameters';

export class QpCongestion {
  /** Null when the NP is off, or for a UD QP (it never sends CNPs). */
  readonly np: NotificationPoint | null;
  /** Null when the RP is off, or for a UD QP (no CNP can name it). */
  readonly rp: DcqcnReactionPoint | null;
  readonly pacer: Pacer | null;

  constructor(
    clock: Clock,
    readonly settings: CongestionSettings,
    connected: boolean,
    resume: () => void,
  ) {
    this.np = settings.np && connected ? new NotificationPoint(clock, settings.params) : null;
    const rp = settings.rp && connected ? new DcqcnReactionPoint(clock, settings.params, settings.lineRateMbps) : null;
    this.rp = rp;
    this.pacer = rp !== null ? new Pacer(clock, rp, resume, settings.pacerSlackUs * 1000, settings.paceUnlimited) : null;
    if (rp !== null && this.pacer !== null) {
      const pacer = this.pacer;
      rp.onRateChange = () => pacer.rateChanged();
    }
  }

  /** The pacer's gate: true when the requester may send its next packet now. */
  admit(): boolean {
    return this.pacer === null || this.pacer.admit();
  }

  /** Whether a frame of `t` is charged to the pacer and the byte counter: a request of a QP with a reaction point. */
  private charged(t: TransportSpec): boolean {
    return this.rp !== null && ((OPCODES[t.bth.opcode]?.flags ?? 0) & OpFlag.REQ) !== 0;
  }

  /** A frame of `len` bytes was built for this QP: a request feeds the pacer and the byte counter. */
  sent(t: TransportSpec, len: number): void {
    if (this.charged(t)) this.onWire(len);
  }

  /**
   * Wire-time charging: true when a frame of `t` just built is to be charged when it starts on the
   * wire (a request of a QP with a reaction point); the pacer then counts it as waiting.
   */
  waitsForWire(t: TransportSpec): boolean {
    if (!this.charged(t)) return false;
    (this.pacer as Pacer).built();
    return true;
  }

  /** Wire-time charging: a frame `waitsForWire` took never reached the driver; the pacer stops waiting for it. */
  notHanded(): void {
    this.pacer?.dropped();
  }

  /** Wire-time charging: a request frame of `len` bytes that `waitsForWire` took started on the wire. */
  onWire(len: number): void {
    const rp = this.rp;
    if (rp === null) return;
    (this.pacer as Pacer).sent(len);
    rp.onSent(len);
  }

  /** Stops every timer (QP reset, error, destroy, or new settings). */
  stop(): void {
    this.pacer?.stop();
    this.rp?.stop();
  }
}
