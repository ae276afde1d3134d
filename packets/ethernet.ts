/**
 * Ethernet II header (IEEE 802.3), with an optional IEEE 802.1Q VLAN tag.
 * No FCS: captures and AF_XDP/AF_PACKET frames come without it.
 */
import { need } from './errors';
import { checkUint, getMac, setMac } from './bytes';

export const EtherType = {
  IPv4: 0x0800,
  ARP: 0x0806,
  VLAN: 0x8100,
  QinQ: 0x88a8,
  IPv6: 0x86dd,
  /** RoCE v1: GRH + BTH directly over Ethernet. */
  RoCEv1: 0x8915,
} as const;

export const OFF = Object.freeze({ DST: 0, SRC: 6, TYPE: 12, TCI: 14, INNER_TYPE: 16 });
export const ETH_LEN = 14;
export const VLAN_TAG_LEN = 4;

export interface VlanTag {
  /** Priority code point (3 bits): the PFC priority. */
  pcp: number;
  /** Drop eligible indicator (1 bit). */
  dei: number;
  /** VLAN identifier (12 bits). */
  vid: number;
  /** Tag protocol identifier: 0x8100 (802.1Q) or 0x88a8 (802.1ad). */
  tpid: number;
}

export interface EthernetHeader {
  /** Destination MAC as a 48-bit integer. */
  dst: number;
  /** Source MAC as a 48-bit integer. */
  src: number;
  /** The VLAN tag, or null for an untagged frame. */
  vlan: VlanTag | null;
  /** EtherType of the payload (after the tag, if any). */
  etherType: number;
}

export function ethernetHeaderLen(h: EthernetHeader): number {
  return h.vlan === null ? ETH_LEN : ETH_LEN + VLAN_TAG_LEN;
}

export function parseEthernet(view: DataView, off: number, end: number = view.byteLength): EthernetHeader {
  need(end, off, ETH_LEN, 'Ethernet header');
  const type = view.getUint16(off + OFF.TYPE);
  if (type === EtherType.VLAN || type === EtherType.QinQ) {
    need(end, off, ETH_LEN + VLAN_TAG_LEN, '802.1Q tag');
    const tci = view.getUint16(off + OFF.TCI);
    return {
      dst: getMac(view, off + OFF.DST),
      src: getMac(view, off + OFF.SRC),
      vlan: { pcp: tci >>> 13, dei: (tci >>> 12) & 1, vid: tci & 0xfff, tpid: type },
      etherType: view.getUint16(off + OFF.INNER_TYPE),
    };
  }
  return { dst: getMac(view, off + OFF.DST), src: getMac(view, off + OFF.SRC), vlan: null, etherType: type };
}

/** Writes the header at `off` and returns its length. */
export function emitEthernet(h: EthernetHeader, view: DataView, off: number): number {
  checkUint(h.etherType, 0xffff, 'etherType');
  setMac(view, off + OFF.DST, h.dst);
  setMac(view, off + OFF.SRC, h.src);
  if (h.vlan === null) {
    view.setUint16(off + OFF.TYPE, h.etherType);
    return ETH_LEN;
  }
  checkUint(h.vlan.pcp, 7, 'vlan.pcp');
  checkUint(h.vlan.dei, 1, 'vlan.dei');
  checkUint(h.vlan.vid, 0xfff, 'vlan.vid');
  view.setUint16(off + OFF.TYPE, h.vlan.tpid);
  view.setUint16(off + OFF.TCI, (h.vlan.pcp << 13) | (h.vlan.dei << 12) | h.vlan.vid);
  view.setUint16(off + OFF.INNER_TYPE, h.etherType);
  return ETH_LEN + VLAN_TAG_LEN;
}
