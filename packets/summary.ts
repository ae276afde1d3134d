/**
 * Human-readable forms of a decoded frame: a one-line summary in the spirit of
 * a capture tool's packet list, and a full field tree (`roce decode -v`).
 */
import { bswap32, hex32, hex64, ipv4ToString, ipv6ToString, macToString, toHex } from './bytes';
import { type RocePacket, frameFault, isCaptureCut, isHeaderPart, writePacketAddress } from './decode';
import type { BthHeader } from './bth';
import { describeSyndrome } from './aeth';
import { OPCODES } from './opcodes';
import { madSummary, madTreeLines } from './mad-summary';
import { type TextBytes, textOf, utf8 } from '../base/text-bytes';
import { type ExactTime, secondsText } from '../base/exact-time';
import type { SummaryPieces } from './summary-pieces';

const hexQp = (qpn: number): string => `0x${qpn.toString(16).padStart(6, '0')}`;

/** ' → ' in UTF-8. */
const ARROW = utf8(' → ');
/** The summary's constant pieces, encoded once: copying bytes beats reading a string's characters. */
const V1 = utf8(' v1 ');
const V2 = utf8(' v2 ');
const QP = utf8(' QP=');
const PSN = utf8(' PSN=');
const ACK_REQ = utf8(' A');
const SOLICITED = utf8(' SE');
const FECN = utf8(' FECN');
const BECN = utf8(' BECN');
const LEN = utf8(' len=');
const ICRC_OK = utf8(' ICRC ok');
const ICRC_BAD = utf8(' ICRC BAD');
const MSN = utf8(' MSN=');
/** The name of every opcode in the table, UTF-8 encoded, computed once. */
const OPCODE_NAMES: readonly (Uint8Array | undefined)[] = OPCODES.map((e) => (e === undefined ? undefined : utf8(e.name)));
/** `describeSyndrome` of every syndrome byte, computed and encoded once. */
const SYNDROME_TEXT: readonly Uint8Array[] = Array.from({ length: 256 }, (_, s) => utf8(describeSyndrome(s)));

/**
 * Writes the key extension-header fields in a few words, e.g. "VA=0x… RKey=0x… Len=4096", with a
 * space before each part when `lead` is true (else between parts only); returns whether it wrote any.
 */
export function writeExtensionSummary(t: TextBytes, p: RocePacket, lead: boolean): boolean {
  let wrote = false;
  if (p.xrcEth) {
    wrote = part(t, lead, wrote);
    t.text('XRCSRQ=');
    t.hex(p.xrcEth.xrcSrq, 6);
  }
  if (p.deth) {
    wrote = part(t, lead, wrote);
    t.text('QKey=');
    t.hex(p.deth.qkey, 8);
    t.text(' SrcQP=');
    t.hex(p.deth.srcQp, 6);
  }
  if (p.feth) {
    wrote = part(t, lead, wrote);
    t.text(`FETH sel=${p.feth.selectivity} plt=${p.feth.placementType}`);
  }
  if (p.reth) {
    wrote = part(t, lead, wrote);
    t.text(`VA=${hex64(p.reth.va)} RKey=`);
    t.hex(p.reth.rkey, 8);
    t.text(' Len=');
    t.uint(p.reth.dmaLength);
  }
  if (p.atomicEth) {
    wrote = part(t, lead, wrote);
    t.text(`VA=${hex64(p.atomicEth.va)} RKey=${hex32(p.atomicEth.rkey)} SwapAdd=${hex64(p.atomicEth.swapAdd)} Cmp=${hex64(p.atomicEth.compare)}`);
  }
  if (p.aeth) {
    wrote = part(t, lead, wrote);
    const syndrome = SYNDROME_TEXT[p.aeth.syndrome & 0xff];
    if (syndrome !== undefined) t.bytes(syndrome);
    else t.text(describeSyndrome(p.aeth.syndrome));
    t.bytes(MSN);
    t.uint(p.aeth.msn);
  }
  if (p.atomicAckEth) {
    wrote = part(t, lead, wrote);
    t.text(`Orig=${hex64(p.atomicAckEth.origData)}`);
  }
  if (p.immDt) {
    wrote = part(t, lead, wrote);
    t.text('Imm=');
    t.hex(p.immDt.value, 8);
  }
  if (p.ieth) {
    wrote = part(t, lead, wrote);
    t.text('InvRKey=');
    t.hex(p.ieth.rkey, 8);
  }
  return wrote;
}

/** Starts one part of the extension summary: a space before it unless it is the first and not led. */
function part(t: TextBytes, lead: boolean, wrote: boolean): true {
  if (lead || wrote) t.byte(0x20);
  return true;
}

/** Key extension-header fields in a few words, e.g. "VA=0x… RKey=0x… Len=4096". */
export function extensionSummary(p: RocePacket): string {
  return textOf((t) => writeExtensionSummary(t, p, false));
}

/** The endpoints column: ` v2 SRC:SPORT → DST:DPORT` (` v1 SGID → DGID` for RoCE v1). */
export function writeEndpoints(t: TextBytes, p: RocePacket): void {
  const udp = p.udp;
  t.bytes(p.version === 1 ? V1 : V2);
  writePacketAddress(t, p, 'src', false);
  if (udp) {
    t.byte(0x3a);
    t.uint(udp.srcPort);
  }
  t.bytes(ARROW);
  writePacketAddress(t, p, 'dst', false);
  if (udp) {
    t.byte(0x3a);
    t.uint(udp.dstPort);
  }
}

