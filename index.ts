/**
 * `roce-ts`: the whole library, one namespace per layer. Each namespace is also a subpath of its
 * own (`roce-ts/packets`, `roce-ts/analysis`, `roce-ts/stack`, `roce-ts/nic-driver`,
 * `roce-ts/sim`), which loads only that layer.
 */
/** The wire layer: decode, build, ICRC, pcap and pcapng bytes, opcodes (`roce-ts/packets`). */
export * as packets from './packets/index';
/** Capture analysis as `roce analyze` does it (`roce-ts/analysis`). */
export * as analysis from './analysis/index';
/** The transport engine and its verbs API (`roce-ts/stack`). */
export * as stack from './stack/index';
/** Frame I/O: the driver interface, the in-memory link with fault injection, the pcap tap (`roce-ts/nic-driver`). */
export * as nicDriver from './nic-driver/index';
/** Two devices over the in-memory link, and the demo workload (`roce-ts/sim`). */
export * as sim from './apps/sim/index';
