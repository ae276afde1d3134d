/**
 * captures/cm-exchanges.pcap: RDMA CM conversations over RoCE v2, one frame per
 * CM MAD, built with the CM emitters (packets/cm/*) and the frame builder.
 *
 * Every MAD travels as rdma_rxe sends it (captures/rxe/*.pcap): UD SEND ONLY to
 * QP 1, AckReq, P_Key 0xffff, DETH Q_Key 0x80010000 and source QP 1, BTH PSNs
 * counting from 0 per sender, one UDP source port for both directions (rxe's
 * port for QP 1, 55410). Field values imitate what the kernel's cm.c/cma.c put
 * in them (timeouts 20 and 19, retries 7 and 15, path MTU 1024, GUIDs from the
 * MACs, IP CM private data with the IPv4 address in its last 4 bytes).
 *
 *   1-6   rping-like connection 198.18.0.1 → 198.18.0.2, TCP port space port 20000:
 *         REQ, MRA (of the REQ), REP, RTU, then DREQ, DREP
 *   7-8   perftest-like REQ over IPv6 (fd00::1 → fd00::2, port 18515, flow label 0x5a3c7),
 *         REJ with reason 28 (consumer reject) and private data
 *   9-10  udaddy-like SIDR_REQ (UDP port space, port 7174) and SIDR_REP (QPN 0x13, Q_Key 0x01234567)
 *   11-12 LAP and APR on the first connection
 *   13-14 ClassPortInfo Get and GetResp (class CM, attribute 0x0001: no CM message)
 */
import { buildRoceV2Frame, type Ipv4Spec, type Ipv6Spec } from '../../packets/build';
import { macFromString, ipv6FromString } from '../../packets/bytes';
import { GSI_QKEY, MadMethod, MAD_LEN, CmAttr, MgmtClass, CM_CLASS_VERSION, emitMadHeader } from '../../packets/mad';
import { buildCmMad } from '../../packets/mad-payload';
import type { CmMessage } from '../../packets/cm/message';
import type { CmReq } from '../../packets/cm/req';
import { PortSpace, rdmaServiceId } from '../../packets/cm/service-id';
import { CMA_VERSION, IP_CM_HEADER_LEN, emitIpCmPrivateData, ipCmAddressFromString } from '../../packets/cm/ip-private-data';
import { RejReason } from '../../packets/cm/rej';
import { REQ_PRIVATE_DATA_LEN } from '../../packets/cm/req';
import { SIDR_REQ_PRIVATE_DATA_LEN } from '../../packets/cm/sidr-req';
import type { Rec } from './make-captures';

/** rdma_rxe's UDP source port for QP 1 (0xC000 + hash_32(1, 14)), as seen in captures/rxe. */
export const GSI_SPORT = 0xd872;
/** 2024-01-15T12:00:00Z plus one hour: after the other generated captures. */
const T0_NS = 1_705_323_600n * 1_000_000_000n;

interface End {
  mac: number;
  ip: string;
  /** EUI-64 of the MAC (U/L bit flipped, ff:fe in the middle), as rxe makes its node GUID. */
  guid: bigint;
  /** The GID: the IPv4-mapped IPv6 address, or the IPv6 address. */
  gid: Uint8Array;
  psn: number;
  ipId: number;
}

function end(mac: string, ip: string): End {
  const m = macFromString(mac);
  const hi = Math.floor(m / 0x1000000) ^ 0x020000;
  const guid = (BigInt(hi) << 40n) | (0xfffen << 24n) | BigInt(m % 0x1000000);
  const gid = ip.includes(':') ? ipv6FromString(ip) : ipv6FromString(`::ffff:${ip}`);
  return { mac: m, ip, guid, gid, psn: 0, ipId: 0x4000 };
}

/** The UD SEND ONLY to QP 1 carrying `mad`, from `a` to `b`. */
function gsiFrame(a: End, b: End, mad: Uint8Array, flowLabel = 0): Uint8Array {
  const ip: Ipv4Spec | Ipv6Spec = a.ip.includes(':')
    ? { version: 6, src: a.ip, dst: b.ip, flowLabel, hopLimit: 64 }
    : { version: 4, src: a.ip, dst: b.ip, ttl: 64, dontFragment: true, identification: a.ipId++ };
  return buildRoceV2Frame({
    eth: { src: a.mac, dst: b.mac },
    ip,
    udp: { srcPort: GSI_SPORT, dstPort: 4791, checksum: 0 },
    bth: { opcode: 0x64, destQp: 1, psn: a.psn++, ackReq: true, pkey: 0xffff },
    deth: { qkey: GSI_QKEY, srcQp: 1 },
    payload: mad,
  });
}

