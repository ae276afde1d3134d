/**
 * The upper-layer protocols `roce decode` shows (ulp/: NVMe-oF over RDMA), as the capture engine
 * runs them: their field names beside the wire's (`decodeField`, for -Y and -T fields), and the
 * first pass that keeps their state in capture order while batches are decoded on worker threads.
 *
 * Which conversation a frame belongs to is learned from earlier frames (the RDMA CM REQ and REP),
 * and a capsule may span packets; a batch decoded on another thread must start from the state the
 * frames before it left. So the command's thread, as it fills each batch, runs the same decoder
 * over it (`UlpPass.scan`): it reads only frames that can change the state (to the GSI, QP 1, and
 * to queue pairs the decoder has made its own: a few loads per frame for any other), and hands the
 * state as it stood before the batch to whichever thread decodes it. The output is then the same
 * for any number of threads, and from a pipe (the state goes forward with the records, never back).
 */
import { decodeAt } from '../packets/decode';
import { type FieldDef, frameField } from '../packets/frame-fields';
import { EtherType } from '../packets/ethernet';
import { IpProtocol } from '../packets/ipv4';
import { LinkType } from '../packets/pcap';
import { nvmeField } from '../ulp/nvme-rdma/nvme-fields';
import { NvmeDecoder, type NvmeRules } from '../ulp/nvme-rdma/nvme-decoder';
import { type NvmeConversationState, isEmptyState } from '../ulp/nvme-rdma/conversation-state';
import { META_FIELDS } from './decode-batch-layout';

/** A field by Wireshark's name: the wire's (packets/frame-fields.ts), else an upper-layer protocol's. */
export function decodeField(name: string): FieldDef | undefined {
  return frameField(name) ?? nvmeField(name);
}

/**
 * The destination QPN of an Ethernet frame (untagged or one VLAN tag) carrying IPv4 or IPv6, UDP to
 * `rocePort` and a BTH; -1 for any other frame or link type (the caller then decodes it in full).
 */
export function quickDestQp(view: DataView, start: number, end: number, linkType: number, rocePort: number): number {
  if (linkType !== LinkType.Ethernet || end - start < 14) return -1;
  let off = start + 12;
  let type = view.getUint16(off);
  off += 2;
  if (type === EtherType.VLAN) {
    if (end - off < 4) return -1;
    type = view.getUint16(off + 2);
    off += 4;
  }
  let udp: number;
  if (type === EtherType.IPv4) {
    if (end - off < 20) return -1;
    const vihl = view.getUint8(off);
    if (vihl >>> 4 !== 4 || view.getUint8(off + 9) !== IpProtocol.UDP) return -1;
    udp = off + (vihl & 0xf) * 4;
  } else if (type === EtherType.IPv6) {
    if (end - off < 40 || view.getUint8(off + 6) !== IpProtocol.UDP) return -1;
    udp = off + 40;
  } else return -1;
  if (end - udp < 8 + 12 || view.getUint16(udp + 2) !== rocePort) return -1;
  // BTH bytes 5-7: the destination QP.
  return view.getUint32(udp + 8 + 4) & 0xffffff;
}

/** The command thread's pass over each batch, in order, before the batch goes to be decoded. */
export class UlpPass {
  private readonly nvme: NvmeDecoder;

  constructor(
    rules: NvmeRules,
    private readonly rocePort: number,
  ) {
    this.nvme = new NvmeDecoder(rules);
  }

  /** The state before the next batch, as the thread that decodes it gets it (null: nothing yet). */
  snapshot(): NvmeConversationState | null {
    return isEmptyState(this.nvme.state) ? null : structuredClone(this.nvme.state);
  }

  /** Takes the `count` records of a batch (decode-batch-layout.ts) in order. */
  scan(data: ArrayBuffer, meta: ArrayBuffer, count: number): void {
    const view = new DataView(data);
    const bytes = new Uint8Array(data);
    const m = new Float64Array(meta);
    const opts = { rocePort: this.rocePort, verifyIcrc: false, lean: true, leanWithIp: true };
    for (let i = 0; i < count; i++) {
      const k = i * META_FIELDS;
      const start = m[k + 4] as number;
      const end = m[k + 5] as number;
      const linkType = m[k + 2] as number;
      const qp = quickDestQp(view, start, end, linkType, this.rocePort);
      if (qp >= 0 && !this.nvme.wants(qp)) continue;
      const d = decodeAt(view, bytes, start, end, linkType, opts, m[k + 3] as number);
      if (d.roce) this.nvme.observe(d, view, start);
    }
  }
}
