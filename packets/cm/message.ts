/**
 * The CM messages by attribute ID: one parse/emit entry point for the class
 * data of a CM MAD (management class 0x07), over the per-message modules.
 * An attribute without a message here (ClassPortInfo, or an unknown ID) is
 * not an error: `parseCmMessage` returns null and the MAD is shown by its
 * common header alone.
 */
import { CM_ATTR_NAMES, CmAttr, MAD_DATA_LEN } from '../mad';
import { type FieldTable, readFields, writeFields } from '../field-table';
import { type CmReq, REQ_FIELDS } from './req';
import { type CmMra, MRA_FIELDS } from './mra';
import { type CmRej, REJ_FIELDS } from './rej';
import { type CmRep, REP_FIELDS } from './rep';
import { type CmRtu, RTU_FIELDS } from './rtu';
import { type CmDreq, DREQ_FIELDS } from './dreq';
import { type CmDrep, DREP_FIELDS } from './drep';
import { type CmSidrReq, SIDR_REQ_FIELDS } from './sidr-req';
import { type CmSidrRep, SIDR_REP_FIELDS } from './sidr-rep';
import { type CmLap, LAP_FIELDS } from './lap';
import { type CmApr, APR_FIELDS } from './apr';

/** A CM message: its name (the CmAttr key) and its fields. */
export type CmMessage =
  | { name: 'REQ'; fields: CmReq }
  | { name: 'MRA'; fields: CmMra }
  | { name: 'REJ'; fields: CmRej }
  | { name: 'REP'; fields: CmRep }
  | { name: 'RTU'; fields: CmRtu }
  | { name: 'DREQ'; fields: CmDreq }
  | { name: 'DREP'; fields: CmDrep }
  | { name: 'SIDR_REQ'; fields: CmSidrReq }
  | { name: 'SIDR_REP'; fields: CmSidrRep }
  | { name: 'LAP'; fields: CmLap }
  | { name: 'APR'; fields: CmApr };

export type CmMessageName = CmMessage['name'];

/** Every message's field table, by name (for renderers and tests). */
export const CM_FIELD_TABLES: Readonly<Record<CmMessageName, FieldTable>> = Object.freeze({
  REQ: REQ_FIELDS,
  MRA: MRA_FIELDS,
  REJ: REJ_FIELDS,
  REP: REP_FIELDS,
  RTU: RTU_FIELDS,
  DREQ: DREQ_FIELDS,
  DREP: DREP_FIELDS,
  SIDR_REQ: SIDR_REQ_FIELDS,
  SIDR_REP: SIDR_REP_FIELDS,
  LAP: LAP_FIELDS,
  APR: APR_FIELDS,
});

/** The CM message with attribute ID `attributeId` whose data starts at `off`, or null for an attribute without one. */
export function parseCmMessage(attributeId: number, view: DataView, off: number, end: number = view.byteLength): CmMessage | null {
  const name = CM_ATTR_NAMES[attributeId];
  if (name === undefined || name === 'CLASS_PORT_INFO') return null;
  // The table for `name` gives exactly the fields of the message called `name`.
  return { name, fields: readFields(CM_FIELD_TABLES[name], MAD_DATA_LEN, view, off, end, `CM ${name}`) } as CmMessage;
}

/** Writes the 232 bytes of CM data of `m` at `off`; returns the attribute ID the MAD header must carry. */
export function emitCmMessage(m: CmMessage, view: DataView, off: number): number {
  writeFields(CM_FIELD_TABLES[m.name], MAD_DATA_LEN, m.fields, view, off, `CM ${m.name}`);
  return CmAttr[m.name];
}

/** A CM timeout code as time: 4.096 µs × 2^code (REQ/LAP CM response timeouts, MRA service timeout, ACK timeouts). */
export function cmTimeoutMicros(code: number): number {
  return 4.096 * 2 ** code;
}
