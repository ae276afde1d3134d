/**
 * captures/smbd.pcap: an SMB Direct (MS-SMBD) conversation over RoCE v2 whose RDMA CM was not
 * captured, built with the frame builder (packets/build.ts): correct PSNs each way, an ACK for each
 * message, path MTU 1024, fixed timestamps. The decoder must find it from the negotiate request's
 * shape, as Wireshark's heuristic does.
 *
 * Client 198.18.0.1 QP 0x11, server 198.18.0.2 QP 0x12:
 *   1-4   SMB Direct negotiate request and response (with their ACKs);
 *   5-7   SMB2 NEGOTIATE request: a 1200-byte SMB Direct message in SEND FIRST + LAST;
 *   8-11  SMB2 NEGOTIATE response in two data transfers (RemainingDataLength), each a SEND ONLY;
 *   12-13 SMB2 WRITE request, channel RDMA_V1, one buffer descriptor of 2048 bytes;
 *   14-16 the server's RDMA READ of the client's buffer: request, responses FIRST and LAST;
 *   17-18 the WRITE response (Count 2048);
 *   19-20 SMB2 READ request, channel RDMA_V1, one buffer descriptor of 1024 bytes;
 *   21-22 the server's RDMA WRITE ONLY into the client's buffer, and its ACK;
 *   23-24 the READ response (DataLength 0, DataRemaining 1024: the data went by RDMA);
 *   25-26 a data transfer with no data asking for a response (SMB_DIRECT_RESPONSE_REQUESTED);
 *
 * then a second connection, client 198.18.0.3 QP 0x13 to the server's QP 0x14, whose RDMA CM was
 * captured: 27-29 CM REQ to TCP port 445 (service ID 0x00000000010601BD), REP, RTU; 30-33 the
 * negotiate request and response; 34-37 an SMB2 SESSION_SETUP request and response; 38-41 a
 * compound (CREATE, QUERY_INFO, CLOSE of one file, related) and its compound response; 42-45 a
 * compound CREATE + CLOSE whose CREATE fails with STATUS_OBJECT_NAME_NOT_FOUND, both answered so.
 */
import { buildRoceV2Frame, type TransportSpec } from '../../packets/build';
import { Opcode } from '../../packets/opcodes';
import { AethKind, encodeSyndrome } from '../../packets/aeth';
import { writePcap } from '../../packets/pcap';
import { buildCmMad } from '../../packets/mad-payload';
import { GSI_QKEY } from '../../packets/mad';
import { PortSpace, rdmaServiceId } from '../../packets/cm/service-id';
import { REQ_PRIVATE_DATA_LEN } from '../../packets/cm/req';
import { ipv6FromString } from '../../packets/bytes';
import { GSI_SPORT, ipCmPrivateData, rxeStyleReq } from './make-cm-capture';
import { SMBD_PORT } from '../../ulp/smbd/smbd-decoder';
import { emitNegotiateRequest, emitNegotiateResponse, SMBD_VERSION_1 } from '../../ulp/smbd/negotiate';
import { emitDataTransfer, SMB_DIRECT_RESPONSE_REQUESTED } from '../../ulp/smbd/data-transfer';
import { type Smb2Header, emitSmb2Header, Smb2Command, SMB2_FLAGS_RELATED_OPERATIONS, SMB2_FLAGS_SERVER_TO_REDIR } from '../../ulp/smbd/smb2-header';
import { Smb2Channel, emitReadResponse, emitReadWriteRequest, emitWriteResponse } from '../../ulp/smbd/smb2-read-write';

const MTU = 1024;
const CLIENT = { ip: '198.18.0.1', mac: 0x020000000001, qpn: 0x11 };
const SERVER = { ip: '198.18.0.2', mac: 0x020000000002, qpn: 0x12 };
const WRITE_BUF = { offset: 0x7f3a00001000n, token: 0x0000a101, length: 2048 };
const READ_BUF = { offset: 0x7f3a00008000n, token: 0x0000a202, length: 1024 };
const VERSION = SMBD_VERSION_1;
const STATUS_OBJECT_NAME_NOT_FOUND = 0xc0000034;

