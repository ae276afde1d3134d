/**
 * NVMe-oF frames in words: a few for the one-line summary (`NVMe Read cid 7 nsid 1 lba 16 blocks 8
 * keyed+inv 0x7f0000000000 4096 B key 0x2271de5a`, `NVMe CQE cid 7 (Read) Success sqhd 3`), the
 * field tree lines of `roce decode -v`, and the `nvme` object of `roce decode --json`
 * (docs/decode.md lists its keys).
 */
import { hex64, toHex } from '../../packets/bytes';
import { type TextBytes, utf8 } from '../../base/text-bytes';
import type { CommandRef, NvmeFrame } from './nvme-decoder';
import { isConnect } from './nvme-decoder';
import { cmRejStatusName } from './cm-private-data';
import { fabricsTypeName, FABRICS_OPCODE, IoOpcode, AdminOpcode, opcodeName } from './opcode-names';
import { statusName, statusParts } from './cqe';
import type { NvmeCommand } from './capsule';
import { cdw10, readRw } from './sqe';
import { sglWords } from './sgl';
import { PROPERTY_NAMES } from './fabrics-command';

const hexN = (v: number, digits: number): string => `0x${v.toString(16).padStart(digits, '0')}`;
const qidText = (qid: number | null): string => (qid === null ? '' : ` qid ${qid}${qid === 0 ? ' (admin)' : ''}`);

/** The name of a command: `Read`, `Identify`, `Fabrics Connect`. */
export function commandName(opcode: number, fctype: number | null, qid: number | null): string {
  if (opcode === FABRICS_OPCODE) return `Fabrics ${fabricsTypeName(fctype ?? -1)}`;
  return opcodeName(opcode, qid);
}

function refName(ref: CommandRef, qid: number | null): string {
  return commandName(ref.opcode, ref.fctype, qid);
}

/** What a command capsule asks, in a few words after its name. */
function commandDetails(c: NvmeCommand, qid: number | null): string {
  const s = c.sqe;
  const parts: string[] = [`cid ${s.commandId}`];
  const f = c.fabrics;
  if (f !== null) {
    if (f.connect !== null) parts.push(`qid ${f.connect.qid} sqsize ${f.connect.sqsize + 1}${f.connect.kato > 0 ? ` kato ${f.connect.kato} ms` : ''}`);
    if (f.property !== null) {
      const name = PROPERTY_NAMES[f.property.offset] ?? hexN(f.property.offset, 2);
      parts.push(`${name} (${hexN(f.property.offset, 2)})${f.property.value === null ? '' : ` = 0x${f.property.value.toString(16)}`}`);
    }
    if (c.connectData !== null) parts.push(`cntlid ${hexN(c.connectData.cntlid, 4)} subnqn ${c.connectData.subnqn} hostnqn ${c.connectData.hostnqn}`);
  } else {
    if (s.nsid !== 0) parts.push(`nsid ${s.nsid}`);
    if (qid !== null && qid !== 0 && (s.opcode === IoOpcode.READ || s.opcode === IoOpcode.WRITE)) {
      const rw = readRw(s.cdw10to15);
      parts.push(`lba ${rw.slba} blocks ${rw.blocks}`);
    }
    if (qid === 0 && s.opcode === AdminOpcode.IDENTIFY) parts.push(`cns ${cdw10(s.cdw10to15) & 0xff}`);
  }
  if (s.sgl.length > 0 || f === null) parts.push(sglWords(s.sgl));
  return parts.join(' ');
}

