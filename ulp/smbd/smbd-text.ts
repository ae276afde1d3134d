/**
 * How an SMB Direct frame reads: the summary words of `roce decode`, the `-V` tree lines and the
 * `smbd` member of `--json`.
 */
import { hex64 } from '../../packets/bytes';
import { smb2CommandName, isResponse, SMB2_FLAGS_RELATED_OPERATIONS } from './smb2-header';
import type { Smb2Part, SmbdFrame } from './smbd-decoder';

const hex = (v: number, digits: number) => `0x${v.toString(16).padStart(digits, '0')}`;
const ofText = (f: SmbdFrame) => (f.of === null ? '' : ` mid ${f.of.messageId} (${smb2CommandName(f.of.command)})`);

export function smbdWords(f: SmbdFrame): string {
  switch (f.kind) {
    case 'cm-req':
      return 'SMB Direct CM REQ';
    case 'cm-rep':
      return 'SMB Direct CM REP';
    case 'negotiate-request': {
      const r = f.negotiateRequest;
      return r === null
        ? 'SMBD NegotiateRequest'
        : `SMBD NegotiateRequest version ${hex(r.minVersion, 4)}-${hex(r.maxVersion, 4)} credits ${r.creditsRequested} recv ${r.maxReceiveSize}`;
    }
    case 'negotiate-response': {
      const r = f.negotiateResponse;
      return r === null
        ? 'SMBD NegotiateResponse'
        : `SMBD NegotiateResponse version ${hex(r.negotiatedVersion, 4)} credits ${r.creditsGranted} status ${hex(r.status, 8)} rw ${r.maxReadWriteSize}`;
    }
    case 'send-fragment':
      return `SMBD fragment ${f.length} B${f.error === null ? '' : ` [${f.error.reason}]`}`;
    case 'rdma':
      return `SMBD RDMA data${ofText(f)}${f.length > 0 ? ` ${f.length} B` : ''}`;
    case 'data': {
      const t = f.transfer;
      const head =
        t === null ? 'SMBD DataMessage' : `SMBD DataMessage credits ${t.creditsRequested}/${t.creditsGranted}${t.flags & 1 ? ' response-requested' : ''}`;
      const m = f.smb2;
      // A compound's commands one after the other: `SMB2 CREATE request mid 2 | QUERY_INFO request mid 3`.
      if (m !== null) return `${head}; SMB2 ${m.commands.map(commandWords).join(' | ')}${f.error === null ? '' : ` [${f.error.reason}]`}`;
      if (t !== null && t.dataLength > 0)
        return `${head} part ${f.transfers}, ${t.remainingDataLength} B to come${f.error === null ? '' : ` [${f.error.reason}]`}`;
      return `${head}${f.error === null ? '' : ` [${f.error.reason}]`}`;
    }
    default:
      return `SMBD${f.error === null ? '' : ` [${f.error.reason}]`}`;
  }
}

function commandWords(m: Smb2Part): string {
  const h = m.header;
  const rw =
    m.request === null
      ? ''
      : ` len ${m.request.length} off ${m.request.offset}${m.request.descriptors.map((d) => ` rdma ${hex(d.token, 8)}:${hex64(d.offset)}+${d.length}`).join('')}`;
  const rsp = isResponse(h) ? ` status ${hex(h.status, 8)}${m.responseLength === null ? '' : ` len ${m.responseLength}`}` : '';
  return `${smb2CommandName(h.command)} ${isResponse(h) ? 'response' : 'request'} mid ${h.messageId}${rw}${rsp}`;
}

