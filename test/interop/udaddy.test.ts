/**
 * Interop with Linux rdma_rxe: librdmacm's udaddy (unmodified, in a qemu guest) against
 * `roce udaddy`, in both roles, over SIDR (UDP port space 0x0111, port 7174): its defaults
 * (-C 10 -S 100), two connections of four 1024-byte datagrams (the active MTU), a server that
 * refuses (-S larger than the MTU: "udaddy: failing connection request", a SIDR_REP with status 2,
 * rejected) from either side, and a port nobody listens on, which the guest's kernel CM answers
 * with a SIDR_REP status 1 (service ID not supported).
 *
 * The lab starts the other side of a step once an RDMA CM listener is up (a guest cm_id in state
 * LISTEN, or the roce-ts server's ROCE_READY_FILE): see docs/interop.md.
 * Run alone with: flock /tmp/rxe-lab.lock npx jest test/interop/udaddy   (see docs/interop.md)
 *
 * @group interop
 */
import * as fs from 'node:fs';
import { type LabRun, type Step, GUEST_IP, HOST_IP, interopSkipReason, ipText, runLab } from './lab';
import { expectCleanCapture, stepOf } from './checks';
import { readCapture } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe udaddy interop [skipped: ${skip}]`, () => undefined);

const PORT = 7174;
const CLIENT_LINES = [
  'udaddy: starting client',
  'udaddy: connecting',
  'initiating data transfers',
  'receiving data transfers',
  'data transfers complete',
  'test complete',
  'return status 0',
];
const SERVER_LINES = ['udaddy: starting server', 'receiving data transfers', 'sending replies', 'data transfers complete', 'test complete', 'return status 0'];

const S = {
  guestServer: 1,
  guestClient: 2,
  twoConnections: 3,
  guestRefuses: 4,
  weRefuse: 5,
  wrongPort: 6,
} as const;

function steps(): Step[] {
  const host = (args: string): string => `$ROCE udaddy ${args} --json --timeout 60`;
  return [
    { id: S.guestServer, guestRole: 'server', port: PORT, timeoutS: 120, guest: 'udaddy', host: host('-s $RXE_GUEST_IP') },
    { id: S.guestClient, guestRole: 'client', port: PORT, timeoutS: 120, guest: 'udaddy -s @PEER@', host: host('-b $RXE_HOST_IP') },
    {
      id: S.twoConnections,
      guestRole: 'server',
      port: PORT,
      timeoutS: 120,
      guest: 'udaddy -c 2 -C 4 -S 1024',
      host: host('-s $RXE_GUEST_IP -c 2 -C 4 -S 1024'),
    },
    // The guest's server refuses (verify_test_params(): 2000 > active MTU 1024) and ends with 0; we end with 1.
    { id: S.guestRefuses, guestRole: 'server', port: PORT, timeoutS: 120, guest: 'udaddy -S 2000', host: `${host('-s $RXE_GUEST_IP')}; [ $? = 1 ]` },
    // We refuse the same way; the guest's client ends with the SIDR_REP status as its return status (2).
    { id: S.weRefuse, guestRole: 'client', port: PORT, timeoutS: 120, guest: 'udaddy -s @PEER@', host: host('-b $RXE_HOST_IP -S 2000') },
    // Nobody on 7175 (the guest's kernel CM answers), then 7174 so that the guest's server ends.
    {
      id: S.wrongPort,
      guestRole: 'server',
      port: PORT,
      timeoutS: 120,
      guest: 'udaddy',
      host: `${host(`-s $RXE_GUEST_IP --port ${PORT + 1}`)}; rc=$?; $ROCE udaddy -s $RXE_GUEST_IP --timeout 60 >/dev/null && [ $rc = 1 ]`,
    },
  ];
}

/** The guest's lines, without the serial console's carriage returns. */
const guestLines = (out: string): string[] =>
  out
    .split('\n')
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l !== '');

interface CmSeen {
  name: 'SIDR_REQ' | 'SIDR_REP';
  src: string;
  serviceId: bigint;
  status: number;
  qkey: number;
  qpn: number;
  /** SIDR_REQ: the IP CM header's source and destination address and source port. */
  ipCm: { src: string; dst: string; port: number; ipVersion: number } | null;
  /** The 256-byte MAD. */
  mad: Uint8Array;
}

const v4 = (a: Uint8Array): string => Array.from(a.subarray(12)).join('.');

/**
 * A MAD as hex with the bytes that differ per sender and per exchange blanked: the transaction ID
 * (MAD bytes 8-15), the request ID (24-27), and for a SIDR_REQ the IP CM header's source port
 * (42-43) and addresses (44-75), for a SIDR_REP the QPN (32-34).
 */
function shape(m: CmSeen): string {
  const b = Buffer.from(m.mad).toString('hex').split('');
  const blank = (from: number, to: number): void => {
    for (let i = from * 2; i < to * 2; i++) b[i] = '.';
  };
  blank(8, 16);
  blank(24, 28);
  if (m.name === 'SIDR_REQ') blank(42, 76);
  else blank(32, 35);
  return b.join('');
}

/** SIDR_REQs and SIDR_REPs of the capture, in order. */
function sidrMessages(run: LabRun): CmSeen[] {
  const cap = readCapture(fs.readFileSync(run.capturePath));
  const out: CmSeen[] = [];
  for (const rec of cap.records) {
    const f = decodeFrame(rec.data, rec.linkType);
    if (!f.roce) continue;
    const cm = f.mad?.cm ?? null;
    if (f.ipv4 === null || cm === null) continue;
    const src = ipText(f.ipv4.src);
    const ip = f.mad?.ipCm ?? null;
    const ipCm = ip === null ? null : { src: v4(ip.srcAddr), dst: v4(ip.dstAddr), port: ip.srcPort, ipVersion: ip.ipVersion };
    const mad = rec.data.slice(f.payloadOff, f.payloadOff + 256);
    if (cm.name === 'SIDR_REQ') out.push({ name: cm.name, src, serviceId: cm.fields.serviceId, status: -1, qkey: -1, qpn: -1, ipCm, mad });
    if (cm.name === 'SIDR_REP')
      out.push({ name: cm.name, src, serviceId: cm.fields.serviceId, status: cm.fields.status, qkey: cm.fields.qkey, qpn: cm.fields.qpn, ipCm: null, mad });
  }
  return out;
}

d('librdmacm udaddy against roce udaddy (rdma_rxe guest, netdev MTU 1500)', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('udaddy', steps(), { mtu: 1500 });
  }, 1_200_000);

  const why = (id: number): string => {
    const s = stepOf(run, id);
    return `guest: ${s.guestOut.slice(0, 800)}\nhost: ${s.hostOut.slice(0, 800)} ${s.hostErr.slice(0, 800)}`;
  };

  test('the guest booted, ran every step and powered off; the capture decodes with valid ICRCs', () => {
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
  });

  test('udaddy (defaults) server, roce-ts client: ten 100-byte datagrams each way', () => {
    const s = stepOf(run, S.guestServer);
    expect({ guest: s.guestRc, host: s.hostRc, why: why(S.guestServer) }).toMatchObject({ guest: 0, host: 0 });
    expect(guestLines(s.guestOut)).toEqual(SERVER_LINES);
    expect(s.hostJson).toMatchObject({
      ok: true,
      test: 'udaddy',
      role: 'client',
      returnStatus: 0,
      connected: 1,
      messageCount: 10,
      messageSize: 100,
      lines: CLIENT_LINES,
    });
    const n = (s.hostJson?.['nodes'] as Record<string, unknown>[] | undefined)?.[0];
    expect(n).toMatchObject({
      sent: 10,
      received: 10,
      receivedBytes: 10 * 140,
      local: { addr: HOST_IP, qkey: 0x01234567 },
      remote: { addr: GUEST_IP, port: PORT, qkey: 0x01234567 },
    });
    expect(run.capture.toQp[`${GUEST_IP}/${(n?.['remote'] as { qpn: number } | undefined)?.qpn}`] ?? 0).toBeGreaterThanOrEqual(10);
    expect(run.capture.toQp[`${HOST_IP}/${(n?.['local'] as { qpn: number } | undefined)?.qpn}`] ?? 0).toBeGreaterThanOrEqual(10);
  });

  test('udaddy (defaults) client, roce-ts server: ten datagrams each way, the replies to the QPN in the immediate data', () => {
    const s = stepOf(run, S.guestClient);
    expect({ guest: s.guestRc, host: s.hostRc, why: why(S.guestClient) }).toMatchObject({ guest: 0, host: 0 });
    expect(guestLines(s.guestOut)).toEqual(CLIENT_LINES);
    expect(s.hostJson).toMatchObject({ ok: true, test: 'udaddy', role: 'server', returnStatus: 0, connected: 1, rejected: 0, lines: SERVER_LINES });
    const n = (s.hostJson?.['nodes'] as Record<string, unknown>[] | undefined)?.[0];
    expect(n).toMatchObject({
      sent: 10,
      received: 10,
      receivedBytes: 10 * 140,
      local: { addr: HOST_IP, port: PORT },
      remote: { addr: GUEST_IP, qkey: 0x01234567 },
    });
    expect(run.capture.toQp[`${GUEST_IP}/${(n?.['remote'] as { qpn: number } | undefined)?.qpn}`] ?? 0).toBeGreaterThanOrEqual(10);
  });

  test('-c 2 -C 4 -S 1024 (the active MTU), udaddy server, roce-ts client: both connections resolved and served', () => {
    const s = stepOf(run, S.twoConnections);
    expect({ guest: s.guestRc, host: s.hostRc, why: why(S.twoConnections) }).toMatchObject({ guest: 0, host: 0 });
    expect(guestLines(s.guestOut)).toEqual(SERVER_LINES);
    expect(s.hostJson).toMatchObject({ ok: true, role: 'client', connected: 2, messageCount: 4, messageSize: 1024 });
    const nodes = s.hostJson?.['nodes'] as { received: number; receivedBytes: number; remote: { qpn: number } }[];
    expect(nodes.map((n) => [n.received, n.receivedBytes])).toEqual([
      [4, 4 * 1064],
      [4, 4 * 1064],
    ]);
    expect(new Set(nodes.map((n) => n.remote.qpn)).size).toBe(2);
  });

  test("udaddy server refuses (-S 2000 > MTU 1024): SIDR_REP status 2, roce-ts ends UNREACHABLE with udaddy's status", () => {
    const s = stepOf(run, S.guestRefuses);
    expect({ guest: s.guestRc, host: s.hostRc, why: why(S.guestRefuses) }).toMatchObject({ guest: 0, host: 0 });
    expect(guestLines(s.guestOut).slice(0, 3)).toEqual([
      'udaddy: starting server',
      'udaddy: message_size 2000 is larger than active mtu 1024',
      'udaddy: failing connection request',
    ]);
    expect(s.hostJson).toMatchObject({ ok: false, test: 'udaddy', role: 'client', code: 'ROCE_ERR_UDADDY_UNREACHABLE', returnStatus: 2 });
    expect(String(s.hostJson?.['error'])).toMatch(/RDMA_CM_EVENT_UNREACHABLE, error: 2 \(SIDR_REP status 2 \(rejected by the service\)\)/);
  });

  test("roce-ts server refuses (-S 2000): the guest's udaddy prints the UNREACHABLE event and returns status 2", () => {
    const s = stepOf(run, S.weRefuse);
    expect({ guest: s.guestRc, host: s.hostRc, why: why(S.weRefuse) }).toMatchObject({ guest: 2, host: 0 });
    expect(guestLines(s.guestOut)).toEqual([
      'udaddy: starting client',
      'udaddy: connecting',
      'udaddy: event: RDMA_CM_EVENT_UNREACHABLE, error: 2',
      'test complete',
      'return status 2',
    ]);
    expect(s.hostJson).toMatchObject({ ok: true, role: 'server', connected: 0, rejected: 1, returnStatus: 0 });
    expect((s.hostJson?.['lines'] as string[] | undefined)?.slice(0, 3)).toEqual([
      'udaddy: starting server',
      'udaddy: message_size 2000 is larger than active mtu 1024',
      'udaddy: failing connection request',
    ]);
  });

  test("a port nobody listens on: the guest's CM answers SIDR_REP status 1; roce-ts ends UNREACHABLE, status 1; the right port then works", () => {
    const s = stepOf(run, S.wrongPort);
    expect({ guest: s.guestRc, host: s.hostRc, why: why(S.wrongPort) }).toMatchObject({ guest: 0, host: 0 });
    expect(s.hostJson).toMatchObject({ ok: false, code: 'ROCE_ERR_UDADDY_UNREACHABLE', returnStatus: 1 });
    expect(String(s.hostJson?.['error'])).toMatch(/SIDR_REP status 1 \(service ID not supported\)/);
  });

  test('the capture: SIDR_REQs for service ID 0x0000000001111c06 from both sides, SIDR_REPs with Q_Key 0x01234567 or the statuses above', () => {
    const m = sidrMessages(run);
    const svc = 0x0000000001110000n | BigInt(PORT);
    const reqs = m.filter((x) => x.name === 'SIDR_REQ');
    const reps = m.filter((x) => x.name === 'SIDR_REP');
    expect(reqs.filter((x) => x.src === HOST_IP && x.serviceId === svc).length).toBeGreaterThanOrEqual(4);
    expect(reqs.filter((x) => x.src === GUEST_IP && x.serviceId === svc).length).toBeGreaterThanOrEqual(2);
    expect(reqs.some((x) => x.src === HOST_IP && x.serviceId === svc + 1n)).toBe(true);
    const ok = reps.filter((x) => x.status === 0);
    expect(ok.length).toBeGreaterThanOrEqual(5);
    for (const r of ok) expect({ qkey: r.qkey, svc: r.serviceId }).toEqual({ qkey: 0x01234567, svc });
    expect(reps.some((x) => x.src === GUEST_IP && x.status === 2 && x.serviceId === svc)).toBe(true);
    expect(reps.some((x) => x.src === HOST_IP && x.status === 2 && x.serviceId === svc)).toBe(true);
    expect(reps.some((x) => x.src === GUEST_IP && x.status === 1 && x.serviceId === svc + 1n)).toBe(true);
    expect(reps.some((x) => x.src === HOST_IP && x.status === 0 && x.serviceId === svc)).toBe(true);
    // Byte for byte what the guest's kernel CM sends, but for what differs per sender and exchange.
    const kernelReq = reqs.find((x) => x.src === GUEST_IP && x.serviceId === svc);
    const kernelRep = ok.find((x) => x.src === GUEST_IP);
    for (const r of reqs.filter((x) => x.src === HOST_IP && x.serviceId === svc)) expect(shape(r)).toBe(shape(kernelReq as CmSeen));
    for (const r of ok.filter((x) => x.src === HOST_IP)) expect(shape(r)).toBe(shape(kernelRep as CmSeen));
    const refusals = reps.filter((x) => x.status === 2);
    expect(shape(refusals.find((x) => x.src === HOST_IP) as CmSeen)).toBe(shape(refusals.find((x) => x.src === GUEST_IP) as CmSeen));
    // The IP CM header (cma.c cma_format_hdr()): version 4, the sender's address and port, the receiver's address; ours as the kernel's.
    for (const r of reqs) {
      expect(r.ipCm).toMatchObject({ ipVersion: 4, src: r.src, dst: r.src === HOST_IP ? GUEST_IP : HOST_IP });
      expect(r.ipCm?.port).toBeGreaterThan(0);
    }
  });
});
