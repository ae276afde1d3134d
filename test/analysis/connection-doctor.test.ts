/**
 * The diagnosis of a connection that never comes up (analysis/connection-doctor.ts): one
 * hand-built capture per cause, named from its frames alone, and none for a healthy conversation
 * or any bundled capture.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildRoceV1Frame, buildRoceV2Frame } from '../../packets/build';
import { PcapWriter } from '../../packets/pcap';
import { analyzeCapture } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';
import { writeTextReport } from '../../analysis/text-report';
import { DiagnosisCause } from '../../analysis/connection-doctor';
import { perftestAnnouncement } from '../../analysis/oob';
import { iterateCapture } from '../../packets/pcap';
import { EPOCH, Op, QP_A, QP_B, Syn, ack, capture, frame, req } from './frames';

const ETH_A = 0x020000000001;
const ETH_B = 0x020000000002;

function pcap(frames: readonly Uint8Array[]): Uint8Array {
  const w = new PcapWriter({ nanosecond: true });
  frames.forEach((f, i) => w.add(f, EPOCH + BigInt(i) * 1_000_000n));
  return w.toBytes();
}

function causes(file: Uint8Array): string[] {
  return analyzeCapture(file).diagnosis.map((d) => d.cause);
}

/** An ICMP destination unreachable from B (198.18.0.2) to A quoting `quoted` (an IPv4 RoCE frame with Ethernet). */
function icmpV4PortUnreachable(quoted: Uint8Array): Uint8Array {
  const ip = quoted.subarray(14, 14 + 28); // the quoted IPv4 header and the UDP header
  const icmp = new Uint8Array(8 + ip.length);
  icmp[0] = 3;
  icmp[1] = 3;
  icmp.set(ip, 8);
  const total = 20 + icmp.length;
  const f = new Uint8Array(14 + total);
  const v = new DataView(f.buffer);
  v.setUint32(0, 0x0200);
  v.setUint16(4, 0x0001);
  v.setUint32(6, 0x0200);
  v.setUint16(10, 0x0002);
  v.setUint16(12, 0x0800);
  f[14] = 0x45;
  v.setUint16(16, total);
  f[22] = 64;
  f[23] = 1;
  f.set([198, 18, 0, 2, 198, 18, 0, 1], 26);
  f.set(icmp, 34);
  return f;
}

/** A TCP segment from `from` carrying perftest's key message (KEY_PRINT_FMT_GID's start) for `qpn` and `psn`. */
function perftestKey(from: 'a' | 'b', qpn: number, psn: number): Uint8Array {
  const h = (n: number, w: number) => n.toString(16).padStart(w, '0');
  const text = `0000:0001:${h(qpn, 6)}:${h(psn, 6)}:00000136:00007f0000001000:${'00:'.repeat(16)}00000000\0`;
  const payload = Uint8Array.from(text, (c) => c.charCodeAt(0));
  const total = 20 + 20 + payload.length;
  const f = new Uint8Array(14 + total);
  const v = new DataView(f.buffer);
  const [src, dst] = from === 'a' ? [1, 2] : [2, 1];
  v.setUint32(0, 0x0200);
  v.setUint16(4, dst);
  v.setUint32(6, 0x0200);
  v.setUint16(10, src);
  v.setUint16(12, 0x0800);
  f[14] = 0x45;
  v.setUint16(16, total);
  f[22] = 64;
  f[23] = 6;
  f.set([198, 18, 0, src, 198, 18, 0, dst], 26);
  v.setUint16(34, from === 'a' ? 40000 : 18515);
  v.setUint16(36, from === 'a' ? 18515 : 40000);
  f[46] = 0x50; // data offset 5 words
  f[47] = 0x18; // PSH, ACK
  f.set(payload, 54);
  return f;
}

