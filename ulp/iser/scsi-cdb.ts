/**
 * The SCSI command descriptor block an iSCSI SCSI Command carries in its 16 CDB bytes (RFC 7143
 * §11.3.5; SBC-4, SPC-5): the operation code's name and, for the commands an initiator sends
 * most, what they ask (READ/WRITE (10)/(16): logical block address and transfer length in
 * blocks; INQUIRY: EVPD, page code, allocation length; REPORT LUNS and READ CAPACITY (16):
 * allocation length). Every CDB field is big-endian. Reads a 16-byte array, so never throws.
 */

export const ScsiOpcode = {
  TEST_UNIT_READY: 0x00,
  REQUEST_SENSE: 0x03,
  INQUIRY: 0x12,
  MODE_SENSE_6: 0x1a,
  READ_CAPACITY_10: 0x25,
  READ_10: 0x28,
  WRITE_10: 0x2a,
  SYNCHRONIZE_CACHE_10: 0x35,
  READ_16: 0x88,
  WRITE_16: 0x8a,
  SERVICE_ACTION_IN_16: 0x9e,
  REPORT_LUNS: 0xa0,
} as const;

/** SERVICE ACTION IN (16)'s service action of READ CAPACITY (16) (SBC-4 §5.20). */
export const SA_READ_CAPACITY_16 = 0x10;

const NAMES: Readonly<Record<number, string>> = Object.freeze({
  0x00: 'TEST UNIT READY',
  0x03: 'REQUEST SENSE',
  0x12: 'INQUIRY',
  0x1a: 'MODE SENSE(6)',
  0x25: 'READ CAPACITY(10)',
  0x28: 'READ(10)',
  0x2a: 'WRITE(10)',
  0x35: 'SYNCHRONIZE CACHE(10)',
  0x88: 'READ(16)',
  0x8a: 'WRITE(16)',
  0x9e: 'SERVICE ACTION IN(16)',
  0xa0: 'REPORT LUNS',
});

export interface Cdb {
  opcode: number;
  /** `READ(10)`, `READ CAPACITY(16)` (SERVICE ACTION IN(16) named by its service action), or `opcode 0xNN`. */
  name: string;
  lba: bigint | null;
  /** Blocks to transfer (READ/WRITE). */
  blocks: number | null;
  /** Allocation length (INQUIRY, REPORT LUNS, READ CAPACITY (16)). */
  allocationLength: number | null;
  /** INQUIRY's EVPD bit and page code. */
  evpd: boolean | null;
  pageCode: number | null;
}

export function scsiOpcodeName(op: number): string {
  return NAMES[op] ?? `opcode 0x${op.toString(16).padStart(2, '0')}`;
}

/** The CDB in `cdb` (the 16 bytes of the BHS). */
export function parseCdb(cdb: Uint8Array): Cdb {
  const v = new DataView(cdb.buffer, cdb.byteOffset, cdb.byteLength);
  const opcode = cdb[0] ?? 0;
  const out: Cdb = { opcode, name: scsiOpcodeName(opcode), lba: null, blocks: null, allocationLength: null, evpd: null, pageCode: null };
  switch (opcode) {
    case ScsiOpcode.READ_10:
    case ScsiOpcode.WRITE_10:
      out.lba = BigInt(v.getUint32(2));
      out.blocks = v.getUint16(7);
      break;
    case ScsiOpcode.READ_16:
    case ScsiOpcode.WRITE_16:
      out.lba = v.getBigUint64(2);
      out.blocks = v.getUint32(10);
      break;
    case ScsiOpcode.INQUIRY:
      out.evpd = ((cdb[1] ?? 0) & 1) === 1;
      out.pageCode = cdb[2] ?? 0;
      out.allocationLength = v.getUint16(3);
      break;
    case ScsiOpcode.REPORT_LUNS:
      out.allocationLength = v.getUint32(6);
      break;
    case ScsiOpcode.SERVICE_ACTION_IN_16:
      if (((cdb[1] ?? 0) & 0x1f) === SA_READ_CAPACITY_16) {
        out.name = 'READ CAPACITY(16)';
        out.lba = v.getBigUint64(2);
        out.allocationLength = v.getUint32(10);
      }
      break;
  }
  return out;
}

/** 16 CDB bytes for a READ or WRITE (10) or (16). */
export function rwCdb(opcode: number, lba: bigint, blocks: number): Uint8Array {
  const cdb = new Uint8Array(16);
  const v = new DataView(cdb.buffer);
  cdb[0] = opcode;
  if (opcode === ScsiOpcode.READ_10 || opcode === ScsiOpcode.WRITE_10) {
    v.setUint32(2, Number(lba));
    v.setUint16(7, blocks);
  } else {
    v.setBigUint64(2, lba);
    v.setUint32(10, blocks);
  }
  return cdb;
}
