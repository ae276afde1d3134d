/** The typed errors of `roce nvmf target` and `roce nvmf host`: a bad configuration, a refused connection, a lost peer, a command the controller failed, data that did not compare. */
export const NvmfErrorCode = {
  CONFIG: 'config',
  REJECTED: 'rejected',
  UNREACHABLE: 'unreachable',
  TIMEOUT: 'timeout',
  COMPLETION: 'completion',
  COMMAND: 'command',
  PROTOCOL: 'protocol',
  MISMATCH: 'mismatch',
} as const;
export type NvmfErrorCode = (typeof NvmfErrorCode)[keyof typeof NvmfErrorCode];

export class NvmfError extends Error {
  constructor(
    readonly code: NvmfErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'NvmfError';
  }
}
