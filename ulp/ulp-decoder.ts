/**
 * What every upper-layer protocol decoder in ulp/ offers the capture engine (capture-engine/), so
 * that `roce decode` and `roce analyze` run NVMe-oF, RPC-over-RDMA, iSER and SMB Direct the same
 * way: one decoder per protocol, fed every RoCE frame in capture order, keeping its conversations in
 * plain data that the engine clones from batch to batch (decoding on worker threads must start
 * from the state the frames before the batch left).
 *
 * Ownership of a conversation follows Wireshark: an RDMA CM REQ to the protocol's IP CM port (its
 * service ID 0x0000000001060000 | port) and the REP that answers it make both QP ends the
 * protocol's; where no CM was captured, a protocol may claim a queue pair from a payload's shape
 * (RPC-over-RDMA's version field and XID, SMB Direct's negotiate request); `--decode-as` names the
 * rest (`UlpRules.qpns`, `UlpRules.ports`).
 */
import type { RocePacket } from '../packets/decode';
import type { FieldDef } from '../packets/frame-fields';
import type { TextBytes } from '../base/text-bytes';

/** The names of the upper-layer protocols, as `--decode-as` takes them and as JSON keys a frame's object. */
export const UlpName = {
  Nvme: 'nvme',
  RpcRdma: 'rpcrdma',
  Iser: 'iser',
  Smbd: 'smbd',
} as const;
export type UlpName = (typeof UlpName)[keyof typeof UlpName];

/** How frames are assigned to one protocol besides its default CM port: more IP CM ports, and QPNs that are the protocol's without any CM. */
export interface UlpRules {
  ports: readonly number[];
  qpns: readonly number[];
}

/** A protocol's decoder over a capture: `State` is plain data (structuredClone-able, Maps allowed). */
export interface UlpDecoder<Frame, State> {
  readonly name: UlpName;
  /** Where the decoder stands; the engine clones it to hand a batch's starting point to another thread. */
  readonly state: State;
  /**
   * False when no frame to `destQp` can be the protocol's or change its state (a cheap test before
   * a frame is decoded in full). The GSI (QP 1) must be wanted by any decoder that follows the CM.
   */
  wants(destQp: number): boolean;
  /** Takes the next RoCE frame, `p` decoded from the frame at `start` of `view`; what it carries for the protocol, or null. */
  observe(p: RocePacket, view: DataView, start: number): Frame | null;
}

/** How a protocol's frames are shown: the summary line's words, `-V`'s tree, JSON, and its Wireshark fields. */
export interface UlpText<Frame> {
  /** Words for the one-line summary, e.g. `NVMe Read cid 4 nsid 1 slba 0 nlb 8`. */
  words(f: Frame): string;
  /**
   * `words`' text written straight into `t`, when the protocol offers it (`roce decode`'s summary
   * lines then take it): words built as a string and then copied cost a share of a frame's printing.
   */
  writeWords?(t: TextBytes, f: Frame): void;
  /** Lines for the `-V` tree: [depth, text]. */
  treeLines(f: Frame): [number, string][];
  /** The frame's JSON member with its leading comma, `,"name":{...}`, the protocol's name as the key (it follows the frame's last member). */
  jsonMember(f: Frame): string;
  /**
   * `jsonMember`'s text written straight into `t`, when the protocol offers it (`roce decode
   * --json` then takes it): a member of a few hundred characters built as a string and then copied
   * a character at a time cost about as much as the rest of the frame's JSON.
   */
  writeJsonMember?(t: TextBytes, f: Frame): void;
  /** A field by Wireshark's name (`tshark -G fields`), for `-Y` and `-T fields -e`; undefined for none of this protocol's. */
  field(name: string): FieldDef | undefined;
  /** A few words for the frame in a picture (`roce ladder`), or null for none; `words` when absent. */
  note?(f: Frame): string | null;
}

/** One protocol as the capture engine registers it: its decoder, its text, and its CM ports. */
export interface UlpProtocol<Frame, State> {
  readonly name: UlpName;
  /** The name people know it by, for notes and reports, e.g. `NVMe-oF`, `RPC-over-RDMA`. */
  readonly title: string;
  /** The IP CM ports (TCP port space) whose RDMA CM connections are the protocol's by default (IANA). */
  readonly defaultPorts: readonly number[];
  emptyState(): State;
  /** True when `s` holds nothing (the engine then hands a batch null in its place). */
  isEmpty(s: State): boolean;
  /** A decoder over `rules`, starting from `state` (a batch's carried state) or from nothing. */
  decoder(rules: UlpRules, state?: State): UlpDecoder<Frame, State>;
  readonly text: UlpText<Frame>;
}
