/**
 * Interop with Linux rdma_rxe: perftest's -R (RDMA CM) mode, unmodified ib_write_bw, ib_read_bw,
 * ib_send_bw and ib_write_lat in a qemu guest against `roce perftest -R`, each in both roles, in
 * one guest boot. With -R perftest has no TCP socket at all: its exchange runs over a first
 * CM-connected QP (SENDs of the version, system data, MTU, struct pingpong_dest key messages and
 * reports) and the test QP is a second CM connection on the same port (18515, TCP port space).
 * Before that, a client to a port nobody listens on (the guest's CM answers REJ reason 8).
 *
 * The lab starts the other side of a step once an RDMA CM listener is up (a guest cm_id in state
 * LISTEN, or the roce-ts server's ROCE_READY_FILE): see docs/interop.md.
 * Run alone with: npm run test:interop -- -t "perftest -R"   (see docs/interop.md)
 *
 * @group interop
 */
import * as fs from 'node:fs';
import { type LabRun, type Step, GUEST_IP, HOST_IP, interopSkipReason, runLab } from './lab';
import { expectCleanCapture, expectPerftest, stepOf } from './checks';
import { readCapture } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';
import { PortSpace, rdmaServiceId } from '../../packets/cm/service-id';
import { ipText } from './lab';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe perftest -R interop [skipped: ${skip}]`, () => undefined);

const PORT = 18515;

interface Case {
  id: number;
  verb: 'write' | 'read' | 'send';
  lat: boolean;
  guestRole: 'server' | 'client';
  size: number;
  iters: number;
}

const CASES: Case[] = [];
for (const [verb, lat] of [
  ['write', false],
  ['read', false],
  ['send', false],
  ['write', true],
] as const) {
  for (const guestRole of ['server', 'client'] as const) CASES.push({ id: CASES.length + 1, verb, lat, guestRole, size: lat ? 2 : 4096, iters: 50 });
}

const tool = (c: Case): string => `ib_${c.verb}_${c.lat ? 'lat' : 'bw'}`;
const title = (c: Case): string => `${tool(c)} -R, ${c.guestRole === 'server' ? 'roce-ts client' : 'roce-ts server'}`;
const sizeArg = (c: Case): string => (c.lat ? '' : ` -s ${c.size}`);

const STEPS: Step[] = CASES.map((c) => {
  const ours = `$ROCE perftest ${c.verb}${c.lat ? ' --lat' : ''} -R${c.guestRole === 'server' ? ' $RXE_GUEST_IP' : ''} -d $RXE_TAP -n ${c.iters}${sizeArg(c)} --json --timeout 80`;
  // The first step starts with a client to a port nobody listens on (exit 1 expected), then the real run.
  const host = c.id === 1 ? `$ROCE perftest write -R $RXE_GUEST_IP -p ${PORT + 1} -d $RXE_TAP --json --timeout 20; rc=$?; ${ours} && [ $rc = 1 ]` : ours;
  return {
    id: c.id,
    guestRole: c.guestRole,
    port: PORT,
    timeoutS: 150,
    guest: `${tool(c)} -d rxe0 -R -x @GID@ -n ${c.iters}${sizeArg(c)} -F${c.guestRole === 'client' ? ' @PEER@' : ''}`,
    host,
  };
});

interface CmSeen {
  src: string;
  tid: bigint;
  name: string;
  serviceId: bigint | null;
  reason: number | null;
}

/** The CM messages of the capture, in order, each once (a MAD the CM resent is counted once). */
function cmMessages(run: LabRun): CmSeen[] {
  const out: CmSeen[] = [];
  const seen = new Set<string>();
  const cap = readCapture(fs.readFileSync(run.capturePath));
  for (const rec of cap.records) {
    const f = decodeFrame(rec.data, rec.linkType);
    if (!f.roce) continue;
    const cm = f.mad?.cm ?? null;
    if (f.mad === null || cm === null) continue;
    const fields = cm.fields as Record<string, unknown>;
    // Each roce process starts its transaction IDs afresh, so the communication IDs tell the messages apart.
    const key = `${f.ipv4?.src ?? 0}/${cm.name}/${f.mad.header.transactionId}/${String(fields['localCommId'])}/${String(fields['remoteCommId'])}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({
      src: f.ipv4 !== null ? ipText(f.ipv4.src) : '?',
      tid: f.mad.header.transactionId,
      name: cm.name,
      serviceId: typeof fields['serviceId'] === 'bigint' ? fields['serviceId'] : null,
      reason: typeof fields['reason'] === 'number' ? fields['reason'] : null,
    });
  }
  return out;
}

