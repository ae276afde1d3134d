/** The errors of `roce nvmf target` and `roce nvmf host` (apps/nvmf). */
import { RoceError } from '../../base/roce-error';

export const NvmfErrorCode = {
  /** A parameter is out of range (namespace size, block count, port, NQN, I/O queues). */
  CONFIG: 'ROCE_ERR_NVMF_CONFIG',
  /** The target's CM rejected a queue's connection (REJ: the CM reason and the NVMe-oF RDMA status). */
  REJECTED: 'ROCE_ERR_NVMF_REJECTED',
  /** The target could not be reached (no neighbour, the REQ never answered). */
  UNREACHABLE: 'ROCE_ERR_NVMF_UNREACHABLE',
  /** A step made no progress within its bound (the timer that set it is named). */
  TIMEOUT: 'ROCE_ERR_NVMF_TIMEOUT',
  /** A work completion came back with an error status. */
  COMPLETION: 'ROCE_ERR_NVMF_COMPLETION',
  /** A command completed with an NVMe error status (named in the message). */
  COMMAND: 'ROCE_ERR_NVMF_COMMAND',
  /** The controller broke the transport's rules: a malformed response capsule, no invalidation asked for, a disconnect mid-run. */
  PROTOCOL: 'ROCE_ERR_NVMF_PROTOCOL',
  /** The data read back is not the data written. */
  MISMATCH: 'ROCE_ERR_NVMF_MISMATCH',
} as const;
export type NvmfErrorCode = (typeof NvmfErrorCode)[keyof typeof NvmfErrorCode];

export class NvmfError extends RoceError<NvmfErrorCode> {}