describe('connection doctor', () => {
  test('a healthy conversation gives no diagnosis, and the report has no diagnosis section or key', () => {
    const file = capture([req(0, Op.SEND_ONLY, 100, { len: 1024 }), ack(5, 100), req(10, Op.SEND_ONLY, 101, { len: 1024 }), ack(15, 101, Syn.ACK, 1)]);
    const r = analyzeCapture(file);
    expect(r.diagnosis).toEqual([]);
    const doc = analysisDocument(r, 'x.pcap');
    expect('diagnosis' in doc).toBe(false);
    let text = '';
    writeTextReport(doc, { episodes: false, messages: false, frames: false }, (t) => {
      text += t;
    });
    expect(text).not.toContain('diagnosis');
  });

  test('every bundled capture gives no diagnosis, but the two rxe captures of a CM peer without RDMA: no RoCE on the peer', () => {
    // captures/README.md: the host answering rping and udaddy had a TCP listener only, no RDMA;
    // its ICMP port unreachable after each CM MAD is what the diagnosis names.
    const noRoce = new Set(['rxe/rping-req-retries.pcap', 'rxe/udaddy-sidr-req.pcap']);
    const dirs = ['captures', 'captures/rxe'];
    let n = 0;
    for (const dir of dirs) {
      for (const name of readdirSync(dir)) {
        if (!/\.pcap(ng)?$/.test(name)) continue;
        n++;
        const file = join(dir, name).replace(/^captures\//, '');
        const found = analyzeCapture(readFileSync(join(dir, name))).diagnosis.map((g) => g.cause);
        expect({ file, found }).toEqual({ file, found: noRoce.has(file) ? [DiagnosisCause.NO_ROCE_ON_PEER] : [] });
      }
    }
    expect(n).toBeGreaterThan(5);
  });

  test('ICMP port unreachable answering UDP 4791: no RoCE on the peer, and the retries it explains', () => {
    const r1 = frame(req(0, Op.SEND_ONLY, 100, { len: 64 }));
    const file = pcap([r1, icmpV4PortUnreachable(r1), r1, icmpV4PortUnreachable(r1), r1]);
    const r = analyzeCapture(file);
    const d = r.diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.NO_ROCE_ON_PEER, DiagnosisCause.RETRY_EXHAUSTED]);
    expect(d[0]?.frames).toEqual([2, 4]);
    expect(d[0]?.explanation).toContain('198.18.0.2 answered 2 RoCE v2 datagram(s) from 198.18.0.1 to 198.18.0.2');
    expect(d[0]?.explanation).toContain('type 3 code 3, port unreachable');
    expect(d[1]?.frames).toEqual([1, 3, 5]);
    expect(d[1]?.consistentWith).toEqual([DiagnosisCause.NO_ROCE_ON_PEER]);
    // The text report and the JSON document carry the same findings.
    const doc = analysisDocument(r, 'x.pcap');
    expect(doc.diagnosis).toEqual(d);
    let text = '';
    writeTextReport(doc, { episodes: false, messages: false, frames: false }, (t) => {
      text += t;
    });
    expect(text).toContain('\ndiagnosis:\n  noRoceOnPeer (frames 2, 4): ');
    expect(text).toContain('    consistent with: noRoceOnPeer\n');
  });

  test('RoCE v1 from one end and v2 from the other: a GID type mismatch', () => {
    const v1 = (psn: number) =>
      buildRoceV1Frame({
        eth: { src: ETH_A, dst: ETH_B },
        grh: { sgid: '::ffff:198.18.0.1', dgid: '::ffff:198.18.0.2' },
        bth: { opcode: Op.SEND_ONLY, destQp: QP_B, psn, ackReq: true },
        payload: new Uint8Array(64),
      });
    const fromB = buildRoceV2Frame({
      eth: { src: ETH_B, dst: ETH_A },
      ip: { version: 4, src: '198.18.0.2', dst: '198.18.0.1', ecn: 2 },
      bth: { opcode: Op.SEND_ONLY, destQp: QP_A, psn: 500, ackReq: true },
      payload: new Uint8Array(64),
    });
    const d = analyzeCapture(pcap([v1(100), fromB, v1(100), fromB, v1(100)])).diagnosis;
    expect(d[0]?.cause).toBe(DiagnosisCause.GID_TYPE_MISMATCH);
    expect(d[0]?.frames).toEqual([1, 2]);
    expect(d[0]?.explanation).toContain('02:00:00:00:00:01 sends RoCE v1 (EtherType 0x8915), 02:00:00:00:00:02 sends RoCE v2 from an IPv4-mapped GID');
    expect(d.map((x) => x.cause)).toContain(DiagnosisCause.RETRY_EXHAUSTED);
  });

  test('a link-local GID against an IPv4-mapped one: a GID index mismatch', () => {
    const fromA = buildRoceV2Frame({
      eth: { src: ETH_A, dst: ETH_B },
      ip: { version: 6, src: 'fe80::1', dst: 'fe80::2' },
      bth: { opcode: Op.SEND_ONLY, destQp: QP_B, psn: 100, ackReq: true },
      payload: new Uint8Array(64),
    });
    const fromB = buildRoceV2Frame({
      eth: { src: ETH_B, dst: ETH_A },
      ip: { version: 4, src: '198.18.0.2', dst: '198.18.0.1' },
      bth: { opcode: Op.SEND_ONLY, destQp: QP_A, psn: 500, ackReq: true },
      payload: new Uint8Array(64),
    });
    const d = analyzeCapture(pcap([fromA, fromB, fromA])).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.GID_INDEX_MISMATCH]);
    expect(d[0]?.explanation).toContain('sends RoCE v2 from a link-local (fe80::) GID');
  });

  test('requests above anything the peer sends, resent and never answered: path MTU above the peer', () => {
    // B answers A's small SENDs; then A's 4096-byte SENDs go unanswered and are resent.
    const file = capture([
      req(0, Op.SEND_ONLY, 100, { len: 1024 }),
      ack(5, 100),
      req(10, Op.SEND_ONLY, 101, { len: 4096 }),
      req(20_000, Op.SEND_ONLY, 101, { len: 4096 }),
      req(40_000, Op.SEND_ONLY, 101, { len: 4096 }),
    ]);
    // The small request and the large ones are of the same QP: the window answered is 100 only.
    const d = analyzeCapture(file).diagnosis;
    expect(d.map((x) => x.cause)).toContain(DiagnosisCause.PATH_MTU_ABOVE_PEER);
  });

  test('a QP that got only large requests, resent, while the peer sends 1024-byte frames: path MTU above the peer', () => {
    const fromB = (psn: number) =>
      buildRoceV2Frame({
        eth: { src: ETH_B, dst: ETH_A },
        ip: { version: 4, src: '198.18.0.2', dst: '198.18.0.1', ecn: 2 },
        bth: { opcode: Op.SEND_ONLY, destQp: QP_A, psn, ackReq: true },
        payload: new Uint8Array(1024),
      });
    // A acknowledges B's requests: B's side of the connection works.
    const ackFromA = (psn: number, msn: number) =>
      buildRoceV2Frame({
        eth: { src: ETH_A, dst: ETH_B },
        ip: { version: 4, src: '198.18.0.1', dst: '198.18.0.2', ecn: 2 },
        bth: { opcode: Op.ACK, destQp: QP_B, psn },
        aeth: { syndrome: Syn.ACK, msn },
      });
    const big = frame(req(0, Op.SEND_ONLY, 100, { len: 4096 }));
    const d = analyzeCapture(pcap([big, fromB(500), big, ackFromA(500, 1), fromB(501), big, ackFromA(501, 2)])).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.PATH_MTU_ABOVE_PEER, DiagnosisCause.RETRY_EXHAUSTED]);
    expect(d[0]?.explanation).toContain('requests of 4096 payload bytes or more');
    expect(d[0]?.explanation).toContain('largest payload 198.18.0.2 sent or had answered was 1024 bytes');
    expect(d[0]?.frames).toEqual([1, 2, 3, 6]);
    expect(d[1]?.consistentWith).toEqual([DiagnosisCause.PATH_MTU_ABOVE_PEER]);
  });

  /** B's 4096-byte SEND in 1024-byte packets (its path MTU), A's ACK, A's 4096-byte SEND_ONLY, and B's NAK with `syndrome`. */
  function mtuRefusal(syndrome: number): Uint8Array {
    const fromB = (op: number, psn: number) =>
      buildRoceV2Frame({
        eth: { src: ETH_B, dst: ETH_A },
        ip: { version: 4, src: '198.18.0.2', dst: '198.18.0.1', ecn: 2 },
        bth: { opcode: op, destQp: QP_A, psn, ackReq: op === Op.SEND_LAST },
        payload: new Uint8Array(1024),
      });
    const ackFromA = buildRoceV2Frame({
      eth: { src: ETH_A, dst: ETH_B },
      ip: { version: 4, src: '198.18.0.1', dst: '198.18.0.2', ecn: 2 },
      bth: { opcode: Op.ACK, destQp: QP_B, psn: 503 },
      aeth: { syndrome: Syn.ACK, msn: 1 },
    });
    return pcap([
      fromB(Op.SEND_FIRST, 500),
      fromB(Op.SEND_MIDDLE, 501),
      fromB(Op.SEND_MIDDLE, 502),
      fromB(Op.SEND_LAST, 503),
      ackFromA,
      frame(req(0, Op.SEND_ONLY, 100, { len: 4096 })),
      frame(ack(0, 100, syndrome)),
    ]);
  }

  test("a request above the path MTU the peer's FIRST and MIDDLE packets show, answered NAK invalid request: path MTU above the peer (rxe check_length)", () => {
    const d = analyzeCapture(mtuRefusal(Syn.NAK_INV)).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.PATH_MTU_ABOVE_PEER]);
    expect(d[0]?.frames).toEqual([1, 6, 7]);
    expect(d[0]?.explanation).toContain('a request of 4096 payload bytes from 198.18.0.1 (QP 0x12, PSN 100) with NAK invalid request');
    expect(d[0]?.explanation).toContain('a path MTU of 1024 bytes');
  });

  test("a FIRST packet answered NAK invalid request: the two ends differ in path MTU (its payload is exactly the requester's path MTU)", () => {
    // rc_pingpong at 1024 sending first to an end at 4096, which refuses the FIRST (C9-29).
    const file = capture([req(0, Op.SEND_FIRST, 100, { len: 1024, ackReq: false }), ack(5, 100, Syn.NAK_INV)]);
    const d = analyzeCapture(file).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.PATH_MTU_ABOVE_PEER]);
    expect(d[0]?.explanation).toContain('198.18.0.2 answered a FIRST or MIDDLE packet of 1024 payload bytes from 198.18.0.1');
    expect(d[0]?.explanation).toContain('the path MTU of 198.18.0.2 is not 1024');
    expect(d[0]?.frames).toEqual([1, 2]);
  });

  test("other NAKs to a large request, or an invalid-request NAK to one within the peer's path MTU, name no path MTU", () => {
    expect(causes(mtuRefusal(Syn.NAK_ACC))).not.toContain(DiagnosisCause.PATH_MTU_ABOVE_PEER);
    const small = analyzeCapture(capture([req(0, Op.SEND_ONLY, 100, { len: 512 }), ack(5, 100, Syn.NAK_INV)])).diagnosis;
    expect(small.map((x) => x.cause)).not.toContain(DiagnosisCause.PATH_MTU_ABOVE_PEER);
  });

  test('requests to a QPN nobody answers while the peer answers another QPN: a wrong QPN', () => {
    const wrong = (psn: number) => req(0, Op.SEND_ONLY, psn, { bth: { opcode: Op.SEND_ONLY, destQp: 0x99, psn, ackReq: true }, len: 64 });
    const file = capture([req(0, Op.SEND_ONLY, 100, { len: 64 }), ack(5, 100), wrong(7000), wrong(7000), wrong(7000)]);
    const d = analyzeCapture(file).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.WRONG_QPN]);
    expect(d[0]?.frames).toEqual([3, 4, 5]);
    expect(d[0]?.explanation).toContain('requests to QP 0x99 at 198.18.0.2');
    expect(d[0]?.explanation).toContain(`while 198.18.0.2 answered QP 0x${QP_B.toString(16)}`);
  });

  test('a PSN sequence NAK on the very first request: a wrong start PSN', () => {
    const file = capture([
      req(0, Op.SEND_ONLY, 100, { len: 64 }),
      ack(5, 5000, Syn.NAK_SEQ),
      req(10, Op.SEND_ONLY, 101, { len: 64 }),
      ack(15, 5000, Syn.NAK_SEQ),
    ]);
    const d = analyzeCapture(file).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.WRONG_PSN]);
    expect(d[0]?.frames).toEqual([1, 2]);
    expect(d[0]?.explanation).toContain('expecting PSN 5000 while the requester started at PSN 100');
  });

  test('a sequence NAK after a good start is go-back-N recovery, not a wrong PSN', () => {
    const file = capture([req(0, Op.SEND_ONLY, 100, { len: 64 }), ack(5, 100), req(10, Op.SEND_ONLY, 102, { len: 64 }), ack(15, 101, Syn.NAK_SEQ)]);
    expect(causes(file)).toEqual([]);
  });

  test('CE-marked requests with no CNP back: ECN on one end only', () => {
    const steps = [];
    for (let i = 0; i < 6; i++) steps.push(req(i * 10, Op.SEND_ONLY, 100 + i, { len: 64, ecnCe: true }), ack(i * 10 + 5, 100 + i, Syn.ACK, i + 1));
    const d = analyzeCapture(capture(steps)).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.ECN_ONE_END]);
    expect(d[0]?.explanation).toContain('6 frame(s) from 198.18.0.1 reached 198.18.0.2 marked CE and 198.18.0.2 sent no CNP back');
    // With CNPs coming back, the same marks are DCQCN at work.
    const cnp = { us: 0, from: 'b' as const, t: { bth: { opcode: Op.CNP, destQp: QP_A, psn: 0, becn: true }, cnp: new Uint8Array(16) } };
    expect(causes(capture([...steps, cnp]))).toEqual([]);
  });

  test('CNPs to a requester whose requests are all Not-ECT: ECN on one end only', () => {
    const notEct = (psn: number) =>
      buildRoceV2Frame({
        eth: { src: ETH_A, dst: ETH_B },
        ip: { version: 4, src: '198.18.0.1', dst: '198.18.0.2', ecn: 0 },
        bth: { opcode: Op.SEND_ONLY, destQp: QP_B, psn, ackReq: true },
        payload: new Uint8Array(64),
      });
    const cnp = frame({ us: 0, from: 'b', t: { bth: { opcode: Op.CNP, destQp: QP_A, psn: 0, becn: true }, cnp: new Uint8Array(16) } });
    const d = analyzeCapture(pcap([notEct(100), frame(ack(0, 100)), cnp, notEct(101), frame(ack(0, 101, Syn.ACK, 1))])).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.ECN_ONE_END]);
    expect(d[0]?.frames).toEqual([3]);
    expect(d[0]?.explanation).toContain('whose 2 request(s) are all Not-ECT');
  });

  test('retries to exhaustion with no response and nothing else in the capture: the generic picture, every cause it may be', () => {
    const file = capture([0, 1, 2, 3, 4, 5, 6, 7].map((i) => req(i * 20_000, Op.SEND_ONLY, 100, { len: 64 })));
    const d = analyzeCapture(file).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.RETRY_EXHAUSTED]);
    expect(d[0]?.frames).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(d[0]?.explanation).toContain('sent PSN 100 to QP 0x12 at 198.18.0.2 8 times and got no response at all');
    expect(d[0]?.explanation).toContain('198.18.0.2 sent nothing at all');
    expect(d[0]?.consistentWith).toEqual(['noRoceOnPeer', 'gidTypeMismatch', 'gidIndexMismatch', 'pathMtuAbovePeer', 'wrongQpn']);
  });

  test("perftest's key messages in the rxe captures are read as tshark shows them, and agree with the wire", () => {
    const file = readFileSync('captures/rxe/send-bw-rnr.pcap');
    const said = new Set<string>();
    const it = iterateCapture(file);
    for (;;) {
      const s = it.next();
      if (s.done === true) break;
      const a = perftestAnnouncement(s.value.data, s.value.linkType);
      if (a !== null) said.add(`${s.value.index} ${a.src} ${a.qpn} ${a.psn}`);
    }
    // tshark -Y 'tcp.len>=40' -e tcp.payload: frame 27 from 198.18.0.2 "0000:0001:000011:faa2b5:...", 28 from 198.18.0.1 ":000011:fcdaa8:".
    expect(said).toContain(`27 198.18.0.2 17 ${0xfaa2b5}`);
    expect(said).toContain(`28 198.18.0.1 17 ${0xfcdaa8}`);
    expect(analyzeCapture(file).diagnosis).toEqual([]);
  });

  test('the perftest exchange names a QPN the requests do not go to: a wrong QPN', () => {
    const roce: Uint8Array[] = [frame(req(0, Op.SEND_ONLY, 100, { len: 64 })), frame(ack(5, 100))];
    const d = analyzeCapture(pcap([perftestKey('b', 0x55, 100), perftestKey('a', QP_A, 100), ...roce])).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.WRONG_QPN]);
    expect(d[0]?.frames).toEqual([1, 3]);
    expect(d[0]?.explanation).toBe('198.18.0.1 sent requests to QP 0x12 at 198.18.0.2, which announced QPN 0x55 in the perftest exchange');
    // The exchange that names the QPs on the wire gives nothing.
    expect(causes(pcap([perftestKey('b', QP_B, 100), perftestKey('a', QP_A, 100), ...roce]))).toEqual([]);
  });

  test('the perftest exchange names a start PSN the requester does not use: a wrong PSN', () => {
    const roce: Uint8Array[] = [frame(req(0, Op.SEND_ONLY, 100, { len: 64 })), frame(ack(5, 100))];
    const d = analyzeCapture(pcap([perftestKey('b', QP_B, 7), perftestKey('a', QP_A, 999), ...roce])).diagnosis;
    expect(d.map((x) => x.cause)).toEqual([DiagnosisCause.WRONG_PSN]);
    expect(d[0]?.frames).toEqual([2, 3]);
    expect(d[0]?.explanation).toContain('started its requests to QP 0x12 at PSN 100 but announced start PSN 999');
  });
});