const CLIENT2 = { ip: '198.18.0.3', mac: 0x020000000003, qpn: 0x13 };
const SERVER2 = { ip: '198.18.0.2', mac: 0x020000000002, qpn: 0x14 };

type Host = typeof CLIENT;

/** The CM's view of a host: its node GUID (EUI-64 of the MAC, as rxe makes it) and its IPv4-mapped GID. */
function cmEnd(h: Host) {
  return {
    mac: h.mac,
    ip: h.ip,
    guid: 0x0000_00ff_fe00_0000n | BigInt(h.mac & 0xffffff) | (BigInt(Math.floor(h.mac / 0x1000000) ^ 0x020000) << 40n),
    gid: ipv6FromString(`::ffff:${h.ip}`),
    psn: 0,
    ipId: 0,
  };
}

/** An SMB2 message: a 64-byte header and `body`. */
function smb2(h: Partial<Smb2Header> & { command: number; messageId: bigint }, body: Uint8Array): Uint8Array {
  const m = new Uint8Array(64 + body.length);
  emitSmb2Header(
    { creditCharge: 1, status: 0, credits: 1, flags: 0, nextCommand: 0, word32: 0xfeff, word36: 0, sessionId: 0n, ...h },
    new DataView(m.buffer),
    0,
  );
  m.set(body, 64);
  return m;
}

/** A NEGOTIATE body of `n` bytes (MS-SMB2 §2.2.3, §2.2.4): its StructureSize and the SMB 3.0 dialect (0x0300), zeros elsewhere. */
function negotiateBody(response: boolean, n: number): Uint8Array {
  const b = new Uint8Array(n);
  const v = new DataView(b.buffer);
  v.setUint16(0, response ? 65 : 36, true);
  if (response) v.setUint16(4, 0x0300, true);
  else {
    v.setUint16(2, 1, true); // DialectCount
    v.setUint16(36, 0x0300, true); // Dialects[0]
  }
  return b;
}

/** A SESSION_SETUP request or response body (MS-SMB2 §2.2.5, §2.2.6) with no security buffer. */
function sessionSetupBody(response: boolean): Uint8Array {
  const b = new Uint8Array(response ? 9 : 25);
  b[0] = response ? 9 : 25;
  return b;
}

/**
 * An SMB2 compound (MS-SMB2 §3.2.4.1.4): each command's header and body, every one but the last
 * padded to 8 bytes, with NextCommand the offset of the next header; the second and later carry
 * SMB2_FLAGS_RELATED_OPERATIONS (they work on the file the first opened).
 */
function compound(parts: { h: Partial<Smb2Header> & { command: number; messageId: bigint }; body: Uint8Array }[]): Uint8Array {
  const msgs = parts.map(({ h, body }, i) => {
    const last = i === parts.length - 1;
    const len = 64 + body.length;
    const padded = last ? len : (len + 7) & ~7;
    const flags = (h.flags ?? 0) | (i > 0 ? SMB2_FLAGS_RELATED_OPERATIONS : 0);
    const m = new Uint8Array(padded);
    m.set(smb2({ ...h, flags, nextCommand: last ? 0 : padded }, body));
    return m;
  });
  const out = new Uint8Array(msgs.reduce((n, m) => n + m.length, 0));
  let o = 0;
  for (const m of msgs) {
    out.set(m, o);
    o += m.length;
  }
  return out;
}