/** ` NAME QP=0xQQQQQQ PSN=`: the opcode, the destination QP, and the PSN's label. */
export function writeOpcodeQp(t: TextBytes, p: RocePacket, b: BthHeader): void {
  t.byte(0x20);
  const name = OPCODE_NAMES[b.opcode & 0xff];
  if (p.info !== undefined) {
    if (name !== undefined && p.info.opcode === b.opcode) t.bytes(name);
    else t.text(p.info.name);
  } else {
    t.text('UNKNOWN_');
    t.hex(b.opcode, 2);
  }
  t.bytes(QP);
  t.hex(b.destQp, 6);
  t.bytes(PSN);
}

/**
 * Writes one line (without its newline): frame, time (in seconds, with its decimals), endpoints,
 * opcode, QPN, PSN, AckReq, key fields, payload, ICRC status. Columns are separated by one space. With `pieces`, the runs that
 * repeat within a flow are copied from those encoded before; with `clock`, that text is the time column instead of `time`.
 */
export function writeSummaryLine(
  t: TextBytes,
  frame: number,
  time: ExactTime,
  p: RocePacket,
  pieces?: SummaryPieces,
  clock?: string,
  /** An upper-layer protocol's words (ulp/), after the headers' and the MAD's: their text, or what writes it. */
  ulpWords?: string | ((t: TextBytes) => void),
): void {
  t.padUint(frame, 5);
  t.byte(0x20);
  // A time of day or a date (`roce decode -t a`, `-t ad`) comes as its text; else the seconds.
  if (clock !== undefined) t.text(clock.padStart(12));
  else t.seconds(time.sec, time.nsec, time.digits, 12);
  if (pieces !== undefined && p.ipv4 !== null && p.udp !== null && p.version === 2) t.bytes(pieces.endpoints(p, p.ipv4, p.udp));
  else writeEndpoints(t, p);
  const b = p.bth;
  if (b !== null) {
    if (pieces !== undefined && p.info !== undefined && p.info.opcode === b.opcode) t.bytes(pieces.opcodeQp(p, b));
    else writeOpcodeQp(t, p, b);
    t.uint(b.psn);
    if (b.ackReq) t.bytes(ACK_REQ);
    if (b.se) t.bytes(SOLICITED);
    if (b.fecn) t.bytes(FECN);
    if (b.becn) t.bytes(BECN);
    writeExtensionSummary(t, p, true);
    if (p.mad !== null) {
      t.byte(0x20);
      t.text(madSummary(p.mad));
    }
    if (ulpWords !== undefined) {
      t.byte(0x20);
      if (typeof ulpWords === 'string') t.text(ulpWords);
      else ulpWords(t);
    }
    if (p.payloadLength > 0) {
      t.bytes(LEN);
      t.uint(p.payloadLength);
    }
  }
  if (p.truncated) t.text(truncationNote(p));
  if (p.icrcOk !== null) t.bytes(p.icrcOk ? ICRC_OK : ICRC_BAD);
  const fault = frameFault(p);
  if (fault !== null) t.text(` [${fault.code}: ${fault.message}]`);
  if (p.madError !== null) t.text(` [MAD ${p.madError.code}: ${p.madError.message}]`);
}

/**
 * What the capture did not keep of a truncated frame, for its summary line: where it ends when
 * that is inside a header, and how much of the payload it holds.
 */
function truncationNote(p: RocePacket): string {
  const part = p.truncatedIn;
  if (part === 'BTH' || part === 'GRH') return ` [capture truncated inside the ${part}]`;
  const where = isHeaderPart(part) ? ` inside the ${part}` : '';
  const payload = p.payloadLength > 0 ? `${p.payloadCaptured} of ${p.payloadLength} payload bytes, ` : '';
  return ` [capture truncated${where}: ${payload}ICRC not captured]`;
}

/** One line: frame, time, endpoints, opcode, QPN, PSN, AckReq, key fields, payload, ICRC status. */
export function summaryLine(frame: number, time: ExactTime, p: RocePacket): string {
  return textOf((t) => writeSummaryLine(t, frame, time, p));
}

const yes = (b: boolean): string => (b ? '1' : '0');

/**
 * The full field tree, one header per block. `frameBytes` is the frame itself (for payload preview);
 * `ulpLines`, an upper-layer protocol's lines (ulp/) as [indent, text], follow the MAD's.
 */
export function fieldTree(
  frame: number,
  time: ExactTime,
  capLen: number,
  p: RocePacket,
  frameBytes: Uint8Array,
  ulpLines?: readonly [number, string][],
): string {
  const out: string[] = [`Frame ${frame}: ${capLen} bytes, time ${secondsText(time)}`];
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
    line(
      2,
      `traffic class 0x${v6.trafficClass.toString(16).padStart(2, '0')}, flow label 0x${v6.flowLabel.toString(16).padStart(5, '0')}, payload length ${v6.payloadLength}, next header ${v6.nextHeader}, hop limit ${v6.hopLimit}`,
    );
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
  if (ulpLines !== undefined) for (const [indent, text] of ulpLines) line(indent, text);
  if (isCaptureCut(p) && p.error !== null) line(1, `Truncated: ${p.error.reason} (at byte ${p.error.offset})`);
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
  const fault = frameFault(p);
  if (fault) line(1, `Error: ${fault.code} at byte ${fault.offset}: ${fault.message}`);
  if (p.madError) line(1, `MAD error: ${p.madError.code} at byte ${p.madError.offset}: ${p.madError.message}`);
  return out.join('\n');
}
