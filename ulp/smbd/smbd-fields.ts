/**
 * The SMB Direct and SMB2 fields of `roce decode -Y` and `-T fields -e`, by Wireshark's names
 * (tshark 4.0's packet-smb-direct.c and packet-smb2.c: `tshark -G fields`), with tshark's bases:
 * versions, Status, Flags, smb2.nt_status, smb2.channel and buffer descriptor tokens hex at the
 * field's width; the rest decimal. A frame's values come from `FieldFrame.ulp` =
 * `{ protocol: 'smbd', frame }`. smb2.* fields are on the frame that completes the SMB2 message;
 * smb2.nt_status is a response's (tshark shows a request's Status word as ChannelSequence).
 */
import type { FieldDef, FieldFrame, FieldValue } from '../../packets/frame-fields';
import { UlpName } from '../ulp-decoder';
import type { Smb2Part, SmbdFrame } from './smbd-decoder';
import { Smb2Command, isResponse, SMB2_FLAGS_RELATED_OPERATIONS } from './smb2-header';

export interface SmbdUlpFrame {
  readonly protocol: typeof UlpName.Smbd;
  readonly frame: SmbdFrame;
}

const NONE: FieldValue[] = [];

function smbdOf(f: FieldFrame): SmbdFrame | null {
  const u = f.ulp;
  return u !== undefined && u !== null && u.protocol === UlpName.Smbd ? (u as SmbdUlpFrame).frame : null;
}

type Get = (n: SmbdFrame) => number | bigint | boolean | readonly (number | bigint)[] | null | undefined;

function uint(name: string, bits: number, hex: boolean, get: Get): FieldDef {
  return {
    name,
    type: 'uint',
    bits,
    text: hex ? (v) => `0x${(v as bigint).toString(16).padStart(bits / 4, '0')}` : (v) => String(v),
    values: (f) => {
      const n = smbdOf(f);
      const v = n === null ? null : get(n);
      if (v === null || v === undefined) return NONE;
      if (Array.isArray(v)) return v.map((x) => BigInt(x));
      return [typeof v === 'boolean' ? (v ? 1n : 0n) : BigInt(v as number | bigint)];
    },
  };
}

function bool(name: string, get: Get): FieldDef {
  return { ...uint(name, 1, false, get), type: 'bool' };
}

function proto(name: string, has: (n: SmbdFrame) => boolean): FieldDef {
  return {
    name,
    type: 'proto',
    bits: 0,
    text: () => name,
    values: (f) => {
      const n = smbdOf(f);
      return n !== null && has(n) ? [new Uint8Array(0)] : NONE;
    },
  };
}

const isSmbd = (n: SmbdFrame) => n.negotiateRequest !== null || n.negotiateResponse !== null || n.transfer !== null;
const req = (n: SmbdFrame) => n.negotiateRequest;
const rsp = (n: SmbdFrame) => n.negotiateResponse;
/** Every command of the message (a compound's, in chain order): tshark gives an smb2.* field once per command. */
const cmds = (n: SmbdFrame): Smb2Part[] | null => n.smb2?.commands ?? null;
const each = <T>(n: SmbdFrame, get: (p: Smb2Part) => T | readonly T[] | null | undefined): T[] | null => {
  const c = cmds(n);
  if (c === null) return null;
  return c.flatMap((p) => {
    const v = get(p);
    return v === null || v === undefined ? [] : Array.isArray(v) ? (v as T[]) : [v as T];
  });
};
const rwReq = (p: Smb2Part, cmd: number) => (p.header.command === cmd ? p.request : null);

const ALL: readonly FieldDef[] = [
  proto('smb_direct', isSmbd),
  uint('smb_direct.version.min', 16, true, (n) => req(n)?.minVersion ?? rsp(n)?.minVersion),
  uint('smb_direct.version.max', 16, true, (n) => req(n)?.maxVersion ?? rsp(n)?.maxVersion),
  uint('smb_direct.version.negotiated', 16, true, (n) => rsp(n)?.negotiatedVersion),
  uint('smb_direct.credits.requested', 16, false, (n) => req(n)?.creditsRequested ?? rsp(n)?.creditsRequested ?? n.transfer?.creditsRequested),
  uint('smb_direct.credits.granted', 16, false, (n) => rsp(n)?.creditsGranted ?? n.transfer?.creditsGranted),
  uint('smb_direct.status', 32, true, (n) => rsp(n)?.status),
  uint('smb_direct.max_read_write_size', 32, false, (n) => rsp(n)?.maxReadWriteSize),
  uint('smb_direct.preferred_send_size', 32, false, (n) => req(n)?.preferredSendSize ?? rsp(n)?.preferredSendSize),
  uint('smb_direct.max_receive_size', 32, false, (n) => req(n)?.maxReceiveSize ?? rsp(n)?.maxReceiveSize),
  uint('smb_direct.max_fragmented_size', 32, false, (n) => req(n)?.maxFragmentedSize ?? rsp(n)?.maxFragmentedSize),
  uint('smb_direct.flags', 16, true, (n) => n.transfer?.flags),
  bool('smb_direct.flags.response_requested', (n) => (n.transfer === null ? null : (n.transfer.flags & 1) !== 0)),
  uint('smb_direct.remaining_length', 32, false, (n) => n.transfer?.remainingDataLength),
  uint('smb_direct.data_offset', 32, false, (n) => n.transfer?.dataOffset),
  uint('smb_direct.data_length', 32, false, (n) => n.transfer?.dataLength),
  proto('smb2', (n) => n.smb2 !== null),
  uint('smb2.cmd', 16, false, (n) => each(n, (p) => p.header.command)),
  bool('smb2.flags.response', (n) => each(n, (p) => (isResponse(p.header) ? 1 : 0))),
  uint('smb2.msg_id', 64, false, (n) => each(n, (p) => p.header.messageId)),
  bool('smb2.flags.chained', (n) => each(n, (p) => ((p.header.flags & SMB2_FLAGS_RELATED_OPERATIONS) !== 0 ? 1 : 0))),
  uint('smb2.chain_offset', 32, true, (n) => each(n, (p) => p.header.nextCommand)),
  uint('smb2.nt_status', 32, true, (n) => each(n, (p) => (isResponse(p.header) ? p.header.status : null))),
  uint('smb2.read_length', 32, false, (n) => each(n, (p) => rwReq(p, Smb2Command.READ)?.length)),
  uint('smb2.write_length', 32, false, (n) => each(n, (p) => rwReq(p, Smb2Command.WRITE)?.length)),
  uint('smb2.file_offset', 64, false, (n) => each(n, (p) => p.request?.offset)),
  uint('smb2.channel', 32, true, (n) => each(n, (p) => p.channel)),
  uint('smb2.buffer_descriptor.offset', 64, false, (n) => each(n, (p) => p.request?.descriptors.map((d) => d.offset))),
  uint('smb2.buffer_descriptor.token', 32, true, (n) => each(n, (p) => p.request?.descriptors.map((d) => d.token))),
  uint('smb2.buffer_descriptor.length', 32, false, (n) => each(n, (p) => p.request?.descriptors.map((d) => d.length))),
];

const BY_NAME: ReadonlyMap<string, FieldDef> = new Map(ALL.map((d) => [d.name, d]));

export function smbdField(name: string): FieldDef | undefined {
  return BY_NAME.get(name);
}

export function smbdFieldNames(): string[] {
  return ALL.map((d) => d.name);
}