/** The frame in a few words for the summary line. */
export function nvmeWords(f: NvmeFrame): string {
  const err = f.error === null ? '' : ` [NVMe ${f.error.code}: ${f.error.reason}]`;
  const pk = f.packets > 1 ? ` [${f.packets} packets]` : '';
  switch (f.kind) {
    case 'cm-req': {
      const r = f.cmReq;
      return r === null
        ? `NVMe-oF CM REQ${err}`
        : `NVMe-oF CM REQ${qidText(r.qid)} hrqsize ${r.hrqsize} hsqsize ${r.hsqsize + 1} cntlid ${hexN(r.cntlid, 4)}${err}`;
    }
    case 'cm-rep':
      return `NVMe-oF CM REP${qidText(f.qid)}${f.cmRep === null ? '' : ` crqsize ${f.cmRep.crqsize}`}${err}`;
    case 'cm-rej':
      return `NVMe-oF CM REJ${qidText(f.qid)}${f.cmRej === null ? '' : ` status ${f.cmRej.status} (${cmRejStatusName(f.cmRej.status)})`}${err}`;
    case 'command': {
      const c = f.command;
      if (c === null) return `NVMe command${pk}${err}`;
      return `NVMe ${commandName(c.sqe.opcode, c.fabrics?.fctype ?? null, f.qid)} ${commandDetails(c, f.qid)}${c.inCapsuleLength > 0 && c.sqe.sgl.length === 0 ? ` +${c.inCapsuleLength} B` : ''}${pk}${err}`;
    }
    case 'completion': {
      const q = f.completion;
      if (q === null) return `NVMe CQE${err}`;
      const of = f.of === null ? '' : ` (${refName(f.of, f.qid)})`;
      const result = isConnect(f.of) ? ` cntlid ${hexN(Number(q.result & 0xffffn), 4)}` : q.result !== 0n ? ` result ${hex64(q.result)}` : '';
      const p = statusParts(q.status);
      return `NVMe CQE cid ${q.commandId}${of} ${statusName(q.status, isConnect(f.of))}${p.dnr ? ' DNR' : ''}${result} sqhd ${q.sqHead}${pk}${err}`;
    }
    case 'fragment':
      return `NVMe capsule part ${f.packets} (${f.length} B so far)${err}`;
    case 'data':
      // An RDMA READ request carries no data (its RETH, shown before, says how much it asks for).
      return `NVMe data${f.of === null ? '' : ` cid ${f.of.commandId} (${refName(f.of, f.qid)})`}${f.length > 0 ? ` ${f.length} B` : ''}${err}`;
    case 'other':
      return `NVMe-oF ${f.length} B${err}`;
  }
}

/** The field tree lines, each as [indent, text] (indent 1 = a header line). */
export function nvmeTreeLines(f: NvmeFrame): [number, string][] {
  const out: [number, string][] = [[1, `NVMe-oF RDMA: ${nvmeWords(f)}`]];
  out.push([2, `direction ${f.direction ?? 'CM'}, queue ${f.qid === null ? 'unknown' : f.qid}${f.packets > 1 ? `, capsule in ${f.packets} packets` : ''}`]);
  if (f.cmReq !== null) {
    const r = f.cmReq;
    out.push([
      2,
      `REQ private data: recfmt ${r.recfmt}, qid ${r.qid}, hrqsize ${r.hrqsize}, hsqsize ${r.hsqsize} (${r.hsqsize + 1} entries), cntlid ${hexN(r.cntlid, 4)}`,
    ]);
  }
  if (f.cmRep !== null) out.push([2, `REP private data: recfmt ${f.cmRep.recfmt}, crqsize ${f.cmRep.crqsize}`]);
  if (f.cmRej !== null) out.push([2, `REJ private data: recfmt ${f.cmRej.recfmt}, status ${f.cmRej.status} (${cmRejStatusName(f.cmRej.status)})`]);
  const c = f.command;
  if (c !== null) {
    const s = c.sqe;
    out.push([
      2,
      `SQE: opcode ${hexN(s.opcode, 2)} (${commandName(s.opcode, c.fabrics?.fctype ?? null, f.qid)}), flags ${hexN(s.flags, 2)} (fuse ${s.flags & 3}, PSDT ${s.flags >>> 6}), command ID ${s.commandId}, NSID ${s.nsid}`,
    ]);
    out.push([2, `metadata pointer ${hex64(s.metadata)}, command dwords 10-15 ${toHex(s.cdw10to15)}`]);
    out.push([
      2,
      `SGL: type ${s.sgl.type}, sub type ${s.sgl.subtype}, address ${hex64(s.sgl.address)}, length ${s.sgl.length}${s.sgl.key === null ? '' : `, key ${hexN(s.sgl.key, 8)}`}`,
    ]);
    out.push([2, `in-capsule data: ${c.inCapsuleLength} bytes`]);
    const fb = c.fabrics;
    if (fb !== null) {
      out.push([2, `Fabrics: fctype ${hexN(fb.fctype, 2)} (${fabricsTypeName(fb.fctype)})`]);
      if (fb.connect !== null) {
        const k = fb.connect;
        out.push([3, `recfmt ${k.recfmt}, qid ${k.qid}, sqsize ${k.sqsize} (${k.sqsize + 1} entries), cattr ${hexN(k.cattr, 2)}, kato ${k.kato} ms`]);
      }
      if (fb.property !== null) {
        const p = fb.property;
        out.push([
          3,
          `attributes ${hexN(p.attrib, 2)} (${(p.attrib & 7) === 1 ? 8 : 4}-byte property), offset ${hexN(p.offset, 8)} (${PROPERTY_NAMES[p.offset] ?? 'unnamed'})${p.value === null ? '' : `, value ${hex64(p.value)}`}`,
        ]);
      }
    }
    const d = c.connectData;
    if (d !== null) {
      out.push([2, 'Connect data:']);
      out.push([3, `host ID ${toHex(d.hostId)}, cntlid ${hexN(d.cntlid, 4)}`]);
      out.push([3, `subsystem NQN ${d.subnqn}`]);
      out.push([3, `host NQN ${d.hostnqn}`]);
    }
  }
  const q = f.completion;
  if (q !== null) {
    const p = statusParts(q.status);
    out.push([2, `CQE: result ${hex64(q.result)}, SQ head ${q.sqHead}, SQ ID ${q.sqId}, command ID ${q.commandId}`]);
    out.push([
      2,
      `status ${hexN(q.status, 4)}: SCT ${p.sct}, SC ${hexN(p.sc, 2)} (${statusName(q.status, isConnect(f.of))}), CRD ${p.crd}, More ${p.more ? 1 : 0}, DNR ${p.dnr ? 1 : 0}, phase ${p.phase}`,
    ]);
  }
  if (f.of !== null) out.push([2, `for command ${f.of.commandId} (${refName(f.of, f.qid)})`]);
  if (f.error !== null) out.push([2, `NVMe error: ${f.error.code}: ${f.error.reason}`]);
  return out;
}

