/**
 * What a handler makes of one command: the CQE's status and result, the data to put in the host's
 * memory (a Read's blocks, an Identify page; null: none), or `held` for an Asynchronous Event
 * Request, which is answered only when an event comes (the target has none to report).
 */
import { StatusCodeType, statusField } from '../../ulp/nvme-rdma/cqe';

export interface Outcome {
  status: number;
  result: bigint;
  data: Uint8Array | null;
  held?: boolean;
}

export const ok = (result = 0n, data: Uint8Array | null = null): Outcome => ({ status: 0, result, data });
export const generic = (sc: number, dnr = true): Outcome => ({ status: statusField(StatusCodeType.GENERIC, sc, dnr), result: 0n, data: null });
export const specific = (sc: number, result = 0n): Outcome => ({ status: statusField(StatusCodeType.COMMAND_SPECIFIC, sc, true), result, data: null });

/** Generic status codes the target answers with (NVMe Base 2.0, "Generic Command Status Values"). */
export const Sc = {
  INVALID_OPCODE: 0x01,
  INVALID_FIELD: 0x02,
  DATA_TRANSFER_ERROR: 0x04,
  INVALID_NAMESPACE: 0x0b,
  COMMAND_SEQUENCE_ERROR: 0x0c,
  DATA_SGL_LENGTH_INVALID: 0x0f,
  SGL_TYPE_INVALID: 0x11,
  SGL_OFFSET_INVALID: 0x16,
  LBA_OUT_OF_RANGE: 0x80,
} as const;

/** Command-specific codes: Get Log Page's, Async Event Request's, and the Connect's (NVMe over Fabrics 1.1). */
export const CommandSc = {
  INVALID_LOG_PAGE: 0x09,
  AER_LIMIT_EXCEEDED: 0x05,
  CONNECT_INCOMPATIBLE_FORMAT: 0x80,
  CONNECT_INVALID_PARAMETERS: 0x82,
} as const;
