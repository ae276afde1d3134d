/**
 * NVMe-oF capsules over RDMA (NVMe over Fabrics 1.1, "Capsules" and the RDMA transport binding): a
 * command capsule is the 64-byte SQE followed by its in-capsule data, sent host → controller as one
 * RDMA SEND message; a response capsule is the 16-byte CQE, sent controller → host as a SEND or a
 * SEND with Invalidate (Linux drivers/nvme/target/rdma.c: the controller invalidates the host's key
 * when the SGL asked for it). `decodeCommandCapsule` and `decodeResponseCapsule` throw only
 * `WireError`; the emitters build the bytes a SEND carries.
 */
import { WireError, WireErrorCode } from '../../packets/errors';
import { type Sqe, SQE_LEN, emitSqe, parseSqe } from './sqe';
import { type Cqe, CQE_LEN, emitCqe, parseCqe } from './cqe';
import { type ConnectData, type FabricsCommand, CONNECT_DATA_LEN, emitFabricsFields, parseConnectData, parseFabricsCommand } from './fabrics-command';
import { FABRICS_OPCODE, FabricsType } from './opcode-names';
import { SglSubtype, SglType } from './sgl';

/** A command capsule read: the SQE, its Fabrics fields, a Connect's data, and how much data it carries. */
export interface NvmeCommand {
  sqe: Sqe;
  /** Opcode 0x7F only. */
  fabrics: FabricsCommand | null;
  /** A Connect whose data is in the capsule (in-capsule SGL, 1024 bytes there). */
  connectData: ConnectData | null;
  /** Bytes after the SQE. */
  inCapsuleLength: number;
}

/** The `len`-byte command capsule at `off`. */
export function decodeCommandCapsule(view: DataView, off: number, len: number): NvmeCommand {
  if (len < SQE_LEN) throw new WireError(WireErrorCode.BadLength, off, `an NVMe command capsule is at least ${SQE_LEN} bytes, not ${len}`);
  const end = off + len;
  const sqe = parseSqe(view, off, end);
  const fabrics = sqe.opcode === FABRICS_OPCODE ? parseFabricsCommand(view, off, end) : null;
  let connectData: ConnectData | null = null;
  const inCapsule = sqe.sgl.type === SglType.DATA_BLOCK && sqe.sgl.subtype === SglSubtype.OFFSET;
  if (fabrics?.fctype === FabricsType.CONNECT && inCapsule) {
    const at = off + SQE_LEN + Number(sqe.sgl.address);
    if (sqe.sgl.address > BigInt(len) || at + CONNECT_DATA_LEN > end)
      throw new WireError(
        WireErrorCode.Truncated,
        Math.min(at, end),
        `the Connect's data (${CONNECT_DATA_LEN} bytes at offset ${sqe.sgl.address}) does not fit in the ${len - SQE_LEN} bytes after the SQE`,
      );
    connectData = parseConnectData(view, at, end);
  }
  return { sqe, fabrics, connectData, inCapsuleLength: len - SQE_LEN };
}

/** The `len`-byte response capsule at `off` (exactly a CQE). */
export function decodeResponseCapsule(view: DataView, off: number, len: number): Cqe {
  if (len !== CQE_LEN) throw new WireError(WireErrorCode.BadLength, off, `an NVMe response capsule over RDMA is ${CQE_LEN} bytes, not ${len}`);
  return parseCqe(view, off, off + len);
}

/** The bytes of a command capsule: the SQE (with `fabrics`' fields for opcode 0x7F), then `data` in the capsule. */
export function emitCommandCapsule(sqe: Sqe, fabrics: FabricsCommand | null = null, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  if ((fabrics !== null) !== (sqe.opcode === FABRICS_OPCODE))
    throw new WireError(WireErrorCode.BadValue, 0, 'Fabrics fields go with opcode 0x7F, and opcode 0x7F needs them');
  const out = new Uint8Array(SQE_LEN + data.length);
  const view = new DataView(out.buffer);
  emitSqe(sqe, view, 0);
  if (fabrics !== null) emitFabricsFields(fabrics, view, 0);
  out.set(data, SQE_LEN);
  return out;
}

/** The 16 bytes of a response capsule. */
export function emitResponseCapsule(cqe: Cqe): Uint8Array {
  const out = new Uint8Array(CQE_LEN);
  emitCqe(cqe, new DataView(out.buffer), 0);
  return out;
}
