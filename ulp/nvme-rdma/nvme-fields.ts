/**
 * The NVMe-oF fields of `roce decode -Y` and `-T fields -e`, by Wireshark's names (tshark 4.0's
 * packet-nvme-rdma.c and packet-nvme.c: `tshark -G fields`), with tshark's types and text: hex
 * fields as `0x` and the field's width, `nvme.cmd.nlb` as the block count (the field holds it
 * 0-based, tshark prints it 1-based), `nvme.fabrics.cmd.opc` as a byte string. A frame's values come
 * from what the NVMe-oF decoder made of it (`FieldFrame.ulp`). As in tshark, a Fabrics command's
 * fields are `nvme.fabrics.cmd.*` and not `nvme.cmd.*`.
 */
import type { FieldDef, FieldFrame, FieldValue } from '../../packets/frame-fields';
import type { NvmeFrame } from './nvme-decoder';
import { FABRICS_OPCODE, IoOpcode } from './opcode-names';
import { SglType } from './sgl';
import { readRw } from './sqe';
import { statusParts } from './cqe';
import { UlpName } from '../ulp-decoder';

/** What `FieldFrame.ulp` holds for a frame of an NVMe-oF conversation. */
export interface NvmeUlpFrame {
  readonly protocol: typeof UlpName.Nvme;
  readonly frame: NvmeFrame;
}

const NONE: FieldValue[] = [];

function nvmeOf(f: FieldFrame): NvmeFrame | null {
  const u = f.ulp;
  return u !== undefined && u !== null && u.protocol === UlpName.Nvme ? (u as NvmeUlpFrame).frame : null;
}

const hexText =
  (bits: number) =>
  (v: FieldValue): string =>
    `0x${(v as bigint).toString(16).padStart(bits / 4, '0')}`;

function uint(name: string, bits: number, hex: boolean, get: (n: NvmeFrame) => number | bigint | boolean | null | undefined): FieldDef {
  return {
    name,
    type: 'uint',
    bits,
    text: hex ? hexText(bits) : (v) => String(v),
    values: (f) => {
      const n = nvmeOf(f);
      const v = n === null ? null : get(n);
      return v === null || v === undefined ? NONE : [typeof v === 'boolean' ? (v ? 1n : 0n) : BigInt(v)];
    },
  };
}

function bool(name: string, get: (n: NvmeFrame) => boolean | null | undefined): FieldDef {
  return { ...uint(name, 1, false, get), type: 'bool' };
}

/** The SQE of a command that is not a Fabrics command (tshark's nvme.cmd.*). */
const nvmCmd = (n: NvmeFrame) => (n.command !== null && n.command.sqe.opcode !== FABRICS_OPCODE ? n.command.sqe : null);
const fabricsCmd = (n: NvmeFrame) => (n.command?.fabrics != null ? n.command : null);
const rw = (n: NvmeFrame) => {
  const s = nvmCmd(n);
  return s !== null && n.qid !== null && n.qid !== 0 && (s.opcode === IoOpcode.READ || s.opcode === IoOpcode.WRITE) ? readRw(s.cdw10to15) : null;
};
/** A completion not of a Fabrics command: tshark gives its dwords 0 and 1. */
const nvmCqe = (n: NvmeFrame) => (n.completion !== null && (n.of === null || n.of.opcode !== FABRICS_OPCODE) ? n.completion : null);
const cqeStatus = (n: NvmeFrame) => (n.completion === null ? null : statusParts(n.completion.status));

