/**
 * iSER frames in words: the summary line (`iSER SCSI Command itt 0x14 READ(10) lba 16 blocks 8
 * edtl 4096 R stag 0x24dc51c2`, `iSER SCSI Response itt 0x14 (READ(10)) GOOD`, `iSER data itt
 * 0x14 (READ(10)) 1024 B`), the `-V` tree, and the `iser` object of `roce decode --json`.
 */
import { hex64 } from '../../packets/bytes';
import type { IserFrame } from './iser-decoder';
import { IserOpcode, iserOpcodeName } from './iser-header';
import {
  IscsiOpcode as Op,
  LOGIN_STAGE_NAMES,
  iscsiOpcodeName,
  loginStatusName,
  logoutReasonName,
  logoutResponseName,
  scsiResponseName,
  scsiStatusName,
  tmfFunctionName,
  tmfResponseName,
} from './iscsi-names';

const hex = (v: number, digits: number): string => `0x${v.toString(16).padStart(digits, '0')}`;

function pduWords(f: IserFrame): string {
  const p = f.pdu;
  const d = f.details;
  if (p === null || d === null) return '';
  const parts: string[] = [iscsiOpcodeName(p.opcode), `itt ${hex(p.initiatorTaskTag, 8)}`];
  const c = d.scsiCommand;
  if (c !== null) {
    parts.push(c.cdb.name);
    if (c.cdb.lba !== null && c.cdb.blocks !== null) parts.push(`lba ${c.cdb.lba} blocks ${c.cdb.blocks}`);
    if (c.cdb.allocationLength !== null) parts.push(`alloc ${c.cdb.allocationLength}`);
    parts.push(`edtl ${c.expectedDataTransferLength}`);
  }
  const h = f.header;
  if (h !== null && h.opcode === IserOpcode.ISCSI_CTRL) {
    if (h.wsv) parts.push(`W stag ${hex(h.writeStag, 8)}`);
    if (h.rsv) parts.push(`R stag ${hex(h.readStag, 8)}`);
  }
  const r = d.scsiResponse;
  if (r !== null) {
    if (f.of !== null) parts.push(`(${f.of.name})`);
    parts.push(r.response === 0 ? scsiStatusName(r.status) : scsiResponseName(r.response));
    if (r.residualCount > 0) parts.push(`residual ${r.residualCount}${r.underflow ? ' under' : r.overflow ? ' over' : ''}`);
    if (r.senseLength !== null) parts.push(`sense ${r.senseLength} B`);
  }
  const l = d.login;
  if (l !== null) {
    parts.push(`${LOGIN_STAGE_NAMES[l.csg] ?? l.csg} -> ${l.transit ? (LOGIN_STAGE_NAMES[l.nsg] ?? l.nsg) : 'same stage'}`);
    if (l.statusClass !== null) parts.push(loginStatusName(l.statusClass, l.statusDetail ?? 0));
  }
  if (d.tmfFunction !== null) parts.push(tmfFunctionName(d.tmfFunction), `ref itt ${hex(d.referencedTaskTag ?? 0, 8)}`);
  if (d.tmfResponse !== null) parts.push(tmfResponseName(d.tmfResponse));
  if (d.logoutReason !== null) parts.push(logoutReasonName(d.logoutReason));
  if (d.logoutResponse !== null) parts.push(logoutResponseName(d.logoutResponse));
  if (d.keyValues !== null && d.keyValues.length > 0) parts.push(`${d.keyValues.length} key${d.keyValues.length === 1 ? '' : 's'}`);
  if (p.opcode === Op.NOP_OUT || p.opcode === Op.NOP_IN) if (p.dataSegmentLength > 0) parts.push(`ping ${p.dataSegmentLength} B`);
  return parts.join(' ');
}

export function iserWords(f: IserFrame): string {
  const err = f.error === null ? '' : ` [iSER ${f.error.code}: ${f.error.reason}]`;
  const pk = f.packets > 1 ? ` [${f.packets} packets]` : '';
  switch (f.kind) {
    case 'cm-req':
    case 'cm-rep': {
      const c = f.cm;
      const flags =
        c === null ? '' : ` flags ${hex(c.flags, 2)}${c.zbvaNotUsed ? ' Z (no ZBVA)' : ''}${c.sendWithInvalidateNotUsed ? ' I (no Send with Invalidate)' : ''}`;
      return `iSER CM ${f.kind === 'cm-req' ? 'REQ' : 'REP'}${flags}${err}`;
    }
    case 'message': {
      const h = f.header;
      if (h === null) return `iSER${err}`;
      if (h.opcode === IserOpcode.HELLO) return `iSER Hello version ${h.maxVersion}-${h.minVersion} IRD ${h.ird}${pk}${err}`;
      if (h.opcode === IserOpcode.HELLO_REPLY)
        return `iSER HelloReply${h.rej ? ' REJ' : ''} version ${h.currentVersion} (max ${h.maxVersion}) ORD ${h.ord}${pk}${err}`;
      return `iSER ${pduWords(f)}${pk}${err}`;
    }
    case 'fragment':
      return `iSER message part ${f.packets} (${f.length} B so far)${err}`;
    case 'data':
      return `iSER data${f.of === null ? '' : ` itt ${hex(f.of.itt, 8)} (${f.of.name})`}${f.length > 0 ? ` ${f.length} B` : ''}${err}`;
    case 'other':
      return `iSER ${f.length} B${err}`;
  }
}