/** A CREATE request (MS-SMB2 §2.2.13) opening `name` (FILE_OPEN, read access), the name after the fixed part. */
function createRequest(name: string): Uint8Array {
  const n = Buffer.from(name, 'utf16le');
  const b = new Uint8Array(56 + n.length);
  const v = new DataView(b.buffer);
  v.setUint16(0, 57, true);
  v.setUint32(4, 2, true); // ImpersonationLevel: Impersonation
  v.setUint32(24, 0x00120089, true); // DesiredAccess: read data, attributes, EA, control, synchronize
  v.setUint32(32, 7, true); // ShareAccess: read, write, delete
  v.setUint32(36, 1, true); // CreateDisposition: FILE_OPEN
  v.setUint32(40, 0x40, true); // CreateOptions: FILE_NON_DIRECTORY_FILE
  v.setUint16(44, 64 + 56, true);
  v.setUint16(46, n.length, true);
  b.set(n, 56);
  return b;
}

/** The FileId a related compound's later commands name: all ones, "the file the command before opened" (MS-SMB2 §3.3.5.2.7.2). */
const RELATED_FILE_ID = new Uint8Array(16).fill(0xff);
const FILE_ID = Uint8Array.from({ length: 16 }, (_, i) => 0x31 + i);

/** A QUERY_INFO request (§2.2.37) for FileStandardInformation (InfoType SMB2_0_INFO_FILE, class 5). */
function queryInfoRequest(): Uint8Array {
  const b = new Uint8Array(41);
  const v = new DataView(b.buffer);
  v.setUint16(0, 41, true);
  b[2] = 1;
  b[3] = 5;
  v.setUint32(4, 24, true);
  b.set(RELATED_FILE_ID, 24);
  return b;
}

/** A CLOSE request (§2.2.15). */
function closeRequest(): Uint8Array {
  const b = new Uint8Array(24);
  new DataView(b.buffer).setUint16(0, 24, true);
  b.set(RELATED_FILE_ID, 8);
  return b;
}

/** A CREATE response (§2.2.14): the file opened, 4096 bytes, a normal file. */
function createResponse(): Uint8Array {
  const b = new Uint8Array(89);
  const v = new DataView(b.buffer);
  v.setUint16(0, 89, true);
  v.setUint32(4, 1, true); // CreateAction: FILE_OPENED
  v.setBigUint64(40, 4096n, true);
  v.setBigUint64(48, 4096n, true);
  v.setUint32(56, 0x80, true); // FILE_ATTRIBUTE_NORMAL
  b.set(FILE_ID, 64);
  return b;
}

/** A QUERY_INFO response (§2.2.38) carrying FileStandardInformation (MS-FSCC §2.4.41): 24 bytes after the fixed part. */
function queryInfoResponse(): Uint8Array {
  const b = new Uint8Array(8 + 24);
  const v = new DataView(b.buffer);
  v.setUint16(0, 9, true);
  v.setUint16(2, 64 + 8, true);
  v.setUint32(4, 24, true);
  v.setBigUint64(8, 4096n, true);
  v.setBigUint64(16, 4096n, true);
  v.setUint32(24, 1, true); // NumberOfLinks
  return b;
}

/** A CLOSE response (§2.2.16) without the attributes (Flags 0). */
function closeResponse(): Uint8Array {
  const b = new Uint8Array(60);
  new DataView(b.buffer).setUint16(0, 60, true);
  return b;
}

/** An error response body (§2.2.2): StructureSize 9, no error data. */
function errorResponse(): Uint8Array {
  const b = new Uint8Array(9);
  b[0] = 9;
  return b;
}

/** `n` bytes of file data, a fixed pattern. */
function fileData(seed: number, n: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (seed + i * 7) & 0xff);
}

