/**
 * The JSON form of a decoded MAD, the `mad` key of `roce decode --json`
 * (documented in docs/decode.md): the common header fields, and under `cm` the
 * CM message's fields by the names of its field table (packets/cm/*.ts), with
 * `ipCm` for a REQ or SIDR_REQ. Numbers of up to 32 bits are JSON numbers;
 * 64-bit values (transaction and service IDs, GUIDs) are `0x` + 16 hex digits;
 * GIDs are RFC 5952 addresses; byte strings (private data, ARI) are plain hex.
 */
import { hex64, ipv6ToString, toHex } from './bytes';
import type { DecodedMad } from './mad-payload';
import { CM_ATTR_NAMES, MgmtClass, isResponse } from './mad';
import { CM_FIELD_TABLES } from './cm/message';
import { IP_CM_HEADER_LEN, ipCmAddressToString } from './cm/ip-private-data';

function fieldJson(kind: string, v: unknown): unknown {
  if (typeof v === 'bigint') return hex64(v);
  if (v instanceof Uint8Array) return kind === 'gid' ? ipv6ToString(v) : toHex(v);
  return v;
}

export function madToJson(mad: DecodedMad): Record<string, unknown> {
  const h = mad.header;
  const out: Record<string, unknown> = {
    baseVersion: h.baseVersion,
    mgmtClass: h.mgmtClass,
    classVersion: h.classVersion,
    method: h.method,
    response: isResponse(h.method),
    status: h.status,
    classSpecific: h.classSpecific,
    transactionId: hex64(h.transactionId),
    attributeId: h.attributeId,
    reserved: h.reserved,
    attributeModifier: h.attributeModifier,
    attributeName: (h.mgmtClass === MgmtClass.CM ? CM_ATTR_NAMES[h.attributeId] : undefined) ?? null,
    cm: null,
  };
  const m = mad.cm;
  if (m === null) return out;
  const cm: Record<string, unknown> = { message: m.name };
  const values = m.fields as Record<string, unknown>;
  for (const [name, f] of Object.entries(CM_FIELD_TABLES[m.name])) cm[name] = fieldJson(f.kind, values[name]);
  if (m.name === 'REQ' || m.name === 'SIDR_REQ') {
    const ip = mad.ipCm;
    cm['ipCm'] =
      ip === null
        ? null
        : {
            majorVersion: ip.majorVersion,
            minorVersion: ip.minorVersion,
            ipVersion: ip.ipVersion,
            reserved: ip.reserved,
            srcPort: ip.srcPort,
            src: ipCmAddressToString(ip.srcAddr, ip.ipVersion),
            dst: ipCmAddressToString(ip.dstAddr, ip.ipVersion),
            privateData: toHex(m.fields.privateData.subarray(IP_CM_HEADER_LEN)),
          };
  }
  out['cm'] = cm;
  return out;
}