/** The private data of a REQ or SIDR_REQ to an RDMA IP CM service: the IP CM header, then `consumer`. */
export function ipCmPrivateData(len: number, src: string, dst: string, srcPort: number, consumer: Uint8Array = new Uint8Array(0)): Uint8Array {
  const out = new Uint8Array(len);
  const s = ipCmAddressFromString(src);
  const d = ipCmAddressFromString(dst);
  emitIpCmPrivateData(
    { majorVersion: CMA_VERSION >> 4, minorVersion: CMA_VERSION & 0xf, ipVersion: s.ipVersion, reserved: 0, srcPort, srcAddr: s.addr, dstAddr: d.addr },
    new DataView(out.buffer),
    0,
  );
  out.set(consumer, IP_CM_HEADER_LEN);
  return out;
}

const zeros = (n: number): Uint8Array => new Uint8Array(n);
const text = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A REQ as the kernel's cm.c fills it for an RC QP on RoCE (rping's values). */
export function rxeStyleReq(
  a: End,
  b: End,
  o: { commId: number; serviceId: bigint; qpn: number; psn: number; flowLabel: number; privateData: Uint8Array },
): CmReq {
  return {
    localCommId: o.commId,
    serviceId: o.serviceId,
    localCaGuid: a.guid,
    localQkey: 0,
    localQpn: o.qpn,
    responderResources: 1,
    localEecn: 0,
    initiatorDepth: 1,
    remoteEecn: 0,
    remoteCmResponseTimeout: 20,
    transportServiceType: 0,
    endToEndFlowControl: false,
    startingPsn: o.psn,
    localCmResponseTimeout: 20,
    retryCount: 7,
    pkey: 0xffff,
    pathMtu: 3,
    rdcExists: false,
    rnrRetryCount: 7,
    maxCmRetries: 15,
    srq: false,
    extendedTransportType: 0,
    primaryLocalLid: 0xffff,
    primaryRemoteLid: 0xffff,
    primaryLocalGid: a.gid,
    primaryRemoteGid: b.gid,
    primaryFlowLabel: o.flowLabel,
    primaryPacketRate: 0,
    primaryTrafficClass: 0,
    primaryHopLimit: 64,
    primarySl: 0,
    primarySubnetLocal: false,
    primaryLocalAckTimeout: 19,
    alternateLocalLid: 0,
    alternateRemoteLid: 0,
    alternateLocalGid: zeros(16),
    alternateRemoteGid: zeros(16),
    alternateFlowLabel: 0,
    alternatePacketRate: 0,
    alternateTrafficClass: 0,
    alternateHopLimit: 0,
    alternateSl: 0,
    alternateSubnetLocal: false,
    alternateLocalAckTimeout: 0,
    sapSupported: false,
    privateData: o.privateData,
  };
}