d('perftest -R against roce perftest -R (rdma_rxe guest, netdev MTU 1500)', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('perftest-cm', STEPS, { mtu: 1500 });
  }, 1_500_000);

  test('the guest booted, ran every step and powered off; the capture decodes with valid ICRCs', () => {
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
    // No TCP at all on 18515: everything went over the RDMA CM.
    expect(run.capture.tcp.filter((t) => t.port === PORT)).toEqual([]);
  });

  test.each(CASES.map((c) => [title(c), c] as const))('%s', (_n, c) => {
    const s = stepOf(run, c.id);
    expectPerftest(run, s, { verb: c.verb, lat: c.lat, size: c.size, iters: c.iters, guestRole: c.guestRole });
    expect(s.hostJson).toMatchObject({ rdmaCm: true, mtu: 1024 });
    // perftest says it runs on rdma_cm QPs and exchanges its data through the RDMA CM.
    expect(s.guestOut).toMatch(/rdma_cm QPs\s*:\s*ON/);
    expect(s.guestOut).toMatch(/Data ex\. method\s*:\s*rdma_cm/);
  });

  test("a port nobody listens on: REJECTED (reason 8) from the guest's CM, as a typed error with ok:false", () => {
    const s = stepOf(run, 1);
    const first = s.hostOut.split('\n').find((l) => l.startsWith('{'));
    expect(first).toBeDefined();
    expect(JSON.parse(first as string)).toMatchObject({ ok: false, rdmaCm: true, code: 'ROCE_ERR_PERFTEST_REJECTED' });
    expect(String((JSON.parse(first as string) as Record<string, unknown>)['error'])).toMatch(/REJ reason 8/);
  });

  test('the capture holds REQ, REP and RTU of two connections per step (communication QP and test QP), each side active in its client role, and the DREQs', () => {
    const cm = cmMessages(run);
    const count = (src: string, name: string): number => cm.filter((m) => m.src === src && m.name === name).length;
    const sid = rdmaServiceId(PortSpace.TCP, PORT);
    const clientSteps = (guestRole: 'server' | 'client'): number => CASES.filter((c) => c.guestRole === guestRole).length;
    // The active side (the client) sends REQ and RTU, the passive side REP; two connections per
    // step. A client whose test-QP REQ came before the server listened was refused (REJ reason 8)
    // and tried again (rdma_cm_client_connection()), so there may be more REQs than RTUs.
    for (const [src, role] of [
      [HOST_IP, 'server'],
      [GUEST_IP, 'client'],
    ] as const) {
      const n = 2 * clientSteps(role);
      const reqs = cm.filter((m) => m.src === src && m.name === 'REQ' && m.serviceId === sid).length;
      expect({ src, rtus: count(src, 'RTU') }).toEqual({ src, rtus: n });
      expect(reqs).toBeGreaterThanOrEqual(n);
    }
    expect(count(GUEST_IP, 'REP')).toBe(2 * clientSteps('server'));
    expect(count(HOST_IP, 'REP')).toBe(2 * clientSteps('client'));
    // The refused attempt: one REQ for the other port, answered by a REJ with reason 8 (invalid service ID).
    expect(cm.filter((m) => m.name === 'REQ' && m.serviceId === rdmaServiceId(PortSpace.TCP, PORT + 1))).toHaveLength(1);
    const guestRejs = cm.filter((m) => m.name === 'REJ' && m.src === GUEST_IP);
    expect(guestRejs.length).toBeGreaterThanOrEqual(1);
    expect(guestRejs.every((m) => m.reason === 8)).toBe(true);
    expect(cm.filter((m) => m.name === 'REJ' && m.src === HOST_IP)).toEqual([]);
    expect(cm.filter((m) => m.name === 'DREQ').length).toBeGreaterThanOrEqual(CASES.length);
  });
});