export function smbdCapture(): Uint8Array {
  const frames: Uint8Array[] = [];
  const psn = new Map<Host, number>([
    [CLIENT, 0x100],
    [SERVER, 0x800],
  ]);
  const frame = (from: Host, to: Host, t: TransportSpec) =>
    frames.push(
      buildRoceV2Frame({ ...t, eth: { src: from.mac, dst: to.mac }, ip: { version: 4, src: from.ip, dst: to.ip }, udp: { srcPort: 0xc000 + from.qpn } }),
    );
  /** Each responder's MSN: the request messages it has completed (IBTA §9.7.5.1.2). */
  const msn = new Map<Host, number>();
  const completed = (h: Host): number => {
    const m = ((msn.get(h) ?? 0) + 1) & 0xffffff;
    msn.set(h, m);
    return m;
  };
  /** The ACK of the message whose last packet is `p`: `from` completed it. */
  const ack = (from: Host, to: Host, p: number) =>
    frame(from, to, {
      bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: to.qpn, psn: p },
      aeth: { syndrome: encodeSyndrome(AethKind.ACK, 0x1f), msn: completed(from) },
    });
  const next = (h: Host) => {
    const p = psn.get(h) as number;
    psn.set(h, (p + 1) & 0xffffff);
    return p;
  };
  /** A SEND of `msg` from `from`, in packets of at most the MTU, and the ACK of its last. */
  const send = (from: Host, to: Host, msg: Uint8Array) => {
    const n = Math.max(1, Math.ceil(msg.length / MTU));
    let last = 0;
    for (let i = 0; i < n; i++) {
      const opcode = n === 1 ? Opcode.RC_SEND_ONLY : i === 0 ? Opcode.RC_SEND_FIRST : i === n - 1 ? Opcode.RC_SEND_LAST : Opcode.RC_SEND_MIDDLE;
      last = next(from);
      frame(from, to, { bth: { opcode, destQp: to.qpn, psn: last, ackReq: i === n - 1 }, payload: msg.subarray(i * MTU, (i + 1) * MTU) });
    }
    ack(to, from, last);
  };
  const transfer = (from: Host, to: Host, data: Uint8Array, remaining = 0, flags = 0) =>
    send(from, to, emitDataTransfer({ creditsRequested: 255, creditsGranted: from === SERVER ? 255 : 0, flags, remainingDataLength: remaining }, data));

  send(
    CLIENT,
    SERVER,
    emitNegotiateRequest({
      minVersion: VERSION,
      maxVersion: VERSION,
      creditsRequested: 255,
      preferredSendSize: 1364,
      maxReceiveSize: 8192,
      maxFragmentedSize: 1048576,
    }),
  );
  send(
    SERVER,
    CLIENT,
    emitNegotiateResponse({
      minVersion: VERSION,
      maxVersion: VERSION,
      negotiatedVersion: VERSION,
      creditsRequested: 255,
      creditsGranted: 255,
      status: 0,
      maxReadWriteSize: 1048576,
      preferredSendSize: 1364,
      maxReceiveSize: 8192,
      maxFragmentedSize: 1048576,
    }),
  );
  transfer(CLIENT, SERVER, smb2({ command: Smb2Command.NEGOTIATE, messageId: 0n }, negotiateBody(false, 1200 - 24 - 64)));
  const negRsp = smb2({ command: Smb2Command.NEGOTIATE, messageId: 0n, flags: SMB2_FLAGS_SERVER_TO_REDIR }, negotiateBody(true, 1200));
  transfer(SERVER, CLIENT, negRsp.subarray(0, 1000), negRsp.length - 1000);
  transfer(SERVER, CLIENT, negRsp.subarray(1000), 0);

  transfer(
    CLIENT,
    SERVER,
    smb2(
      { command: Smb2Command.WRITE, messageId: 5n },
      emitReadWriteRequest({ length: 2048, offset: 0n, channel: Smb2Channel.RDMA_V1, descriptors: [WRITE_BUF] }, true),
    ),
  );
  // The server reads the client's buffer: one READ request, two responses carrying its PSN and the next.
  const rd = next(SERVER);
  next(SERVER);
  frame(SERVER, CLIENT, {
    bth: { opcode: Opcode.RC_RDMA_READ_REQUEST, destQp: CLIENT.qpn, psn: rd, ackReq: true },
    reth: { va: WRITE_BUF.offset, rkey: WRITE_BUF.token, dmaLength: 2048 },
  });
  const aeth = { syndrome: encodeSyndrome(AethKind.ACK, 0x1f), msn: completed(CLIENT) };
  frame(CLIENT, SERVER, { bth: { opcode: Opcode.RC_RDMA_READ_RESPONSE_FIRST, destQp: SERVER.qpn, psn: rd }, aeth, payload: fileData(1, 1024) });
  frame(CLIENT, SERVER, { bth: { opcode: Opcode.RC_RDMA_READ_RESPONSE_LAST, destQp: SERVER.qpn, psn: (rd + 1) & 0xffffff }, aeth, payload: fileData(2, 1024) });
  transfer(SERVER, CLIENT, smb2({ command: Smb2Command.WRITE, messageId: 5n, flags: SMB2_FLAGS_SERVER_TO_REDIR }, emitWriteResponse(2048)));

  transfer(
    CLIENT,
    SERVER,
    smb2(
      { command: Smb2Command.READ, messageId: 6n },
      emitReadWriteRequest({ length: 1024, offset: 4096n, channel: Smb2Channel.RDMA_V1, descriptors: [READ_BUF] }, false),
    ),
  );
  const wr = next(SERVER);
  frame(SERVER, CLIENT, {
    bth: { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: CLIENT.qpn, psn: wr, ackReq: true },
    reth: { va: READ_BUF.offset, rkey: READ_BUF.token, dmaLength: 1024 },
    payload: fileData(3, 1024),
  });
  ack(CLIENT, SERVER, wr);
  transfer(SERVER, CLIENT, smb2({ command: Smb2Command.READ, messageId: 6n, flags: SMB2_FLAGS_SERVER_TO_REDIR }, emitReadResponse(1024)));

  transfer(CLIENT, SERVER, new Uint8Array(0), 0, SMB_DIRECT_RESPONSE_REQUESTED);

  // The second connection, with its CM exchange on QP 1.
  let gsiPsn = 0;
  const gsi = (from: Host, to: Host, mad: Uint8Array) =>
    frames.push(
      buildRoceV2Frame({
        eth: { src: from.mac, dst: to.mac },
        ip: { version: 4, src: from.ip, dst: to.ip },
        udp: { srcPort: GSI_SPORT },
        bth: { opcode: 0x64, destQp: 1, psn: gsiPsn++, ackReq: true },
        deth: { qkey: GSI_QKEY, srcQp: 1 },
        payload: mad,
      }),
    );
  const tid = 0x0000_0003_0000_0445n;
  const [commC, commS] = [0x1c2d3e4f, 0x5a6b7c8d];
  psn.set(CLIENT2, 0x2000);
  psn.set(SERVER2, 0x3000);
  const req = rxeStyleReq(cmEnd(CLIENT2), cmEnd(SERVER2), {
    commId: commC,
    serviceId: rdmaServiceId(PortSpace.TCP, SMBD_PORT),
    qpn: CLIENT2.qpn,
    // As rdma_cm fills it: a CM message's Starting PSN is the PSN its sender's receive queue expects
    // (cma.c rdma_init_qp_attr() sets rq_psn to it), the first PSN the other side sends.
    psn: 0x3000,
    flowLabel: 0,
    privateData: ipCmPrivateData(REQ_PRIVATE_DATA_LEN, CLIENT2.ip, SERVER2.ip, 49320),
  });
  gsi(CLIENT2, SERVER2, buildCmMad({ name: 'REQ', fields: req }, { transactionId: tid }));
  const rep = {
    localCommId: commS,
    remoteCommId: commC,
    localQkey: 0,
    localQpn: SERVER2.qpn,
    localEecn: 0,
    startingPsn: 0x2000,
    responderResources: 1,
    initiatorDepth: 1,
    targetAckDelay: 15,
    failoverAccepted: 0,
    endToEndFlowControl: true,
    rnrRetryCount: 7,
    srq: false,
    localCaGuid: cmEnd(SERVER2).guid,
    privateData: new Uint8Array(0),
  };
  gsi(SERVER2, CLIENT2, buildCmMad({ name: 'REP', fields: rep }, { transactionId: tid }));
  gsi(
    CLIENT2,
    SERVER2,
    buildCmMad({ name: 'RTU', fields: { localCommId: commC, remoteCommId: commS, privateData: new Uint8Array(0) } }, { transactionId: tid }),
  );
  send(
    CLIENT2,
    SERVER2,
    emitNegotiateRequest({
      minVersion: VERSION,
      maxVersion: VERSION,
      creditsRequested: 16,
      preferredSendSize: 1364,
      maxReceiveSize: 1364,
      maxFragmentedSize: 131072,
    }),
  );
  send(
    SERVER2,
    CLIENT2,
    emitNegotiateResponse({
      minVersion: VERSION,
      maxVersion: VERSION,
      negotiatedVersion: VERSION,
      creditsRequested: 16,
      creditsGranted: 16,
      status: 0,
      maxReadWriteSize: 65536,
      preferredSendSize: 1364,
      maxReceiveSize: 1364,
      maxFragmentedSize: 131072,
    }),
  );
  transfer(CLIENT2, SERVER2, smb2({ command: Smb2Command.SESSION_SETUP, messageId: 1n }, sessionSetupBody(false)));
  transfer(
    SERVER2,
    CLIENT2,
    smb2(
      { command: Smb2Command.SESSION_SETUP, messageId: 1n, flags: SMB2_FLAGS_SERVER_TO_REDIR, status: 0xc0000016, sessionId: 0x0000_4000_0000_0011n },
      sessionSetupBody(true),
    ),
  );

  // A compound: CREATE, QUERY_INFO and CLOSE of one file in one message, and the three responses in one.
  const sess = { sessionId: 0x0000_4000_0000_0011n, word36: 1 };
  transfer(
    CLIENT2,
    SERVER2,
    compound([
      { h: { command: Smb2Command.CREATE, messageId: 2n, ...sess }, body: createRequest('notes.txt') },
      { h: { command: Smb2Command.QUERY_INFO, messageId: 3n, ...sess }, body: queryInfoRequest() },
      { h: { command: Smb2Command.CLOSE, messageId: 4n, ...sess }, body: closeRequest() },
    ]),
  );
  const rsp = { ...sess, flags: SMB2_FLAGS_SERVER_TO_REDIR };
  transfer(
    SERVER2,
    CLIENT2,
    compound([
      { h: { command: Smb2Command.CREATE, messageId: 2n, ...rsp }, body: createResponse() },
      { h: { command: Smb2Command.QUERY_INFO, messageId: 3n, ...rsp }, body: queryInfoResponse() },
      { h: { command: Smb2Command.CLOSE, messageId: 4n, ...rsp }, body: closeResponse() },
    ]),
  );
  // A compound whose CREATE fails: the related CLOSE fails with the same status (MS-SMB2 §3.3.5.2.7.2).
  transfer(
    CLIENT2,
    SERVER2,
    compound([
      { h: { command: Smb2Command.CREATE, messageId: 5n, ...sess }, body: createRequest('missing.txt') },
      { h: { command: Smb2Command.CLOSE, messageId: 6n, ...sess }, body: closeRequest() },
    ]),
  );
  transfer(
    SERVER2,
    CLIENT2,
    compound([
      { h: { command: Smb2Command.CREATE, messageId: 5n, ...rsp, status: STATUS_OBJECT_NAME_NOT_FOUND }, body: errorResponse() },
      { h: { command: Smb2Command.CLOSE, messageId: 6n, ...rsp, status: STATUS_OBJECT_NAME_NOT_FOUND }, body: errorResponse() },
    ]),
  );

  return writePcap(frames.map((data, i) => ({ data, timestampNs: 1_700_000_000_000_000_000n + BigInt(i) * 10_000n })));
}
