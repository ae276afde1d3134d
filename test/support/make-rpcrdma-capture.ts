/**
 * captures/rpc-rdma.pcap: NFS over RPC-over-RDMA v1 (RFC 8166, RFC 8267) between a client
 * 198.18.0.1 and a server 198.18.0.2, built with the frame builder (RC, path MTU 1024, PSNs in
 * order, an ACK after each request message as rdma_rxe sends them):
 *
 * - conversation 1 (client QP 0x11, server QP 0x12), opened by an RDMA CM REQ to TCP port 20049
 *   (service ID 0x0000000001064e51), REP and RTU; then NFSv4.1 COMPOUNDs:
 *   (a) SEQUENCE PUTROOTFH GETFH inline both ways (RDMA_MSG);
 *   (b) SEQUENCE PUTFH READ with a write chunk: the server's RDMA WRITE of 2048 bytes, then the
 *       reply whose READ data is in the chunk;
 *   (c) SEQUENCE PUTFH WRITE whose 1500 bytes of data are in a read chunk at their XDR position:
 *       the server's RDMA READ of them, then the reply;
 *   (d) an RDMA_NOMSG call whose whole RPC message (1200 bytes) is in a position-zero read chunk,
 *       with a reply chunk: the server reads the call, writes the reply (1100 bytes) into the reply
 *       chunk and sends an RDMA_NOMSG reply;
 *   (e) an inline call in SEND FIRST + LAST (an NFSv3 WRITE of 1200 bytes), and its reply;
 *   (f) a call answered with RDMA_ERROR ERR_CHUNK;
 * - conversation 2 (client QP 0x13, server QP 0x14), whose CM was not captured: an NFSv3 GETATTR
 *   and an NFSv3 READ with a write chunk (an RDMA WRITE ONLY of 512 bytes), with their replies;
 * - conversation 3 (client QP 0x15, server QP 0x16), whose CM REQ and REP carry RFC 8797's private
 *   data (inline sizes, remote invalidation):
 *   (g) SEQUENCE PUTFH LOOKUP GETFH ACCESS GETATTR, every op answered;
 *   (h) SEQUENCE PUTFH REMOVE answered NFS4ERR_NOENT at REMOVE;
 *   (i) SEQUENCE PUTFH WRITE GETATTR whose 2001 bytes of data are in a read chunk at their XDR
 *       position, GETATTR after them inline: the server's RDMA READ, then the reply;
 *   (j) an NFSv3 LOOKUP answered NFS3ERR_NOENT;
 *   (k) an NFSv3 WRITE whose 1500 bytes are in a read chunk, and its reply.
 *
 * Deterministic: fixed timestamps and contents.
 */
import { buildRoceV2Frame, type TransportSpec } from '../../packets/build';
import { ipv6FromString, macFromString } from '../../packets/bytes';
import { Opcode } from '../../packets/opcodes';
import { AethKind, encodeSyndrome } from '../../packets/aeth';
import { GSI_QKEY } from '../../packets/mad';
import { buildCmMad } from '../../packets/mad-payload';
import type { CmMessage } from '../../packets/cm/message';
import { PortSpace, rdmaServiceId } from '../../packets/cm/service-id';
import { REQ_PRIVATE_DATA_LEN } from '../../packets/cm/req';
import { REP_PRIVATE_DATA_LEN } from '../../packets/cm/rep';
import { emitRpcRdmaCmPrivateData } from '../../ulp/rpc-rdma/cm-private-data';
import { ipCmPrivateData, rxeStyleReq, GSI_SPORT } from './make-cm-capture';
import type { Rec } from './make-captures';
import { RpcRdmaErrorCode, RpcRdmaProc, type RpcRdmaHeaderSpec, emitRpcRdmaHeader } from '../../ulp/rpc-rdma/rpcrdma-header';
import { XdrWriter, emitRpcCall, emitRpcReply } from '../../ulp/rpc-rdma/rpc-message';
import { Nfs4Op } from '../../ulp/rpc-rdma/nfs-names';
import { RPC_RDMA_PORT } from '../../ulp/rpc-rdma/rpcrdma-decoder';

/** rxe's UDP source port for a QP: 0xC000 + hash_32(qpn, 14) (rxe.h RXE_ROCE_V2_SPORT). */
const rxeSport = (qpn: number): number => 0xc000 + ((Math.imul(qpn, 0x61c88647) >>> 0) >>> 18);