export function iserTreeLines(f: IserFrame): [number, string][] {
  const out: [number, string][] = [[1, `iSCSI Extensions for RDMA: ${iserWords(f)}`]];
  out.push([2, `direction ${f.direction ?? 'CM'}${f.packets > 1 ? `, message in ${f.packets} packets` : ''}`]);
  if (f.cm !== null) out.push([2, `CM private data: flags ${hex(f.cm.flags, 2)} (Z ${f.cm.zbvaNotUsed ? 1 : 0}, I ${f.cm.sendWithInvalidateNotUsed ? 1 : 0})`]);
  const h = f.header;
  if (h !== null) {
    out.push([2, `iSER header: flags ${hex(h.flags, 2)}, opcode ${h.opcode} (${iserOpcodeName(h.opcode)})`]);
    if (h.opcode === IserOpcode.ISCSI_CTRL) {
      out.push([3, `W ${h.wsv ? 1 : 0}: write STag ${hex(h.writeStag, 8)}, base offset ${hex64(h.writeBaseOffset)}`]);
      out.push([3, `R ${h.rsv ? 1 : 0}: read STag ${hex(h.readStag, 8)}, base offset ${hex64(h.readBaseOffset)}`]);
    } else if (h.opcode === IserOpcode.HELLO) out.push([3, `MaxVer ${h.maxVersion}, MinVer ${h.minVersion}, iSER-IRD ${h.ird}`]);
    else out.push([3, `REJ ${h.rej ? 1 : 0}, MaxVer ${h.maxVersion}, CurVer ${h.currentVersion}, iSER-ORD ${h.ord}`]);
  }
  const p = f.pdu;
  const d = f.details;
  if (p !== null && d !== null) {
    out.push([
      2,
      `iSCSI: opcode ${hex(p.opcode, 2)} (${iscsiOpcodeName(p.opcode)})${p.immediate ? ', immediate' : ''}, flags ${hex(p.flags, 2)}, ITT ${hex(p.initiatorTaskTag, 8)}`,
    ]);
    out.push([
      3,
      `TotalAHSLength ${p.totalAhsLength}, DataSegmentLength ${p.dataSegmentLength}${d.lun === null ? '' : `, LUN ${hex64(d.lun)}`}${d.targetTransferTag === null ? '' : `, TTT ${hex(d.targetTransferTag, 8)}`}`,
    ]);
    const sn = [
      ['CmdSN', d.cmdSn],
      ['ExpStatSN', d.expStatSn],
      ['StatSN', d.statSn],
      ['ExpCmdSN', d.expCmdSn],
      ['MaxCmdSN', d.maxCmdSn],
    ].filter(([, v]) => v !== null);
    if (sn.length > 0) out.push([3, sn.map(([k, v]) => `${k} ${v}`).join(', ')]);
    const c = d.scsiCommand;
    if (c !== null) {
      out.push([3, `R ${c.read ? 1 : 0}, W ${c.write ? 1 : 0}, ATTR ${c.attr}, expected data transfer length ${c.expectedDataTransferLength}`]);
      out.push([
        3,
        `CDB: opcode ${hex(c.cdb.opcode, 2)} (${c.cdb.name})${c.cdb.lba === null ? '' : `, LBA ${c.cdb.lba}`}${c.cdb.blocks === null ? '' : `, ${c.cdb.blocks} blocks`}${c.cdb.allocationLength === null ? '' : `, allocation length ${c.cdb.allocationLength}`}${c.cdb.evpd === null ? '' : `, EVPD ${c.cdb.evpd ? 1 : 0}, page ${hex(c.cdb.pageCode ?? 0, 2)}`}`,
      ]);
    }
    const r = d.scsiResponse;
    if (r !== null)
      out.push([
        3,
        `response ${hex(r.response, 2)} (${scsiResponseName(r.response)}), status ${hex(r.status, 2)} (${scsiStatusName(r.status)}), o ${+r.bidiOverflow} u ${+r.bidiUnderflow} O ${+r.overflow} U ${+r.underflow}, residual ${r.residualCount}${r.senseLength === null ? '' : `, sense length ${r.senseLength}`}`,
      ]);
    const l = d.login;
    if (l !== null) {
      out.push([
        3,
        `T ${+l.transit}, C ${+l.cont}, CSG ${l.csg}, NSG ${l.nsg}, version max ${l.versionMax}, ${p.opcode === Op.LOGIN_REQUEST ? 'min' : 'active'} ${l.versionMinOrActive}`,
      ]);
      out.push([
        3,
        `ISID ${Buffer.from(l.isid).toString('hex')}, TSIH ${l.tsih}${l.cid === null ? '' : `, CID ${l.cid}`}${l.statusClass === null ? '' : `, status ${loginStatusName(l.statusClass, l.statusDetail ?? 0)}`}`,
      ]);
    }
    if (d.tmfFunction !== null)
      out.push([
        3,
        `function ${d.tmfFunction} (${tmfFunctionName(d.tmfFunction)}), referenced task tag ${hex(d.referencedTaskTag ?? 0, 8)}, RefCmdSN ${d.refCmdSn}`,
      ]);
    if (d.tmfResponse !== null) out.push([3, `response ${d.tmfResponse} (${tmfResponseName(d.tmfResponse)})`]);
    if (d.logoutReason !== null) out.push([3, `reason ${d.logoutReason} (${logoutReasonName(d.logoutReason)}), CID ${d.logoutCid}`]);
    if (d.logoutResponse !== null)
      out.push([3, `response ${d.logoutResponse} (${logoutResponseName(d.logoutResponse)}), Time2Wait ${d.time2Wait}, Time2Retain ${d.time2Retain}`]);
    for (const kv of d.keyValues ?? []) out.push([3, kv]);
  }
  if (f.of !== null) out.push([2, `for task ${hex(f.of.itt, 8)} (${f.of.name})`]);
  if (f.error !== null) out.push([2, `iSER error: ${f.error.code}: ${f.error.reason}`]);
  return out;
}