const ALL: readonly FieldDef[] = [
  { name: 'nvme-rdma', type: 'proto', bits: 0, text: () => 'nvme-rdma', values: (f) => (nvmeOf(f) === null ? NONE : [new Uint8Array(0)]) },
  uint('nvme-rdma.cmd.qid', 16, true, (n) => (n.direction === null ? null : n.qid)),
  uint('nvme-rdma.cm.req.recfmt', 16, false, (n) => n.cmReq?.recfmt),
  uint('nvme-rdma.cm.req.qid', 16, false, (n) => n.cmReq?.qid),
  uint('nvme-rdma.cm.req.hrqsize', 16, false, (n) => n.cmReq?.hrqsize),
  uint('nvme-rdma.cm.req.hsqsize', 16, false, (n) => n.cmReq?.hsqsize),
  uint('nvme-rdma.cm.req.cntlid', 16, true, (n) => n.cmReq?.cntlid),
  uint('nvme-rdma.cm.rsp.recfmt', 16, false, (n) => n.cmRep?.recfmt),
  uint('nvme-rdma.cm.rsp.crqsize', 16, false, (n) => n.cmRep?.crqsize),
  uint('nvme-rdma.cm.rej.recfmt', 16, false, (n) => n.cmRej?.recfmt),
  uint('nvme-rdma.cm.rej.status', 16, true, (n) => n.cmRej?.status),
  uint('nvme.cmd.opc', 8, true, (n) => nvmCmd(n)?.opcode),
  uint('nvme.cmd.fuse_op', 8, true, (n) => {
    const s = nvmCmd(n);
    return s === null ? null : s.flags & 3;
  }),
  uint('nvme.cmd.psdt', 8, true, (n) => {
    const s = nvmCmd(n);
    return s === null ? null : s.flags >>> 6;
  }),
  uint('nvme.cmd.cid', 16, true, (n) => nvmCmd(n)?.commandId),
  uint('nvme.cmd.nsid', 32, true, (n) => nvmCmd(n)?.nsid),
  uint('nvme.cmd.mptr', 64, true, (n) => nvmCmd(n)?.metadata),
  uint('nvme.cmd.sgl.type', 8, true, (n) => nvmCmd(n)?.sgl.type),
  uint('nvme.cmd.sgl.subtype', 8, true, (n) => nvmCmd(n)?.sgl.subtype),
  uint('nvme.cmd.sgl1.addr', 64, true, (n) => nvmCmd(n)?.sgl.address),
  uint('nvme.cmd.sgl1.len', 32, false, (n) => nvmCmd(n)?.sgl.length),
  uint('nvme.cmd.sgl1.key', 32, true, (n) => {
    const s = nvmCmd(n);
    return s !== null && s.sgl.type === SglType.KEYED_DATA_BLOCK ? s.sgl.key : null;
  }),
  uint('nvme.cmd.slba', 64, true, (n) => rw(n)?.slba),
  // The field holds the count 0-based; tshark prints it 1-based.
  {
    ...uint('nvme.cmd.nlb', 16, false, (n) => {
      const r = rw(n);
      return r === null ? null : r.blocks - 1;
    }),
    text: (v) => String((v as bigint) + 1n),
  },
  {
    name: 'nvme.fabrics.cmd.opc',
    type: 'bytes',
    bits: 0,
    text: (v) => Buffer.from(v as Uint8Array).toString('hex'),
    values: (f) => {
      const n = nvmeOf(f);
      return n !== null && fabricsCmd(n) !== null ? [Uint8Array.of(FABRICS_OPCODE)] : NONE;
    },
  },
  uint('nvme.fabrics.cmd.cid', 16, true, (n) => fabricsCmd(n)?.sqe.commandId),
  uint('nvme.fabrics.cmd.fctype', 8, true, (n) => fabricsCmd(n)?.fabrics?.fctype),
  uint('nvme.fabrics.cmd.connect.recfmt', 16, false, (n) => fabricsCmd(n)?.fabrics?.connect?.recfmt),
  uint('nvme.fabrics.cmd.connect.qid', 16, false, (n) => fabricsCmd(n)?.fabrics?.connect?.qid),
  uint('nvme.fabrics.cmd.connect.sqsize', 16, false, (n) => fabricsCmd(n)?.fabrics?.connect?.sqsize),
  uint('nvme.fabrics.cmd.connect.cattr', 8, true, (n) => fabricsCmd(n)?.fabrics?.connect?.cattr),
  uint('nvme.fabrics.cmd.connect.kato', 32, false, (n) => fabricsCmd(n)?.fabrics?.connect?.kato),
  uint('nvme.fabrics.cmd.connect.data.cntrlid', 16, true, (n) => fabricsCmd(n)?.connectData?.cntlid),
  uint('nvme.fabrics.cmd.prop_get_set.attrib', 8, true, (n) => fabricsCmd(n)?.fabrics?.property?.attrib),
  uint('nvme.fabrics.cmd.prop_get_set.offset', 32, true, (n) => fabricsCmd(n)?.fabrics?.property?.offset),
  uint('nvme.cqe.dword0', 32, true, (n) => {
    const q = nvmCqe(n);
    return q === null ? null : Number(q.result & 0xffffffffn);
  }),
  uint('nvme.cqe.dword1', 32, true, (n) => {
    const q = nvmCqe(n);
    return q === null ? null : Number(q.result >> 32n);
  }),
  uint('nvme.cqe.sqhd', 16, true, (n) => n.completion?.sqHead),
  uint('nvme.cqe.sqid', 16, true, (n) => n.completion?.sqId),
  uint('nvme.cqe.cid', 16, true, (n) => n.completion?.commandId),
  uint('nvme.cqe.status', 16, true, (n) => n.completion?.status),
  // tshark shows a Fabrics command's completion without its phase tag.
  uint('nvme.cqe.status.p', 16, true, (n) => {
    const q = nvmCqe(n);
    return q === null ? null : q.status & 1;
  }),
  uint('nvme.cqe.status.sc', 16, true, (n) => cqeStatus(n)?.sc),
  uint('nvme.cqe.status.sct', 16, true, (n) => cqeStatus(n)?.sct),
  uint('nvme.cqe.status.crd', 16, true, (n) => cqeStatus(n)?.crd),
  bool('nvme.cqe.status.m', (n) => cqeStatus(n)?.more),
  bool('nvme.cqe.status.dnr', (n) => cqeStatus(n)?.dnr),
];

const BY_NAME: ReadonlyMap<string, FieldDef> = new Map(ALL.map((d) => [d.name, d]));

/** The NVMe-oF field called `name`, or undefined. */
export function nvmeField(name: string): FieldDef | undefined {
  return BY_NAME.get(name);
}

/** Every NVMe-oF field's name, in the table's order. */
export function nvmeFieldNames(): string[] {
  return ALL.map((d) => d.name);
}
