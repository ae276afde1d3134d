/**
 * `roce-ts/nic-driver`: frame I/O for the engine. The driver interface a `Device` sends and
 * receives through, the in-memory link between two devices with seeded fault injection (random
 * faults and Lumina-style targeted rules), and the pcap tap that records what crosses it.
 * The AF_XDP and AF_PACKET drivers need the native shim and root; the `roce` commands use them.
 */
export type { DriverStats, NicDriver } from './driver';
export { createMemoryLink, MemoryDriver, type MemoryLink, type MemoryLinkOptions } from './memory-link';
export type {
  Direction,
  DropBurst,
  FaultAction,
  FaultConfig,
  FaultCounters,
  FaultMatch,
  FaultRule,
  ReorderConfig,
} from './faults';
export { PcapTap, type FrameTap, type PcapTapOptions, type TapPoint } from './pcap-tap';
export { PcapFileWriter } from './pcap-file-writer';