/** A number or null as JSON.stringify writes it. */
const jsonNumber = (n: number | null): string => (n !== null && Number.isFinite(n) ? String(n) : 'null');

/**
 * The `nvme` member of a frame's JSON object: `,"nvme":{…}`, the text of `JSON.stringify(nvmeJson(f))`.
 * A frame of data, a capsule's part or a completion (most of a storage capture) is written as a
 * template: building its object and stringifying it cost as much as the rest of the frame's JSON.
 */
export function nvmeJsonMember(f: NvmeFrame): string {
  if (f.cmReq !== null || f.cmRep !== null || f.cmRej !== null || f.command !== null) return `,"nvme":${JSON.stringify(nvmeJson(f))}`;
  // `kind` and `direction` are words of their own types: nothing in them to escape.
  return `,"nvme":{"kind":"${f.kind}","direction":${f.direction === null ? 'null' : `"${f.direction}"`},"qid":${jsonNumber(f.qid)},"packets":${jsonNumber(f.packets)},"length":${jsonNumber(f.length)},"cmReq":null,"cmRep":null,"cmRej":null,"command":null,"completion":${completionJson(f)},"of":${f.of === null ? 'null' : `{"commandId":${jsonNumber(f.of.commandId)},"opcode":${jsonNumber(f.of.opcode)},"fctype":${jsonNumber(f.of.fctype)},"name":${JSON.stringify(refName(f.of, f.qid))}}`},"error":${f.error === null ? 'null' : JSON.stringify(f.error.message)}}`;
}

/** `,"nvme":{"kind":"KIND","direction":` by kind, and the pieces of the template between its values. */
const KIND_PIECES: ReadonlyMap<NvmeFrame['kind'], Uint8Array> = new Map(
  (['cm-req', 'cm-rep', 'cm-rej', 'command', 'completion', 'fragment', 'data', 'other'] as const).map((k) => [k, utf8(`,"nvme":{"kind":"${k}","direction":`)]),
);
const DIRECTIONS: ReadonlyMap<NvmeFrame['direction'], Uint8Array> = new Map(
  ([null, 'to-target', 'to-host'] as const).map((d) => [d, utf8(d === null ? 'null' : `"${d}"`)]),
);
const QID = utf8(',"qid":');
const PACKETS = utf8(',"packets":');
const LENGTH = utf8(',"length":');
const NO_CM_NO_COMMAND = utf8(',"cmReq":null,"cmRep":null,"cmRej":null,"command":null,"completion":');
const OF_COMMAND_ID = utf8(',"of":{"commandId":');
const OF_NULL = utf8(',"of":null');
const OPCODE = utf8(',"opcode":');
const FCTYPE = utf8(',"fctype":');
const NAME = utf8(',"name":');
const ERROR = utf8(',"error":');
const NULL = utf8('null');

function writeJsonNumber(t: TextBytes, n: number | null): void {
  if (n === null) t.bytes(NULL);
  else t.jsonNumber(n);
}