/** Every frame of captures/cm-exchanges.pcap. */
export function cmExchanges(): Rec[] {
  const out: Rec[] = [];
  let ns = T0_NS;
  const put = (us: number, data: Uint8Array): void => {
    ns += BigInt(Math.round(us * 1000));
    out.push({ data, timestampNs: ns });
  };
  const A = end('02:00:c6:12:00:01', '198.18.0.1');
  const B = end('02:00:c6:12:00:02', '198.18.0.2');
  const send = (from: End, to: End, m: CmMessage, tid: bigint, us: number, flowLabel = 0): void => {
    put(us, gsiFrame(from, to, buildCmMad(m, { transactionId: tid }), flowLabel));
  };

  // 1-6: a connection to TCP port 20000 and its teardown.
  const tid1 = 0x00000002_555bbcabn;
  const commA = 0x770f9bfe;
  const commB = 0x3c1d52a4;
  const svc1 = rdmaServiceId(PortSpace.TCP, 20000);
  const req1 = rxeStyleReq(A, B, {
    commId: commA,
    serviceId: svc1,
    qpn: 0x11,
    psn: 0x2f1a00,
    flowLabel: 0x4580d,
    privateData: ipCmPrivateData(REQ_PRIVATE_DATA_LEN, A.ip, B.ip, 42777, text('rping')),
  });
  send(A, B, { name: 'REQ', fields: req1 }, tid1, 0);
  send(B, A, { name: 'MRA', fields: { localCommId: commB, remoteCommId: commA, messageMraed: 0, serviceTimeout: 23, privateData: zeros(0) } }, tid1, 180.5);
  const rep = {
    localCommId: commB,
    remoteCommId: commA,
    localQkey: 0,
    localQpn: 0x12,
    localEecn: 0,
    startingPsn: 0x7a1b2c,
    responderResources: 1,
    initiatorDepth: 1,
  };
  send(
    B,
    A,
    {
      name: 'REP',
      fields: {
        ...rep,
        targetAckDelay: 15,
        failoverAccepted: 0,
        endToEndFlowControl: true,
        rnrRetryCount: 7,
        srq: false,
        localCaGuid: B.guid,
        privateData: zeros(0),
      },
    },
    tid1,
    2210.4,
  );
  send(A, B, { name: 'RTU', fields: { localCommId: commA, remoteCommId: commB, privateData: zeros(0) } }, tid1, 305.2);
  const tid2 = 0x00000002_555bbcacn;
  send(A, B, { name: 'DREQ', fields: { localCommId: commA, remoteCommId: commB, remoteQpnEecn: 0x12, privateData: zeros(0) } }, tid2, 1_500_000);
  send(B, A, { name: 'DREP', fields: { localCommId: commB, remoteCommId: commA, privateData: zeros(0) } }, tid2, 410.9);

  // 7-8: an IPv6 REQ (perftest's port) refused by the consumer.
  const C = end('02:00:fd:00:00:01', 'fd00::1');
  const D = end('02:00:fd:00:00:02', 'fd00::2');
  const tid3 = 0x00000005_0a0b0c0dn;
  const commC = 0x0badf00d;
  const req2 = rxeStyleReq(C, D, {
    commId: commC,
    serviceId: rdmaServiceId(PortSpace.TCP, 18515),
    qpn: 0x21,
    psn: 0x00abcd,
    flowLabel: 0x5a3c7,
    privateData: ipCmPrivateData(REQ_PRIVATE_DATA_LEN, C.ip, D.ip, 51000),
  });
  send(C, D, { name: 'REQ', fields: req2 }, tid3, 250_000, 0x5a3c7);
  const rejPd = text('server busy');
  send(
    D,
    C,
    {
      name: 'REJ',
      fields: {
        localCommId: 0x51e2d3c4,
        remoteCommId: commC,
        messageRejected: 0,
        rejectedInfoLength: 0,
        reason: RejReason.CONSUMER_DEFINED,
        ari: zeros(0),
        privateData: rejPd,
      },
    },
    tid3,
    640.0,
    0xb1e02,
  );

  // 9-10: service ID resolution for a UDP port.
  const tid4 = 0x00000002_555bbcadn;
  const svcUdp = rdmaServiceId(PortSpace.UDP, 7174);
  send(
    A,
    B,
    {
      name: 'SIDR_REQ',
      fields: { requestId: 0x6520f457, pkey: 0xffff, serviceId: svcUdp, privateData: ipCmPrivateData(SIDR_REQ_PRIVATE_DATA_LEN, A.ip, B.ip, 33012) },
    },
    tid4,
    300_000,
  );
  send(
    B,
    A,
    {
      name: 'SIDR_REP',
      fields: {
        requestId: 0x6520f457,
        status: 0,
        additionalInfoLength: 0,
        qpn: 0x13,
        serviceId: svcUdp,
        qkey: 0x01234567,
        additionalInfo: zeros(0),
        privateData: zeros(0),
      },
    },
    tid4,
    512.3,
  );

  // 11-12: load an alternate path, and the answer.
  const tid5 = 0x00000002_555bbcaen;
  const lap = {
    localCommId: commA,
    remoteCommId: commB,
    remoteQpnEecn: 0x12,
    remoteCmResponseTimeout: 20,
    alternateLocalLid: 0xffff,
    alternateRemoteLid: 0xffff,
    alternateLocalGid: A.gid,
    alternateRemoteGid: B.gid,
    alternateFlowLabel: 0x12345,
    alternateTrafficClass: 0x68,
    alternateHopLimit: 64,
    alternatePacketRate: 7,
    alternateSl: 3,
    alternateSubnetLocal: true,
    alternateLocalAckTimeout: 18,
    privateData: zeros(0),
  };
  send(A, B, { name: 'LAP', fields: lap }, tid5, 20_000);
  send(
    B,
    A,
    { name: 'APR', fields: { localCommId: commB, remoteCommId: commA, additionalInfoLength: 0, apStatus: 0, additionalInfo: zeros(0), privateData: zeros(0) } },
    tid5,
    330.7,
  );

  // 13-14: ClassPortInfo of the CM class (Get, then GetResp with a zeroed attribute but for its
  // base and class versions and the response time value 18).
  const tid6 = 0x00000002_555bbcafn;
  const cpi = (method: number): Uint8Array => {
    const mad = new Uint8Array(MAD_LEN);
    const v = new DataView(mad.buffer);
    emitMadHeader(
      {
        baseVersion: 1,
        mgmtClass: MgmtClass.CM,
        classVersion: CM_CLASS_VERSION,
        method,
        status: 0,
        classSpecific: 0,
        transactionId: tid6,
        attributeId: CmAttr.CLASS_PORT_INFO,
        reserved: 0,
        attributeModifier: 0,
      },
      v,
      0,
    );
    if (method === MadMethod.GET_RESP) {
      mad[24] = 1;
      mad[25] = CM_CLASS_VERSION;
      mad[31] = 18;
    }
    return mad;
  };
  put(50_000, gsiFrame(A, B, cpi(MadMethod.GET)));
  put(120.4, gsiFrame(B, A, cpi(MadMethod.GET_RESP)));
  return out;
}