/** 2024-01-15T12:00:00Z. */
const T0_NS = 1_705_320_000n * 1_000_000_000n;
const MTU = 1024;
const CREDITS = 128;

interface Host {
  mac: number;
  ip: string;
  guid: bigint;
  gid: Uint8Array;
  psn: number;
  ipId: number;
}

function host(mac: string, ip: string): Host {
  const m = macFromString(mac);
  const hi = Math.floor(m / 0x1000000) ^ 0x020000;
  return { mac: m, ip, guid: (BigInt(hi) << 40n) | (0xfffen << 24n) | BigInt(m % 0x1000000), gid: ipv6FromString(`::ffff:${ip}`), psn: 0, ipId: 0x4000 };
}

/** One side of an RC connection: its host, QP, and next PSN. */
interface QpSide {
  h: Host;
  qpn: number;
  psn: number;
  msn: number;
}

/** Bytes 0, 1, 2... of `n`, shifted by `seed`: recognisable data. */
const pattern = (n: number, seed: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff);

export function rpcRdmaCapture(): Rec[] {
  const out: Rec[] = [];
  let ns = T0_NS;
  const put = (us: number, data: Uint8Array): void => {
    ns += BigInt(Math.round(us * 1000));
    out.push({ data, timestampNs: ns });
  };
  const A = host('02:00:c6:12:00:01', '198.18.0.1');
  const B = host('02:00:c6:12:00:02', '198.18.0.2');
  const rc = (from: QpSide, to: QpSide, t: TransportSpec): Uint8Array =>
    buildRoceV2Frame({
      eth: { src: from.h.mac, dst: to.h.mac },
      ip: { version: 4, src: from.h.ip, dst: to.h.ip, ttl: 64, dontFragment: true, identification: from.h.ipId++, ecn: 2 },
      udp: { srcPort: rxeSport(from.qpn), dstPort: 4791, checksum: 0 },
      ...t,
    });
  const gsi = (from: Host, to: Host, m: CmMessage, tid: bigint): Uint8Array =>
    buildRoceV2Frame({
      eth: { src: from.mac, dst: to.mac },
      ip: { version: 4, src: from.ip, dst: to.ip, ttl: 64, dontFragment: true, identification: from.ipId++ },
      udp: { srcPort: GSI_SPORT, dstPort: 4791, checksum: 0 },
      bth: { opcode: Opcode.UD_SEND_ONLY, destQp: 1, psn: from.psn++, ackReq: true, pkey: 0xffff },
      deth: { qkey: GSI_QKEY, srcQp: 1 },
      payload: buildCmMad(m, { transactionId: tid }),
    });
  const ack = (from: QpSide, to: QpSide, psn: number): void =>
    put(
      3.1,
      rc(from, to, { bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: to.qpn, psn }, aeth: { syndrome: encodeSyndrome(AethKind.ACK, 31), msn: from.msn } }),
    );
  /** A SEND of `msg` in packets of at most MTU bytes, then the peer's ACK. */
  const send = (from: QpSide, to: QpSide, msg: Uint8Array): void => {
    const n = Math.max(1, Math.ceil(msg.length / MTU));
    for (let i = 0; i < n; i++) {
      const opcode = n === 1 ? Opcode.RC_SEND_ONLY : i === 0 ? Opcode.RC_SEND_FIRST : i === n - 1 ? Opcode.RC_SEND_LAST : Opcode.RC_SEND_MIDDLE;
      put(
        i === 0 ? 40 : 1.2,
        rc(from, to, { bth: { opcode, destQp: to.qpn, psn: from.psn, ackReq: i === n - 1 }, payload: msg.subarray(i * MTU, (i + 1) * MTU) }),
      );
      from.psn = (from.psn + 1) & 0xffffff;
    }
    to.msn++;
    ack(to, from, (from.psn - 1) & 0xffffff);
  };
  /** An RDMA WRITE of `data` to `handle` at `va`, then the peer's ACK. */
  const write = (from: QpSide, to: QpSide, handle: number, va: bigint, data: Uint8Array): void => {
    const n = Math.max(1, Math.ceil(data.length / MTU));
    for (let i = 0; i < n; i++) {
      const opcode =
        n === 1 ? Opcode.RC_RDMA_WRITE_ONLY : i === 0 ? Opcode.RC_RDMA_WRITE_FIRST : i === n - 1 ? Opcode.RC_RDMA_WRITE_LAST : Opcode.RC_RDMA_WRITE_MIDDLE;
      const reth = i === 0 ? { va, rkey: handle, dmaLength: data.length } : undefined;
      put(
        i === 0 ? 12 : 1.2,
        rc(from, to, { bth: { opcode, destQp: to.qpn, psn: from.psn, ackReq: i === n - 1 }, reth, payload: data.subarray(i * MTU, (i + 1) * MTU) }),
      );
      from.psn = (from.psn + 1) & 0xffffff;
    }
    // A WRITE is a request message too: its responder's MSN counts it (IBTA §9.7.5.1.2).
    to.msn++;
    ack(to, from, (from.psn - 1) & 0xffffff);
  };
  /** `reader` reads `data` from `owner`'s memory at `handle`: the request, then the responses (they acknowledge it). */
  const read = (reader: QpSide, owner: QpSide, handle: number, va: bigint, data: Uint8Array): void => {
    const first = reader.psn;
    put(
      12,
      rc(reader, owner, {
        bth: { opcode: Opcode.RC_RDMA_READ_REQUEST, destQp: owner.qpn, psn: first, ackReq: true },
        reth: { va, rkey: handle, dmaLength: data.length },
      }),
    );
    const n = Math.max(1, Math.ceil(data.length / MTU));
    reader.psn = (reader.psn + n) & 0xffffff;
    owner.msn++;
    for (let i = 0; i < n; i++) {
      const opcode =
        n === 1
          ? Opcode.RC_RDMA_READ_RESPONSE_ONLY
          : i === 0
            ? Opcode.RC_RDMA_READ_RESPONSE_FIRST
            : i === n - 1
              ? Opcode.RC_RDMA_READ_RESPONSE_LAST
              : Opcode.RC_RDMA_READ_RESPONSE_MIDDLE;
      const aeth = i === 0 || i === n - 1 ? { syndrome: encodeSyndrome(AethKind.ACK, 31), msn: owner.msn } : undefined;
      put(
        i === 0 ? 6 : 1.2,
        rc(owner, reader, { bth: { opcode, destQp: reader.qpn, psn: (first + i) & 0xffffff }, aeth, payload: data.subarray(i * MTU, (i + 1) * MTU) }),
      );
    }
  };
  const msg = (h: RpcRdmaHeaderSpec, rpc: Uint8Array = new Uint8Array(0)): Uint8Array => {
    const head = emitRpcRdmaHeader(h);
    const b = new Uint8Array(head.length + rpc.length);
    b.set(head);
    b.set(rpc, head.length);
    return b;
  };
  const sessionId = pattern(16, 0x5e);
  const seqArgs = (seq: number) => new XdrWriter().u32(Nfs4Op.SEQUENCE).bytes(sessionId).u32(seq, 0, 0, 1);
  const seqRes = (seq: number) => new XdrWriter().u32(Nfs4Op.SEQUENCE, 0).bytes(sessionId).u32(seq, 0, 63, 63, 0);
  const fh = pattern(28, 0xf0);
  const v4call = (ops: XdrWriter, n: number, tag = '') => new XdrWriter().opaque(new TextEncoder().encode(tag)).u32(1, n).bytes(ops.done());
  const v4reply = (res: XdrWriter, n: number) => new XdrWriter().u32(0).opaque(new Uint8Array(0)).u32(n).bytes(res.done()).done();
  const auth = new XdrWriter().u32(0x65b8a1c0).opaque(new TextEncoder().encode('client1')).u32(0, 0, 0).done();
  const nfs4 = { prog: 100003, vers: 4, proc: 1, credFlavor: 1 };

  // Conversation 1: the CM exchange to port 20049.
  const c1: QpSide = { h: A, qpn: 0x11, psn: 0x3a1f00, msn: 0 };
  const s1: QpSide = { h: B, qpn: 0x12, psn: 0x7c0200, msn: 0 };
  const tid = 0x00000003_4e510001n;
  const req = rxeStyleReq(A, B, {
    commId: 0x1d2e3f40,
    serviceId: rdmaServiceId(PortSpace.TCP, RPC_RDMA_PORT),
    qpn: c1.qpn,
    // As rdma_cm fills it: a CM message's Starting PSN is the PSN its sender's receive queue expects
    // (cma.c rdma_init_qp_attr() sets rq_psn to it), the first PSN the other side sends.
    psn: s1.psn,
    flowLabel: 0,
    privateData: ipCmPrivateData(REQ_PRIVATE_DATA_LEN, A.ip, B.ip, 889),
  });
  put(0, gsi(A, B, { name: 'REQ', fields: req }, tid));
  const zeros = new Uint8Array(0);
  put(
    210.5,
    gsi(
      B,
      A,
      {
        name: 'REP',
        fields: {
          localCommId: 0x61728394,
          remoteCommId: 0x1d2e3f40,
          localQkey: 0,
          localQpn: s1.qpn,
          localEecn: 0,
          startingPsn: c1.psn,
          responderResources: 1,
          initiatorDepth: 1,
          targetAckDelay: 15,
          failoverAccepted: 0,
          endToEndFlowControl: true,
          rnrRetryCount: 7,
          srq: false,
          localCaGuid: B.guid,
          privateData: zeros,
        },
      },
      tid,
    ),
  );
  put(180.2, gsi(A, B, { name: 'RTU', fields: { localCommId: 0x1d2e3f40, remoteCommId: 0x61728394, privateData: zeros } }, tid));

  // (a) SEQUENCE PUTROOTFH GETFH.
  let xid = 0x8a9b0001;
  send(
    c1,
    s1,
    msg({ xid, credits: CREDITS, proc: RpcRdmaProc.MSG }, emitRpcCall(xid, nfs4, v4call(seqArgs(1).u32(Nfs4Op.PUTROOTFH, Nfs4Op.GETFH), 3).done(), auth)),
  );
  send(
    s1,
    c1,
    msg({ xid, credits: CREDITS, proc: RpcRdmaProc.MSG }, emitRpcReply(xid, {}, v4reply(seqRes(1).u32(Nfs4Op.PUTROOTFH, 0, Nfs4Op.GETFH, 0).opaque(fh), 3))),
  );

  // (b) SEQUENCE PUTFH READ, the data in a write chunk.
  xid++;
  const readData = pattern(2048, 0x11);
  const wc = { handle: 0x0000a101, length: 2048, offset: 0x7f3a_c000_1000n };
  send(
    c1,
    s1,
    msg(
      { xid, credits: CREDITS, proc: RpcRdmaProc.MSG, writeList: [[wc]] },
      emitRpcCall(xid, nfs4, v4call(seqArgs(2).u32(Nfs4Op.PUTFH).opaque(fh).u32(Nfs4Op.READ).bytes(new Uint8Array(16)).u64(0n).u32(2048), 3).done(), auth),
    ),
  );
  write(s1, c1, wc.handle, wc.offset, readData);
  send(
    s1,
    c1,
    msg(
      { xid, credits: CREDITS, proc: RpcRdmaProc.MSG, writeList: [[wc]] },
      emitRpcReply(xid, {}, v4reply(seqRes(2).u32(Nfs4Op.PUTFH, 0, Nfs4Op.READ, 0, 1).opaque(readData, true), 3)),
    ),
  );

  // (c) SEQUENCE PUTFH WRITE, the data in a read chunk at its XDR position.
  xid++;
  const writeData = pattern(1500, 0x22);
  const head = emitRpcCall(
    xid,
    nfs4,
    v4call(seqArgs(3).u32(Nfs4Op.PUTFH).opaque(fh).u32(Nfs4Op.WRITE).bytes(new Uint8Array(16)).u64(4096n).u32(2).u32(writeData.length), 3).done(),
    auth,
  );
  const rs = { position: head.length, handle: 0x0000b202, length: writeData.length, offset: 0x7f3a_c000_8000n };
  send(c1, s1, msg({ xid, credits: CREDITS, proc: RpcRdmaProc.MSG, readList: [rs] }, head));
  read(s1, c1, rs.handle, rs.offset, writeData);
  send(
    s1,
    c1,
    msg(
      { xid, credits: CREDITS, proc: RpcRdmaProc.MSG },
      emitRpcReply(xid, {}, v4reply(seqRes(3).u32(Nfs4Op.PUTFH, 0, Nfs4Op.WRITE, 0, 1500, 2).bytes(pattern(8, 0x33)), 3)),
    ),
  );

  // (d) RDMA_NOMSG: the call in a position-zero read chunk, the reply in a reply chunk.
  xid++;
  const bigCall = emitRpcCall(
    xid,
    nfs4,
    v4call(seqArgs(4).u32(Nfs4Op.PUTFH).opaque(fh).u32(Nfs4Op.GETATTR, 2, 0x0010011a, 0x00b0a23a), 3, 'x'.repeat(1000)).done(),
    auth,
  );
  const pz = { position: 0, handle: 0x0000c303, length: bigCall.length, offset: 0x7f3a_c001_0000n };
  const rc4 = { handle: 0x0000d404, length: 4096, offset: 0x7f3a_c002_0000n };
  send(c1, s1, msg({ xid, credits: CREDITS, proc: RpcRdmaProc.NOMSG, readList: [pz], replyChunk: [rc4] }));
  read(s1, c1, pz.handle, pz.offset, bigCall);
  const bigReply = emitRpcReply(xid, {}, v4reply(seqRes(4).u32(Nfs4Op.PUTFH, 0, Nfs4Op.GETATTR, 0, 2, 0x0010011a, 0x00b0a23a).opaque(pattern(1000, 0x44)), 3));
  write(s1, c1, rc4.handle, rc4.offset, bigReply);
  send(s1, c1, msg({ xid, credits: CREDITS, proc: RpcRdmaProc.NOMSG, replyChunk: [{ ...rc4, length: bigReply.length }] }));

  // (e) An NFSv3 WRITE of 1200 bytes inline: SEND FIRST + LAST.
  xid++;
  const v3 = (proc: number) => ({ prog: 100003, vers: 3, proc, credFlavor: 1 });
  const fh3 = new XdrWriter().opaque(pattern(32, 0x77));
  const wr = new XdrWriter().bytes(fh3.done()).u64(0n).u32(1200, 0).opaque(pattern(1200, 0x55)).done();
  send(c1, s1, msg({ xid, credits: CREDITS, proc: RpcRdmaProc.MSG }, emitRpcCall(xid, v3(7), wr, auth)));
  send(
    s1,
    c1,
    msg({ xid, credits: CREDITS, proc: RpcRdmaProc.MSG }, emitRpcReply(xid, {}, new XdrWriter().u32(0, 0, 0, 1200, 0).bytes(pattern(8, 0x66)).done())),
  );

  // (f) A call the server cannot take: RDMA_ERROR ERR_CHUNK.
  xid++;
  send(c1, s1, msg({ xid, credits: CREDITS, proc: RpcRdmaProc.MSG }, emitRpcCall(xid, v3(1), fh3.done(), auth)));
  send(s1, c1, msg({ xid, credits: CREDITS, proc: RpcRdmaProc.ERROR, errorCode: RpcRdmaErrorCode.ERR_CHUNK }));

  // Conversation 2, its CM not captured: NFSv3 GETATTR, then READ with a write chunk.
  const c2: QpSide = { h: A, qpn: 0x13, psn: 0x1b0000, msn: 0 };
  const s2: QpSide = { h: B, qpn: 0x14, psn: 0x2c0000, msn: 0 };
  xid = 0x3c4d0001;
  send(c2, s2, msg({ xid, credits: 32, proc: RpcRdmaProc.MSG }, emitRpcCall(xid, v3(1), fh3.done(), auth)));
  send(s2, c2, msg({ xid, credits: 32, proc: RpcRdmaProc.MSG }, emitRpcReply(xid, {}, new XdrWriter().u32(0, 1, 0o644, 1, 0, 0).u64(512n).done())));
  xid++;
  const wc2 = { handle: 0x0000e505, length: 512, offset: 0x7f11_0000_2000n };
  send(
    c2,
    s2,
    msg(
      { xid, credits: 32, proc: RpcRdmaProc.MSG, writeList: [[wc2]] },
      emitRpcCall(xid, v3(6), new XdrWriter().bytes(fh3.done()).u64(0n).u32(512).done(), auth),
    ),
  );
  write(s2, c2, wc2.handle, wc2.offset, pattern(512, 0x99));
  send(
    s2,
    c2,
    msg(
      { xid, credits: 32, proc: RpcRdmaProc.MSG, writeList: [[wc2]] },
      emitRpcReply(xid, {}, new XdrWriter().u32(0, 0, 512, 1).opaque(pattern(512, 0x99), true).done()),
    ),
  );

  // Conversation 3 (client QP 0x15, server QP 0x16): a CM exchange whose REQ and REP carry RFC 8797's private data.
  const c3: QpSide = { h: A, qpn: 0x15, psn: 0x4d0000, msn: 0 };
  const s3: QpSide = { h: B, qpn: 0x16, psn: 0x5e0000, msn: 0 };
  const tid3 = 0x00000003_4e510003n;
  const req3 = rxeStyleReq(A, B, {
    commId: 0x2e3f4051,
    serviceId: rdmaServiceId(PortSpace.TCP, RPC_RDMA_PORT),
    qpn: c3.qpn,
    psn: s3.psn,
    flowLabel: 0,
    privateData: ipCmPrivateData(
      REQ_PRIVATE_DATA_LEN,
      A.ip,
      B.ip,
      890,
      emitRpcRdmaCmPrivateData({ remoteInvalidate: true, sendSize: 4096, receiveSize: 4096 }),
    ),
  });
  put(900, gsi(A, B, { name: 'REQ', fields: req3 }, tid3));
  const repPd = new Uint8Array(REP_PRIVATE_DATA_LEN);
  repPd.set(emitRpcRdmaCmPrivateData({ remoteInvalidate: true, sendSize: 4096, receiveSize: 8192 }));
  put(
    190.5,
    gsi(
      B,
      A,
      {
        name: 'REP',
        fields: {
          localCommId: 0x728394a5,
          remoteCommId: 0x2e3f4051,
          localQkey: 0,
          localQpn: s3.qpn,
          localEecn: 0,
          startingPsn: c3.psn,
          responderResources: 1,
          initiatorDepth: 1,
          targetAckDelay: 15,
          failoverAccepted: 0,
          endToEndFlowControl: true,
          rnrRetryCount: 7,
          srq: false,
          localCaGuid: B.guid,
          privateData: repPd,
        },
      },
      tid3,
    ),
  );
  put(170.4, gsi(A, B, { name: 'RTU', fields: { localCommId: 0x2e3f4051, remoteCommId: 0x728394a5, privateData: zeros } }, tid3));

  // (g) SEQUENCE PUTFH LOOKUP GETFH ACCESS GETATTR: the key arguments of each op, every op's result.
  xid = 0x5e6f0001;
  // GETATTR of the size alone (FATTR4_SIZE, attribute 4): its value is one uint64.
  const attrs = (w: XdrWriter) => w.u32(1, 1 << 4);
  const sizeAttr = (n: bigint) => new XdrWriter().u64(n).done();
  send(
    c3,
    s3,
    msg(
      { xid, credits: CREDITS, proc: RpcRdmaProc.MSG },
      emitRpcCall(
        xid,
        nfs4,
        v4call(
          attrs(
            seqArgs(5)
              .u32(Nfs4Op.PUTFH)
              .opaque(fh)
              .u32(Nfs4Op.LOOKUP)
              .opaque(new TextEncoder().encode('notes.txt'))
              .u32(Nfs4Op.GETFH, Nfs4Op.ACCESS, 0x1f, Nfs4Op.GETATTR),
          ),
          6,
        ).done(),
        auth,
      ),
    ),
  );
  send(
    s3,
    c3,
    msg(
      { xid, credits: CREDITS, proc: RpcRdmaProc.MSG },
      emitRpcReply(
        xid,
        {},
        v4reply(
          attrs(
            seqRes(5).u32(Nfs4Op.PUTFH, 0, Nfs4Op.LOOKUP, 0, Nfs4Op.GETFH, 0).opaque(pattern(28, 0xe0)).u32(Nfs4Op.ACCESS, 0, 0x1f, 0x0f, Nfs4Op.GETATTR, 0),
          ).opaque(sizeAttr(4096n)),
          6,
        ),
      ),
    ),
  );

  // (h) SEQUENCE PUTFH REMOVE of a name that is not there: the COMPOUND stops at REMOVE, NFS4ERR_NOENT.
  xid++;
  send(
    c3,
    s3,
    msg(
      { xid, credits: CREDITS, proc: RpcRdmaProc.MSG },
      emitRpcCall(xid, nfs4, v4call(seqArgs(6).u32(Nfs4Op.PUTFH).opaque(fh).u32(Nfs4Op.REMOVE).opaque(new TextEncoder().encode('gone.txt')), 3).done(), auth),
    ),
  );
  send(
    s3,
    c3,
    msg(
      { xid, credits: CREDITS, proc: RpcRdmaProc.MSG },
      emitRpcReply(
        xid,
        {},
        new XdrWriter()
          .u32(2)
          .opaque(new Uint8Array(0))
          .u32(3)
          .bytes(seqRes(6).u32(Nfs4Op.PUTFH, 0, Nfs4Op.REMOVE, 2).done())
          .done(),
      ),
    ),
  );

  // (i) SEQUENCE PUTFH WRITE GETATTR: WRITE's 2001 bytes (not a multiple of 4) in a read chunk at
  // their XDR position, GETATTR inline after them. The chunk holds no XDR roundup (RFC 8166 §3.4.5).
  xid++;
  const oddData = pattern(2001, 0x3c);
  const writeOps = seqArgs(7).u32(Nfs4Op.PUTFH).opaque(fh).u32(Nfs4Op.WRITE).bytes(new Uint8Array(16)).u64(0n).u32(2).opaque(oddData, true);
  const upToData = emitRpcCall(xid, nfs4, v4call(writeOps, 4).done(), auth);
  const withGetattr = emitRpcCall(xid, nfs4, v4call(attrs(writeOps.u32(Nfs4Op.GETATTR)), 4).done(), auth);
  const rs3 = { position: upToData.length, handle: 0x0000f606, length: oddData.length, offset: 0x7f3a_c003_0000n };
  send(c3, s3, msg({ xid, credits: CREDITS, proc: RpcRdmaProc.MSG, readList: [rs3] }, withGetattr));
  read(s3, c3, rs3.handle, rs3.offset, oddData);
  send(
    s3,
    c3,
    msg(
      { xid, credits: CREDITS, proc: RpcRdmaProc.MSG },
      emitRpcReply(
        xid,
        {},
        v4reply(
          attrs(seqRes(7).u32(Nfs4Op.PUTFH, 0, Nfs4Op.WRITE, 0, oddData.length, 2).bytes(pattern(8, 0x33)).u32(Nfs4Op.GETATTR, 0)).opaque(sizeAttr(2001n)),
          4,
        ),
      ),
    ),
  );

  // (j) NFSv3 LOOKUP answered NFS3ERR_NOENT (its post-op attributes absent).
  xid++;
  send(
    c3,
    s3,
    msg(
      { xid, credits: CREDITS, proc: RpcRdmaProc.MSG },
      emitRpcCall(xid, v3(3), new XdrWriter().bytes(fh3.done()).opaque(new TextEncoder().encode('missing')).done(), auth),
    ),
  );
  send(s3, c3, msg({ xid, credits: CREDITS, proc: RpcRdmaProc.MSG }, emitRpcReply(xid, {}, new XdrWriter().u32(2, 0).done())));

  // (k) NFSv3 WRITE of 1500 bytes in a read chunk at their XDR position.
  xid++;
  const v3Data = pattern(1500, 0x5a);
  const v3Args = new XdrWriter().bytes(fh3.done()).u64(8192n).u32(v3Data.length, 2).opaque(v3Data, true).done();
  const v3Call = emitRpcCall(xid, v3(7), v3Args, auth);
  const rs4 = { position: v3Call.length, handle: 0x0000f707, length: v3Data.length, offset: 0x7f3a_c004_0000n };
  send(c3, s3, msg({ xid, credits: CREDITS, proc: RpcRdmaProc.MSG, readList: [rs4] }, v3Call));
  read(s3, c3, rs4.handle, rs4.offset, v3Data);
  send(
    s3,
    c3,
    msg({ xid, credits: CREDITS, proc: RpcRdmaProc.MSG }, emitRpcReply(xid, {}, new XdrWriter().u32(0, 0, 0, v3Data.length, 2).bytes(pattern(8, 0x66)).done())),
  );
  return out;
}
