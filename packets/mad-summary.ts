/**
 * Human-readable forms of a decoded MAD: a few words for the one-line summary
 * (`CM REQ svc 0x0000000001064e20 → 198.18.0.2:20000 QPN 0x000011 PSN 7`) and
 * the field tree lines of `roce decode -v` (every field of the common header,
 * of the CM message and of the IP CM private data, with the meaning of coded
 * values: reject reasons, timeouts as time, path MTU in bytes).
 */
import { hex64, ipv6ToString, toHex } from './bytes';
import type { DecodedMad } from './mad-payload';
import { CM_ATTR_NAMES, MgmtClass, isResponse, methodName, mgmtClassName } from './mad';
import type { Field } from './field-table';
import { CM_FIELD_TABLES, type CmMessage, cmTimeoutMicros } from './cm/message';
import { rejReasonText, REJ_MESSAGE_NAMES } from './cm/rej';
import { MRA_MESSAGE_NAMES } from './cm/mra';
import { SIDR_STATUS_NAMES } from './cm/sidr-rep';
import { PORT_SPACE_NAMES, isIpCmServiceId, splitServiceId } from './cm/service-id';
import { ipCmAddressToString } from './cm/ip-private-data';

const hexN = (v: number, digits: number): string => `0x${v.toString(16).padStart(digits, '0')}`;
const qpn = (v: number): string => hexN(v, 6);

/** 4.096 µs × 2^code as "4.29 s", "131 ms", "16.4 µs". */
export function timeoutText(code: number): string {
  const us = cmTimeoutMicros(code);
  if (us >= 1e6) return `${(us / 1e6).toPrecision(3)} s`;
  if (us >= 1e3) return `${(us / 1e3).toPrecision(3)} ms`;
  return `${us.toPrecision(3)} µs`;
}

/** "destination ip:port" of an IP CM REQ/SIDR_REQ, or null. */
function ipCmTarget(mad: DecodedMad, serviceId: bigint): string | null {
  const sid = splitServiceId(serviceId);
  if (mad.ipCm === null || sid === null) return null;
  const dst = ipCmAddressToString(mad.ipCm.dstAddr, mad.ipCm.ipVersion);
  return mad.ipCm.ipVersion === 6 ? `[${dst}]:${sid.port}` : `${dst}:${sid.port}`;
}

function cmWords(mad: DecodedMad, m: CmMessage): string {
  switch (m.name) {
    case 'REQ': {
      const f = m.fields;
      const to = ipCmTarget(mad, f.serviceId);
      return `CM REQ svc ${hex64(f.serviceId)}${to === null ? '' : ` → ${to}`} QPN ${qpn(f.localQpn)} PSN ${f.startingPsn} comm ${hexN(f.localCommId, 8)}`;
    }
    case 'REP':
      return `CM REP comm ${hexN(m.fields.localCommId, 8)} → ${hexN(m.fields.remoteCommId, 8)} QPN ${qpn(m.fields.localQpn)} PSN ${m.fields.startingPsn}`;
    case 'RTU':
    case 'DREP':
      return `CM ${m.name} comm ${hexN(m.fields.localCommId, 8)} → ${hexN(m.fields.remoteCommId, 8)}`;
    case 'DREQ':
      return `CM DREQ comm ${hexN(m.fields.localCommId, 8)} → ${hexN(m.fields.remoteCommId, 8)} QPN ${qpn(m.fields.remoteQpnEecn)}`;
    case 'REJ':
      return `CM REJ ${REJ_MESSAGE_NAMES[m.fields.messageRejected] ?? m.fields.messageRejected} reason ${m.fields.reason} (${rejReasonText(m.fields.reason)}) comm ${hexN(m.fields.localCommId, 8)} → ${hexN(m.fields.remoteCommId, 8)}`;
    case 'MRA':
      return `CM MRA ${MRA_MESSAGE_NAMES[m.fields.messageMraed] ?? m.fields.messageMraed} service timeout ${timeoutText(m.fields.serviceTimeout)}`;
    case 'SIDR_REQ': {
      const to = ipCmTarget(mad, m.fields.serviceId);
      return `CM SIDR_REQ svc ${hex64(m.fields.serviceId)}${to === null ? '' : ` → ${to}`} req ${hexN(m.fields.requestId, 8)}`;
    }
    case 'SIDR_REP':
      return `CM SIDR_REP status ${m.fields.status} (${SIDR_STATUS_NAMES[m.fields.status] ?? 'reserved'}) QPN ${qpn(m.fields.qpn)} Q_Key ${hexN(m.fields.qkey, 8)} req ${hexN(m.fields.requestId, 8)}`;
    case 'LAP':
      return `CM LAP comm ${hexN(m.fields.localCommId, 8)} → ${hexN(m.fields.remoteCommId, 8)} QPN ${qpn(m.fields.remoteQpnEecn)}`;
    case 'APR':
      return `CM APR status ${m.fields.apStatus} comm ${hexN(m.fields.localCommId, 8)} → ${hexN(m.fields.remoteCommId, 8)}`;
  }
}

