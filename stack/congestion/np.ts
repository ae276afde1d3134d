/**
 * The notification point of one QP: a CE-marked RoCE v2 packet for an RC or UC QP is answered
 * with a Congestion Notification Packet to the QP that sent it (RoCE v2 annex A17.9.2), at most
 * one per `np_min_time_between_cnps` µs. UD QPs never send one: a datagram names no peer QP to
 * notify, and ConnectX generates CNPs for connected QPs only.
 *
 * The CNP's format is the one ConnectX-4 Lx sends (checked field by field against the capture in
 * shared/captures/public/scapy-roce-uts/cnp_connectx4lx.pcap, see docs/congestion.md):
 *   IP:   DSCP np_cnp_dscp (48 by default), ECN ECT(0), DF set, TTL/hop limit of the QP's path;
 *   UDP:  source port 0, destination 4791;
 *   BTH:  opcode CNP (0x81), SE/MigReq/Pad/TVer 0, P_Key 0xFFFF, FECN 0, BECN 1,
 *         DestQP = the remote QP, AckReq 0, PSN 0;
 *   then 16 reserved zero bytes and the ICRC.
 * The VLAN priority (when the path is tagged) is np_cnp_prio in mode 0, the path's own in mode 1.
 */
import { Opcode } from '../../packets/opcodes';
import { DEFAULT_PKEY } from '../../packets/bth';
import { FrameTemplate } from '../../packets/frame-template';
import type { TransportSpec } from '../../packets/build';
import { Ecn } from '../../packets/ecn';
import { CNP_RESERVED_LEN } from '../../packets/cnp';
import type { Clock } from '../../base/clock';
import type { Path } from '../address';
import type { NpParams } from './parameters';

/** The UDP source port of a ConnectX CNP. */
export const CNP_UDP_SOURCE_PORT = 0;

export class NotificationPoint {
  private lastCnpAt = Number.NEGATIVE_INFINITY;
  private tpl: FrameTemplate | null = null;
  private tplPath: Path | null = null;
  /** The CNP, rebuilt in place for each one (the port keeps no reference to it). */
  private readonly cnp: TransportSpec & { bth: { destQp: number } } = {
    bth: {
      opcode: Opcode.CNP,
      destQp: 0,
      psn: 0,
      pkey: DEFAULT_PKEY,
      se: false,
      migReq: false,
      tver: 0,
      fecn: false,
      becn: true,
      resv6: 0,
      ackReq: false,
      resv7: 0,
    },
    cnp: new Uint8Array(CNP_RESERVED_LEN),
  };

  constructor(
    private readonly clock: Clock,
    private readonly p: NpParams,
  ) {}

  /** A CE-marked packet arrived: true when a CNP is due (none sent in the last np_min_time_between_cnps µs). */
  due(): boolean {
    const now = this.clock.now();
    if (now - this.lastCnpAt < this.p.npMinTimeBetweenCnps * 1000) return false;
    this.lastCnpAt = now;
    return true;
  }

  /** The CNP to the remote QP `destQp`. */
  packet(destQp: number): TransportSpec {
    this.cnp.bth.destQp = destQp;
    return this.cnp;
  }

  /** The headers of CNPs on `path` (built once per path). */
  template(path: Path): FrameTemplate {
    if (this.tpl !== null && this.tplPath === path) return this.tpl;
    const p = this.p;
    const vlan = path.vlan === null ? null : { ...path.vlan, pcp: p.npCnpPrioMode === 0 ? p.npCnpPrio : path.vlan.pcp };
    const tc = (p.npCnpDscp << 2) | Ecn.ECT0;
    const ip =
      path.ipVersion === 4
        ? { version: 4 as const, src: v4(path.srcIp), dst: v4(path.dstIp), dscp: p.npCnpDscp, ecn: Ecn.ECT0, ttl: path.hopLimit, dontFragment: true }
        : { version: 6 as const, src: path.srcIp, dst: path.dstIp, trafficClass: tc, flowLabel: path.flowLabel, hopLimit: path.hopLimit };
    this.tpl = new FrameTemplate({ eth: { src: path.srcMac, dst: path.dstMac, vlan }, ip, udp: { srcPort: CNP_UDP_SOURCE_PORT } });
    this.tplPath = path;
    return this.tpl;
  }
}

function v4(b: Uint8Array): number {
  return (((b[0] ?? 0) << 24) | ((b[1] ?? 0) << 16) | ((b[2] ?? 0) << 8) | (b[3] ?? 0)) >>> 0;
}
