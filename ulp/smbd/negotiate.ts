/**
 * The SMB Direct negotiation (MS-SMBD §2.2.1, §2.2.2): the first message each way on a new
 * connection, little-endian.
 *
 * Request, 20 bytes: MinVersion (0), MaxVersion (2), Reserved (4), CreditsRequested (6),
 * PreferredSendSize (8), MaxReceiveSize (12), MaxFragmentedSize (16).
 *
 * Response, 32 bytes: MinVersion (0), MaxVersion (2), NegotiatedVersion (4), Reserved (6),
 * CreditsRequested (8), CreditsGranted (10), Status (12, an NTSTATUS), MaxReadWriteSize (16),
 * PreferredSendSize (20), MaxReceiveSize (24), MaxFragmentedSize (28).
 */
import { need } from '../../packets/errors';
import { checkUint } from '../../packets/bytes';

/** The only version MS-SMBD defines (§2.2.1: 0x0100, SMB Direct 1.0). */
export const SMBD_VERSION_1 = 0x0100;
export const NEGOTIATE_REQUEST_LEN = 20;
export const NEGOTIATE_RESPONSE_LEN = 32;

export interface NegotiateRequest {
  minVersion: number;
  maxVersion: number;
  creditsRequested: number;
  preferredSendSize: number;
  maxReceiveSize: number;
  maxFragmentedSize: number;
}

export interface NegotiateResponse {
  minVersion: number;
  maxVersion: number;
  negotiatedVersion: number;
  creditsRequested: number;
  creditsGranted: number;
  /** An NTSTATUS (0: STATUS_SUCCESS). */
  status: number;
  maxReadWriteSize: number;
  preferredSendSize: number;
  maxReceiveSize: number;
  maxFragmentedSize: number;
}

export function parseNegotiateRequest(view: DataView, off: number, end: number): NegotiateRequest {
  need(end, off, NEGOTIATE_REQUEST_LEN, 'SMB Direct negotiate request');
  return {
    minVersion: view.getUint16(off, true),
    maxVersion: view.getUint16(off + 2, true),
    creditsRequested: view.getUint16(off + 6, true),
    preferredSendSize: view.getUint32(off + 8, true),
    maxReceiveSize: view.getUint32(off + 12, true),
    maxFragmentedSize: view.getUint32(off + 16, true),
  };
}

export function emitNegotiateRequest(r: NegotiateRequest): Uint8Array {
  checkUint(r.minVersion, 0xffff, 'SMBD MinVersion');
  checkUint(r.maxVersion, 0xffff, 'SMBD MaxVersion');
  checkUint(r.creditsRequested, 0xffff, 'SMBD CreditsRequested');
  checkUint(r.preferredSendSize, 0xffffffff, 'SMBD PreferredSendSize');
  checkUint(r.maxReceiveSize, 0xffffffff, 'SMBD MaxReceiveSize');
  checkUint(r.maxFragmentedSize, 0xffffffff, 'SMBD MaxFragmentedSize');
  const out = new Uint8Array(NEGOTIATE_REQUEST_LEN);
  const v = new DataView(out.buffer);
  v.setUint16(0, r.minVersion, true);
  v.setUint16(2, r.maxVersion, true);
  v.setUint16(6, r.creditsRequested, true);
  v.setUint32(8, r.preferredSendSize, true);
  v.setUint32(12, r.maxReceiveSize, true);
  v.setUint32(16, r.maxFragmentedSize, true);
  return out;
}

export function parseNegotiateResponse(view: DataView, off: number, end: number): NegotiateResponse {
  need(end, off, NEGOTIATE_RESPONSE_LEN, 'SMB Direct negotiate response');
  return {
    minVersion: view.getUint16(off, true),
    maxVersion: view.getUint16(off + 2, true),
    negotiatedVersion: view.getUint16(off + 4, true),
    creditsRequested: view.getUint16(off + 8, true),
    creditsGranted: view.getUint16(off + 10, true),
    status: view.getUint32(off + 12, true),
    maxReadWriteSize: view.getUint32(off + 16, true),
    preferredSendSize: view.getUint32(off + 20, true),
    maxReceiveSize: view.getUint32(off + 24, true),
    maxFragmentedSize: view.getUint32(off + 28, true),
  };
}

export function emitNegotiateResponse(r: NegotiateResponse): Uint8Array {
  for (const [v, n] of [
    [r.minVersion, 'MinVersion'],
    [r.maxVersion, 'MaxVersion'],
    [r.negotiatedVersion, 'NegotiatedVersion'],
    [r.creditsRequested, 'CreditsRequested'],
    [r.creditsGranted, 'CreditsGranted'],
  ] as const)
    checkUint(v, 0xffff, `SMBD ${n}`);
  for (const [v, n] of [
    [r.status, 'Status'],
    [r.maxReadWriteSize, 'MaxReadWriteSize'],
    [r.preferredSendSize, 'PreferredSendSize'],
    [r.maxReceiveSize, 'MaxReceiveSize'],
    [r.maxFragmentedSize, 'MaxFragmentedSize'],
  ] as const)
    checkUint(v, 0xffffffff, `SMBD ${n}`);
  const out = new Uint8Array(NEGOTIATE_RESPONSE_LEN);
  const v = new DataView(out.buffer);
  v.setUint16(0, r.minVersion, true);
  v.setUint16(2, r.maxVersion, true);
  v.setUint16(4, r.negotiatedVersion, true);
  v.setUint16(8, r.creditsRequested, true);
  v.setUint16(10, r.creditsGranted, true);
  v.setUint32(12, r.status, true);
  v.setUint32(16, r.maxReadWriteSize, true);
  v.setUint32(20, r.preferredSendSize, true);
  v.setUint32(24, r.maxReceiveSize, true);
  v.setUint32(28, r.maxFragmentedSize, true);
  return out;
}
