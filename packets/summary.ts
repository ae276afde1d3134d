/**
 * Human-readable forms of a decoded frame: a one-line summary in the spirit of
 * a capture tool's packet list, and a full field tree (`roce decode -v`).
 */
import { bswap32, hex32, hex64, ipv4ToString, ipv6ToString, macToString, toHex } from './bytes';
import { type RocePacket, packetAddresses } from './decode';
import { describeSyndrome } from './aeth';
import { madSummary, madTreeLines } from './mad-summary';

const hexQp = (qpn: number): string => `0x${qpn.toString(16).padStart(6, '0')}`;

/** Key extension-header fields in a few words, e.g. "RETH va=0x… rkey=0x… len=4096". */
export function extensionSummary(p: RocePacket): string {
  const parts: string[] = [];
  if (p.xrcEth) parts.push(`XRCSRQ=${hexQp(p.xrcEth.xrcSrq)}`);
  if (p.deth) parts.push(`QKey=${hex32(p.deth.qkey)} SrcQP=${hexQp(p.deth.srcQp)}`);
  if (p.feth) parts.push(`FETH sel=${p.feth.selectivity} plt=${p.feth.placementType}`);
  if (p.reth) parts.push(`VA=${hex64(p.reth.va)} RKey=${hex32(p.reth.rkey)} Len=${p.reth.dmaLength}`);
  if (p.atomicEth) {
    parts.push(`VA=${hex64(p.atomicEth.va)} RKey=${hex32(p.atomicEth.rkey)} SwapAdd=${hex64(p.atomicEth.swapAdd)} Cmp=${hex64(p.atomicEth.compare)}`);
  }
  if (p.aeth) parts.push(`${describeSyndrome(p.aeth.syndrome)} MSN=${p.aeth.msn}`);
  if (p.atomicAckEth) parts.push(`Orig=${hex64(p.atomicAckEth.origData)}`);
  if (p.immDt) parts.push(`Imm=${hex32(p.immDt.value)}`);
  if (p.ieth) parts.push(`InvRKey=${hex32(p.ieth.rkey)}`);
  return parts.join(' ');
}

/** One line: frame, time, endpoints, opcode, QPN, PSN, AckReq, key fields, payload, ICRC status. */
export function summaryLine(frame: number, time: number, p: RocePacket): string {
  const { src, dst } = packetAddresses(p);
  const ends = p.udp ? `${src}:${p.udp.srcPort} → ${dst}:${p.udp.dstPort}` : `${src} → ${dst}`;
  const cols = [String(frame).padStart(5), time.toFixed(6).padStart(12), `v${p.version}`, ends];
  const b = p.bth;
  if (b !== null) {
    cols.push(p.info?.name ?? `UNKNOWN_0x${b.opcode.toString(16).padStart(2, '0')}`);
    cols.push(`QP=${hexQp(b.destQp)}`, `PSN=${b.psn}`);
    if (b.ackReq) cols.push('A');
    if (b.se) cols.push('SE');
    if (b.fecn) cols.push('FECN');
    if (b.becn) cols.push('BECN');
    const ext = extensionSummary(p);
    if (ext) cols.push(ext);
    if (p.mad !== null) cols.push(madSummary(p.mad));
    if (p.payloadLength > 0) cols.push(`len=${p.payloadLength}`);
  }
  if (p.truncated) cols.push(`[capture truncated: ${p.payloadCaptured} of ${p.payloadLength} payload bytes, ICRC not captured]`);
  if (p.icrcOk !== null) cols.push(p.icrcOk ? 'ICRC ok' : 'ICRC BAD');
  if (p.error !== null) cols.push(`[${p.error.code}: ${p.error.message}]`);
  if (p.madError !== null) cols.push(`[MAD ${p.madError.code}: ${p.madError.message}]`);
  return cols.join(' ');
}

const yes = (b: boolean): string => (b ? '1' : '0');

