/**
 * The I/O queue's NVM commands on the RAM namespace (NVMe NVM Command Set 1.0: Read, Write, Flush):
 * the namespace ID checked, the LBA range checked against its size (LBA Out of Range), the data's
 * length against the block count (Data SGL Length Invalid, as nvmet_check_transfer_len()).
 */
import type { NvmeCommand } from '../../ulp/nvme-rdma/capsule';
import { readRw } from '../../ulp/nvme-rdma/sqe';
import { FABRICS_OPCODE, IoOpcode } from '../../ulp/nvme-rdma/opcode-names';
import { type Outcome, Sc, generic, ok } from './command-outcome';
import { LBA_SIZE, type RamNamespace } from './ram-namespace';

/** Bytes a Read or Write moves, or null for another command: the target fetches or sends that much. */
export function transferLength(cmd: NvmeCommand): number | null {
  if (cmd.sqe.opcode !== IoOpcode.READ && cmd.sqe.opcode !== IoOpcode.WRITE) return null;
  return readRw(cmd.sqe.cdw10to15).blocks * LBA_SIZE;
}

/** What is wrong with an I/O command before any data moves (null: nothing): a Write out of range is refused before its data is fetched. */
export function checkIo(ns: RamNamespace, cmd: NvmeCommand): Outcome | null {
  const op = cmd.sqe.opcode;
  if (op === FABRICS_OPCODE) return generic(Sc.INVALID_OPCODE);
  if (op === IoOpcode.FLUSH) return cmd.sqe.nsid === ns.nsid || cmd.sqe.nsid === 0xffffffff ? null : generic(Sc.INVALID_NAMESPACE);
  if (op !== IoOpcode.READ && op !== IoOpcode.WRITE) return generic(Sc.INVALID_OPCODE);
  if (cmd.sqe.nsid !== ns.nsid) return generic(Sc.INVALID_NAMESPACE);
  const { slba, blocks } = readRw(cmd.sqe.cdw10to15);
  if (!ns.holds(slba, blocks)) return generic(Sc.LBA_OUT_OF_RANGE);
  if (cmd.sqe.sgl.length !== blocks * LBA_SIZE) return generic(Sc.DATA_SGL_LENGTH_INVALID);
  return null;
}

/** An I/O command (not Fabrics) once a Write's data is at hand. */
export function handleIo(ns: RamNamespace, cmd: NvmeCommand, data: Uint8Array | null): Outcome {
  const bad = checkIo(ns, cmd);
  if (bad !== null) return bad;
  const op = cmd.sqe.opcode;
  if (op === IoOpcode.FLUSH) return ok();
  const { slba, blocks } = readRw(cmd.sqe.cdw10to15);
  if (op === IoOpcode.READ) return ok(0n, ns.read(slba, blocks));
  if (data === null || data.length !== blocks * LBA_SIZE) return generic(Sc.DATA_SGL_LENGTH_INVALID);
  ns.write(slba, data);
  return ok();
}
