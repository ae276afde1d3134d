/**
 * `roce-ts/packets`: the wire layer as a library. Decode a frame into its headers, build one from
 * a description, compute and check the ICRC, read and write pcap and pcapng bytes, and name
 * opcodes as the IBTA's tables do. Everything here works on bytes in memory; nothing reads a file.
 */
export { decodeFrame, ICRC_LEN, type DecodedFrame, type DecodeOptions, type NotRoce, type RocePacket } from './decode';
export {
  buildRoceV1Frame,
  buildRoceV2Frame,
  type BthSpec,
  type EthSpec,
  type Ipv4Spec,
  type Ipv6Spec,
  type RoceV1Spec,
  type RoceV2Spec,
  type TransportSpec,
} from './build';
export { icrcV1, icrcV2, readIcrc, sealIcrcV2, verifyIcrcV1, verifyIcrcV2 } from './icrc';
export type { BthHeader } from './bth';
export {
  describeCaptureError,
  iterateCapture,
  LinkType,
  readCapture,
  writePcap,
  writePcapng,
  type CaptureReadResult,
  type CaptureRecord,
  type PcapngWriteOptions,
  type PcapWriteOptions,
} from './pcap';
export { Opcode, opcodeByName, opcodeInfo, opcodeName, Transport, type OpcodeInfo, type OpcodeName } from './opcodes';
export { WireError, WireErrorCode } from './errors';
export { summaryLine } from './summary';
export { frameToJson, type FrameJson } from './json';