/** The MAD in a few words for the summary line. */
export function madSummary(mad: DecodedMad): string {
  if (mad.cm !== null) return cmWords(mad, mad.cm);
  const h = mad.header;
  const attr = h.mgmtClass === MgmtClass.CM ? CM_ATTR_NAMES[h.attributeId] : undefined;
  return `MAD ${mgmtClassName(h.mgmtClass)} ${methodName(h.method)} attr ${attr ?? hexN(h.attributeId, 4)} TID ${hex64(h.transactionId)}`;
}

/** A byte string as hex up to its last non-zero byte, then how many zero bytes end it. */
export function trimmedHex(b: Uint8Array): string {
  let n = b.length;
  while (n > 0 && b[n - 1] === 0) n--;
  if (n === 0) return `${b.length} zero bytes`;
  return n === b.length ? toHex(b) : `${toHex(b.subarray(0, n))} + ${b.length - n} zero bytes`;
}

/** What a coded value means, for the field tree ("" when nothing to add). */
function meaning(message: CmMessage['name'], name: string, v: number | bigint | boolean | Uint8Array): string {
  if (typeof v === 'bigint') {
    if (name !== 'serviceId') return '';
    const sid = splitServiceId(v);
    if (sid === null) return '';
    const ps = PORT_SPACE_NAMES[sid.portSpace] ?? hexN(sid.portSpace, 4);
    return ` (RDMA CM ${ps} port ${sid.port}${isIpCmServiceId(v) ? '' : ', not an IP CM service ID'})`;
  }
  if (typeof v !== 'number') return '';
  if (/Timeout$|^targetAckDelay$/.test(name)) return ` (${timeoutText(v)})`;
  if (name === 'pathMtu') return v >= 1 && v <= 5 ? ` (${128 << v} bytes)` : ' (reserved)';
  if (name === 'transportServiceType') return ` (${['RC', 'UC', 'RD', 'extended'][v] ?? ''})`;
  if (message === 'REJ' && name === 'reason') return ` (${rejReasonText(v)})`;
  if (message === 'REJ' && name === 'messageRejected') return ` (${REJ_MESSAGE_NAMES[v] ?? 'reserved'})`;
  if (message === 'MRA' && name === 'messageMraed') return ` (${MRA_MESSAGE_NAMES[v] ?? 'reserved'})`;
  if (message === 'SIDR_REP' && name === 'status') return ` (${SIDR_STATUS_NAMES[v] ?? 'reserved'})`;
  return '';
}

function fieldText(f: Field, v: number | bigint | boolean | Uint8Array): string {
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'bigint') return hex64(v);
  if (v instanceof Uint8Array) return f.kind === 'gid' ? ipv6ToString(v) : trimmedHex(v);
  return f.width >= 16 ? `${hexN(v, Math.ceil(f.width / 4))} (${v})` : String(v);
}

/** The field tree lines of the MAD, each as [indent, text] (indent 1 = a header line). */
export function madTreeLines(mad: DecodedMad): [number, string][] {
  const h = mad.header;
  const out: [number, string][] = [];
  const attr = h.mgmtClass === MgmtClass.CM ? CM_ATTR_NAMES[h.attributeId] : undefined;
  out.push([1, `MAD: ${mgmtClassName(h.mgmtClass)} ${methodName(h.method)}${attr === undefined ? '' : ` ${attr}`}`]);
  out.push([
    2,
    `base version ${h.baseVersion}, class ${hexN(h.mgmtClass, 2)}, class version ${h.classVersion}, method ${hexN(h.method, 2)} (R ${isResponse(h.method) ? 1 : 0})`,
  ]);
  out.push([2, `status ${hexN(h.status, 4)}, class specific ${hexN(h.classSpecific, 4)}, transaction ID ${hex64(h.transactionId)}`]);
  out.push([2, `attribute ID ${hexN(h.attributeId, 4)}, reserved ${hexN(h.reserved, 4)}, attribute modifier ${hexN(h.attributeModifier, 8)}`]);
  const m = mad.cm;
  if (m !== null) {
    out.push([1, `CM ${m.name}:`]);
    const table = CM_FIELD_TABLES[m.name];
    const values = m.fields as Record<string, number | bigint | boolean | Uint8Array>;
    for (const [name, f] of Object.entries(table)) {
      const v = values[name];
      if (v === undefined) continue;
      const means = meaning(m.name, name, v);
      // A coded value (reason, status, timeout...) in decimal with its meaning; other numbers by width.
      out.push([2, `${name} ${means !== '' && typeof v === 'number' ? String(v) : fieldText(f, v)}${means}`]);
    }
  }
  const ip = mad.ipCm;
  if (ip !== null) {
    out.push([1, 'IP CM private data (Annex A11):']);
    out.push([2, `version ${ip.majorVersion}.${ip.minorVersion}, IP version ${ip.ipVersion}, reserved ${ip.reserved}, source port ${ip.srcPort}`]);
    out.push([2, `source ${ipCmAddressToString(ip.srcAddr, ip.ipVersion)}, destination ${ipCmAddressToString(ip.dstAddr, ip.ipVersion)}`]);
  }
  return out;
}