/**
 * `nvmeJsonMember(f)` written straight into `t` (UlpText.writeJsonMember): the template's constant
 * runs as pre-encoded bytes, its numbers digit by digit; a frame of the CM or a command as its text.
 */
export function writeNvmeJsonMember(t: TextBytes, f: NvmeFrame): void {
  const kind = KIND_PIECES.get(f.kind);
  const direction = DIRECTIONS.get(f.direction);
  if (f.cmReq !== null || f.cmRep !== null || f.cmRej !== null || f.command !== null || kind === undefined || direction === undefined) {
    t.text(nvmeJsonMember(f));
    return;
  }
  t.bytes(kind);
  t.bytes(direction);
  t.bytes(QID);
  writeJsonNumber(t, f.qid);
  t.bytes(PACKETS);
  t.jsonNumber(f.packets);
  t.bytes(LENGTH);
  t.jsonNumber(f.length);
  t.bytes(NO_CM_NO_COMMAND);
  if (f.completion === null) t.bytes(NULL);
  else t.text(completionJson(f));
  const of = f.of;
  if (of === null) t.bytes(OF_NULL);
  else {
    t.bytes(OF_COMMAND_ID);
    t.jsonNumber(of.commandId);
    t.bytes(OPCODE);
    t.jsonNumber(of.opcode);
    t.bytes(FCTYPE);
    writeJsonNumber(t, of.fctype);
    t.bytes(NAME);
    t.jsonString(refName(of, f.qid));
    t.byte(0x7d);
  }
  t.bytes(ERROR);
  if (f.error === null) t.bytes(NULL);
  else t.jsonString(f.error.message);
  t.byte(0x7d);
}

/** `nvmeJson(f).completion` as JSON. */
function completionJson(f: NvmeFrame): string {
  const q = f.completion;
  if (q === null) return 'null';
  const p = statusParts(q.status);
  return `{"result":"${hex64(q.result)}","sqHead":${jsonNumber(q.sqHead)},"sqId":${jsonNumber(q.sqId)},"commandId":${jsonNumber(q.commandId)},"status":${jsonNumber(q.status)},"phase":${jsonNumber(p.phase)},"sc":${jsonNumber(p.sc)},"sct":${jsonNumber(p.sct)},"crd":${jsonNumber(p.crd)},"more":${p.more},"dnr":${p.dnr},"statusName":${JSON.stringify(statusName(q.status, isConnect(f.of)))}}`;
}

/** The `nvme` object (docs/decode.md): 64-bit values as 0x-prefixed 16-digit hex strings. */
export function nvmeJson(f: NvmeFrame): Record<string, unknown> {
  const c = f.command;
  const q = f.completion;
  return {
    kind: f.kind,
    direction: f.direction,
    qid: f.qid,
    packets: f.packets,
    length: f.length,
    cmReq: f.cmReq,
    cmRep: f.cmRep,
    cmRej: f.cmRej === null ? null : { ...f.cmRej, statusName: cmRejStatusName(f.cmRej.status) },
    command:
      c === null
        ? null
        : {
            opcode: c.sqe.opcode,
            name: commandName(c.sqe.opcode, c.fabrics?.fctype ?? null, f.qid),
            flags: c.sqe.flags,
            commandId: c.sqe.commandId,
            nsid: c.sqe.nsid,
            metadata: hex64(c.sqe.metadata),
            sgl: { type: c.sqe.sgl.type, subtype: c.sqe.sgl.subtype, address: hex64(c.sqe.sgl.address), length: c.sqe.sgl.length, key: c.sqe.sgl.key },
            cdw10to15: toHex(c.sqe.cdw10to15),
            inCapsuleLength: c.inCapsuleLength,
            fabrics:
              c.fabrics === null
                ? null
                : {
                    fctype: c.fabrics.fctype,
                    connect: c.fabrics.connect,
                    property:
                      c.fabrics.property === null
                        ? null
                        : { ...c.fabrics.property, value: c.fabrics.property.value === null ? null : hex64(c.fabrics.property.value) },
                  },
            connectData: c.connectData === null ? null : { ...c.connectData, hostId: toHex(c.connectData.hostId) },
          },
    completion:
      q === null
        ? null
        : {
            result: hex64(q.result),
            sqHead: q.sqHead,
            sqId: q.sqId,
            commandId: q.commandId,
            status: q.status,
            ...statusParts(q.status),
            statusName: statusName(q.status, isConnect(f.of)),
          },
    of: f.of === null ? null : { ...f.of, name: refName(f.of, f.qid) },
    error: f.error === null ? null : f.error.message,
  };
}