export function iserJson(f: IserFrame): Record<string, unknown> {
  const h = f.header;
  const p = f.pdu;
  const d = f.details;
  return {
    kind: f.kind,
    direction: f.direction,
    packets: f.packets,
    length: f.length,
    cm: f.cm,
    header:
      h === null ? null : h.opcode === IserOpcode.ISCSI_CTRL ? { ...h, writeBaseOffset: hex64(h.writeBaseOffset), readBaseOffset: hex64(h.readBaseOffset) } : h,
    iscsi:
      p === null || d === null
        ? null
        : {
            opcode: p.opcode,
            name: iscsiOpcodeName(p.opcode),
            immediate: p.immediate,
            flags: p.flags,
            itt: p.initiatorTaskTag,
            totalAhsLength: p.totalAhsLength,
            dataSegmentLength: p.dataSegmentLength,
            lun: d.lun === null ? null : hex64(d.lun),
            ttt: d.targetTransferTag,
            cmdSn: d.cmdSn,
            expStatSn: d.expStatSn,
            statSn: d.statSn,
            expCmdSn: d.expCmdSn,
            maxCmdSn: d.maxCmdSn,
            scsiCommand:
              d.scsiCommand === null
                ? null
                : {
                    read: d.scsiCommand.read,
                    write: d.scsiCommand.write,
                    attr: d.scsiCommand.attr,
                    expectedDataTransferLength: d.scsiCommand.expectedDataTransferLength,
                    cdb: { ...d.scsiCommand.cdb, lba: d.scsiCommand.cdb.lba === null ? null : String(d.scsiCommand.cdb.lba) },
                    cdbBytes: Buffer.from(d.scsiCommand.cdbBytes).toString('hex'),
                  },
            scsiResponse: d.scsiResponse === null ? null : { ...d.scsiResponse, statusName: scsiStatusName(d.scsiResponse.status) },
            login: d.login === null ? null : { ...d.login, isid: Buffer.from(d.login.isid).toString('hex') },
            logout: d.logoutReason ?? d.logoutResponse ?? null,
            tmf: d.tmfFunction ?? d.tmfResponse ?? null,
            keyValues: d.keyValues,
          },
    of: f.of,
    error: f.error === null ? null : f.error.message,
  };
}

export function iserJsonMember(f: IserFrame): string {
  return `,"iser":${JSON.stringify(iserJson(f))}`;
}
