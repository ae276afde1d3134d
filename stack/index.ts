/**
 * `roce-ts/stack`: the transport engine and its verbs API, modelled on libibverbs. A `Device`
 * over a frame driver gives protection domains, memory regions, completion queues and queue
 * pairs; `endpointOf` and `connectQp` bring an RC or UC QP to RTS as rc_pingpong does.
 */
export { Device, type DeviceConfig } from './device';
export { connectQp, endpointOf, type ConnectOptions, type Endpoint } from './connect';
export { QueuePair, type QpInitAttr, type QpCap } from './queue-pair';
export { CompletionQueue } from './completion-queue';
export { MemoryRegion, ProtectionDomain } from './memory-region';
export { SharedReceiveQueue } from './shared-receive-queue';
export type { RecvWr, SendWr } from './work-request';
export type { QpAttrInput } from './qp-attributes';
export { QpState, QpType } from './qp-type-and-state';
export { Access } from './access-flags';
export { SendFlags, WrOpcode } from './work-request-codes';
export {
  WC_STATUS_NAMES,
  WcFlags,
  WcOpcode,
  WcStatus,
  type WorkCompletion,
} from './work-completion';
export { Mtu, mtuBytes } from './mtu';
export type { Sge } from './sge';
export { VerbsError, VerbsErrorCode } from './errors';
export { RealClock, VirtualClock, type Clock } from '../base/clock';
export { RoceError } from '../base/roce-error';