/** The full field tree, one header per block. `frameBytes` is the frame itself (for payload preview). */
export function fieldTree(frame: number, time: number, capLen: number, p: RocePacket, frameBytes: Uint8Array): string {
  const out: string[] = [`Frame ${frame}: ${capLen} bytes, time ${time.toFixed(9)}`];
  const line = (indent: number, text: string): void => {
    out.push(`${'  '.repeat(indent)}${text}`);
  };
  if (p.eth) {
    line(1, `Ethernet II: ${macToString(p.eth.src)} → ${macToString(p.eth.dst)}, type 0x${p.eth.etherType.toString(16).padStart(4, '0')}`);
    if (p.eth.vlan) line(2, `802.1Q: PCP ${p.eth.vlan.pcp}, DEI ${p.eth.vlan.dei}, VID ${p.eth.vlan.vid}`);
  }
  if (p.ipv4) {
    const h = p.ipv4;
    line(1, `IPv4: ${ipv4ToString(h.src)} → ${ipv4ToString(h.dst)}`);
    line(2, `IHL ${h.ihl}, DSCP ${h.dscp}, ECN ${h.ecn}, total length ${h.totalLength}, ID 0x${h.identification.toString(16).padStart(4, '0')}`);
    line(2, `DF ${yes(h.dontFragment)}, MF ${yes(h.moreFragments)}, fragment offset ${h.fragmentOffset}, TTL ${h.ttl}, protocol ${h.protocol}`);
    line(2, `header checksum 0x${h.checksum.toString(16).padStart(4, '0')} [${p.ipChecksumOk ? 'correct' : 'INCORRECT'}]`);
  }
  const v6 = p.ipv6 ?? p.grh;
  if (v6) {
    line(1, `${p.grh ? 'GRH' : 'IPv6'}: ${ipv6ToString(v6.src)} → ${ipv6ToString(v6.dst)}`);
    line(2, `traffic class 0x${v6.trafficClass.toString(16).padStart(2, '0')}, flow label 0x${v6.flowLabel.toString(16).padStart(5, '0')}, payload length ${v6.payloadLength}, next header ${v6.nextHeader}, hop limit ${v6.hopLimit}`);
  }
  if (p.udp) {
    line(1, `UDP: ${p.udp.srcPort} → ${p.udp.dstPort}, length ${p.udp.length}, checksum 0x${p.udp.checksum.toString(16).padStart(4, '0')}`);
  }
  const b = p.bth;
  if (b) {
    line(1, `BTH: opcode 0x${b.opcode.toString(16).padStart(2, '0')} (${p.info?.name ?? 'unknown'})`);
    line(2, `SE ${yes(b.se)}, MigReq ${yes(b.migReq)}, pad count ${b.padCount}, TVer ${b.tver}, P_Key 0x${b.pkey.toString(16).padStart(4, '0')}`);
    line(2, `FECN ${yes(b.fecn)}, BECN ${yes(b.becn)}, reserved 0x${b.resv6.toString(16).padStart(2, '0')}, DestQP ${hexQp(b.destQp)}`);
    line(2, `AckReq ${yes(b.ackReq)}, reserved 0x${b.resv7.toString(16).padStart(2, '0')}, PSN ${b.psn} (0x${b.psn.toString(16).padStart(6, '0')})`);
  }
  if (p.xrcEth) line(1, `XRCETH: XRC SRQ ${hexQp(p.xrcEth.xrcSrq)}`);
  if (p.rdEth) line(1, `RDETH: EE context ${hexQp(p.rdEth.eeContext)}`);
  if (p.deth) line(1, `DETH: Q_Key ${hex32(p.deth.qkey)}, source QP ${hexQp(p.deth.srcQp)}`);
  if (p.feth) line(1, `FETH: selectivity level ${p.feth.selectivity}, placement type ${p.feth.placementType}`);
  if (p.reth) line(1, `RETH: VA ${hex64(p.reth.va)}, R_Key ${hex32(p.reth.rkey)}, DMA length ${p.reth.dmaLength}`);
  if (p.atomicEth) {
    const a = p.atomicEth;
    line(1, `AtomicETH: VA ${hex64(a.va)}, R_Key ${hex32(a.rkey)}, swap/add ${hex64(a.swapAdd)}, compare ${hex64(a.compare)}`);
  }
  if (p.aeth) line(1, `AETH: syndrome 0x${p.aeth.syndrome.toString(16).padStart(2, '0')} (${describeSyndrome(p.aeth.syndrome)}), MSN ${p.aeth.msn}`);
  if (p.atomicAckEth) line(1, `AtomicAckETH: original data ${hex64(p.atomicAckEth.origData)}`);
  if (p.immDt) line(1, `ImmDt: ${hex32(p.immDt.value)}`);
  if (p.ieth) line(1, `IETH: R_Key ${hex32(p.ieth.rkey)}`);
  if (p.cnp) line(1, `CNP reserved: ${toHex(p.cnp.reserved)}`);
  if (p.mad) for (const [indent, text] of madTreeLines(p.mad)) line(indent, text);
  if (p.payloadOff >= 0 && b) {
    const preview = frameBytes.subarray(p.payloadOff, p.payloadOff + Math.min(p.payloadLength, 32));
    const shown = Math.min(p.payloadCaptured, 32);
    const kept = p.truncated ? ` (${p.payloadCaptured} captured)` : '';
    line(1, `Payload: ${p.payloadLength} bytes${kept}${shown > 0 ? `: ${toHex(preview.subarray(0, shown))}${p.payloadCaptured > 32 ? '…' : ''}` : ''}`);
    if (b.padCount > 0) line(2, `pad: ${b.padCount} bytes`);
  }
  if (p.truncated) line(1, 'ICRC: not captured (the capture kept only the start of the frame)');
  if (p.icrc !== null) {
    const status = p.icrcOk === null ? 'not checked' : p.icrcOk ? 'correct' : `INCORRECT, should be ${hex32(bswap32(p.icrcExpected ?? 0))}`;
    line(1, `ICRC: ${hex32(bswap32(p.icrc))} (wire order) [${status}]`);
  }
  if (p.error) line(1, `Error: ${p.error.code} at byte ${p.error.offset}: ${p.error.message}`);
  if (p.madError) line(1, `MAD error: ${p.madError.code} at byte ${p.madError.offset}: ${p.madError.message}`);
  return out.join('\n');
}