export function smbdTreeLines(f: SmbdFrame): [number, string][] {
  const out: [number, string][] = [[0, 'SMB Direct (MS-SMBD)']];
  const r = f.negotiateRequest;
  if (r !== null) {
    out.push([1, 'NegotiateRequest']);
    out.push([2, `MinVersion: ${hex(r.minVersion, 4)}`], [2, `MaxVersion: ${hex(r.maxVersion, 4)}`], [2, `CreditsRequested: ${r.creditsRequested}`]);
    out.push([2, `PreferredSendSize: ${r.preferredSendSize}`], [2, `MaxReceiveSize: ${r.maxReceiveSize}`], [2, `MaxFragmentedSize: ${r.maxFragmentedSize}`]);
  }
  const p = f.negotiateResponse;
  if (p !== null) {
    out.push([1, 'NegotiateResponse']);
    out.push([2, `MinVersion: ${hex(p.minVersion, 4)}`], [2, `MaxVersion: ${hex(p.maxVersion, 4)}`], [2, `NegotiatedVersion: ${hex(p.negotiatedVersion, 4)}`]);
    out.push([2, `CreditsRequested: ${p.creditsRequested}`], [2, `CreditsGranted: ${p.creditsGranted}`], [2, `Status: ${hex(p.status, 8)}`]);
    out.push(
      [2, `MaxReadWriteSize: ${p.maxReadWriteSize}`],
      [2, `PreferredSendSize: ${p.preferredSendSize}`],
      [2, `MaxReceiveSize: ${p.maxReceiveSize}`],
      [2, `MaxFragmentedSize: ${p.maxFragmentedSize}`],
    );
  }
  const t = f.transfer;
  if (t !== null) {
    out.push([1, 'DataMessage']);
    out.push(
      [2, `CreditsRequested: ${t.creditsRequested}`],
      [2, `CreditsGranted: ${t.creditsGranted}`],
      [2, `Flags: ${hex(t.flags, 4)}${t.flags & 1 ? ' (ResponseRequested)' : ''}`],
    );
    out.push([2, `RemainingLength: ${t.remainingDataLength}`], [2, `DataOffset: ${t.dataOffset}`], [2, `DataLength: ${t.dataLength}`]);
    if (f.transfers > 1 || t.remainingDataLength > 0) out.push([2, `[Data transfers of the SMB2 message so far: ${f.transfers}]`]);
  }
  if (f.packets > 1) out.push([1, `[SEND packets: ${f.packets}, ${f.length} bytes]`]);
  const cmds = f.smb2?.commands ?? [];
  cmds.forEach((m, i) => {
    const h = m.header;
    out.push([0, `SMB2 (Server Message Block Protocol version 2)${cmds.length > 1 ? ` [compound command ${i + 1} of ${cmds.length}]` : ''}`]);
    out.push(
      [1, `Command: ${smb2CommandName(h.command)} (${h.command})`],
      [1, `Flags: ${hex(h.flags, 8)}${isResponse(h) ? ' (response)' : ''}${h.flags & SMB2_FLAGS_RELATED_OPERATIONS ? ' (related)' : ''}`],
    );
    if (h.nextCommand !== 0) out.push([1, `Next Command: ${h.nextCommand}`]);
    out.push([1, `Message ID: ${h.messageId}`]);
    if (isResponse(h)) out.push([1, `NT Status: ${hex(h.status, 8)}`]);
    if (m.request !== null) {
      out.push([1, `Length: ${m.request.length}`], [1, `File Offset: ${m.request.offset}`], [1, `Channel: ${hex(m.request.channel, 8)}`]);
      for (const d of m.request.descriptors) out.push([1, `Buffer descriptor: Offset ${hex64(d.offset)} Token ${hex(d.token, 8)} Length ${d.length}`]);
    }
    if (m.responseLength !== null) out.push([1, `Length: ${m.responseLength}`]);
    if (m.of !== null) out.push([1, `[Request: message ID ${m.of.messageId} (${smb2CommandName(m.of.command)})]`]);
  });
  if (f.of !== null && f.smb2 === null) out.push([1, `[Request: message ID ${f.of.messageId} (${smb2CommandName(f.of.command)})]`]);
  if (f.error !== null) out.push([1, `[Error: ${f.error.reason}]`]);
  return out;
}

function partJson(m: Smb2Part) {
  return {
    command: m.header.command,
    name: smb2CommandName(m.header.command),
    flags: m.header.flags,
    response: isResponse(m.header),
    messageId: m.header.messageId.toString(),
    status: m.header.status,
    sessionId: hex64(m.header.sessionId),
    request:
      m.request === null
        ? null
        : {
            length: m.request.length,
            offset: m.request.offset.toString(),
            channel: m.request.channel,
            descriptors: m.request.descriptors.map((d) => ({ offset: hex64(d.offset), token: d.token, length: d.length })),
          },
    responseLength: m.responseLength,
  };
}

export function smbdJson(f: SmbdFrame): Record<string, unknown> {
  const m = f.smb2;
  return {
    kind: f.kind,
    direction: f.direction,
    packets: f.packets,
    length: f.length,
    negotiateRequest: f.negotiateRequest,
    negotiateResponse: f.negotiateResponse,
    transfer: f.transfer,
    transfers: f.transfers,
    smb2:
      m === null
        ? null
        : {
            ...partJson(m),
            length: m.length,
            // Every command of the message, the first included (a compound has more than one).
            commands: m.commands.map((c) => ({
              ...partJson(c),
              of: c.of === null ? null : { messageId: c.of.messageId.toString(), name: smb2CommandName(c.of.command) },
            })),
          },
    of: f.of === null ? null : { messageId: f.of.messageId.toString(), command: f.of.command, name: smb2CommandName(f.of.command) },
    error: f.error === null ? null : f.error.message,
  };
}

/** The `smbd` member of a frame's JSON object: `,"smbd":{…}`. */
export function smbdJsonMember(f: SmbdFrame): string {
  return `,"smbd":${JSON.stringify(smbdJson(f))}`;
}
