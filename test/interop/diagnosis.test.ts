/**
 * The diagnosis of a connection that never comes up (analysis/connection-doctor.ts, `roce probe
 * --doctor`), each cause provoked against Linux rdma_rxe in one guest boot, one step per cause:
 *  1. ecnOneEnd: our requests marked CE (a fault rule) to ib_write_bw; rxe has no notification
 *     point, so no CNP comes back.
 *  2. pathMtuAbovePeer: rxe's ibv_rc_pingpong client at path MTU 1024 against our server at 4096
 *     (the tap's MTU raised for the step); rxe sends first, and we refuse its 1024-byte SEND_FIRST
 *     with NAK invalid request (C9-29, as rxe_resp.c check_length()). The other way round (rxe
 *     refusing our longer packet) is the hand-built capture's case.
 *  3. wrongQpn: our perftest client sends to ib_write_bw's QPN + 1 (`--mismatch qpn`); rxe drops
 *     packets to a QPN it has not (rxe_recv.c hdr_check()) and our retries run out.
 *  4. wrongPsn: our client starts one PSN past the one it announced (`--mismatch psn`); rxe NAKs
 *     the sequence at the announced PSN (rxe_resp.c check_psn()).
 *  5. noRoceOnPeer: rdma_rxe unloaded in the guest (`rdma link delete` leaves rxe's UDP socket on
 *     4791 open, so the module goes); `roce probe --doctor` reads the ICMP port unreachable.
 * Each step's host command first sends a marker datagram, and each step is judged on the frames
 * from its marker to the next, so every evidence frame is the step's.
 *
 * Not provocable with rxe, and covered by hand-built captures (test/analysis/connection-doctor.test.ts):
 * gidTypeMismatch (rxe's GID table holds RoCE v2 entries only) and gidIndexMismatch (perftest
 * refuses GIDs of different IP versions itself, and ibv_rc_pingpong with the link-local GID
 * against an IPv4-mapped peer fails in modify-to-RTR, before any frame).
 *
 * @group interop
 */
import * as fs from 'node:fs';
import { type LabRun, type Step, GUEST_IP, HOST_IP, interopSkipReason, runLab } from './lab';
import { stepOf } from './checks';
import { analyzeCapture } from '../../analysis/analyzer';
import { type Diagnosis, DiagnosisCause } from '../../analysis/connection-doctor';
import { PcapWriter, iterateCapture } from '../../packets/pcap';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe diagnosis interop [skipped: ${skip}]`, () => undefined);

/**
 * The first thing each host command does: a UDP datagram to the guest's port 9 naming the step,
 * which the capture holds before any frame of the step. The capture's own times cannot cut it:
 * qemu's filter-dump stamps frames with its start second plus the guest's virtual clock, up to a
 * second behind the host's.
 */
const marker = (id: number): string => `printf '${MARK}${id}' >/dev/udp/$RXE_GUEST_IP/9`;
const MARK = 'roce-ts diagnosis step ';
const STEPS: Step[] = [
  {
    id: 1,
    guestRole: 'server',
    guest: 'ib_write_bw -d rxe0 -x @GID@ -n 20 -F',
    host: `${marker(1)}; ROCE_FAULTS='{"tx":{"ecnCe":1}}' $ROCE perftest write $RXE_GUEST_IP -d $RXE_TAP -n 20 --json --timeout 30`,
    timeoutS: 40,
  },
  {
    id: 2,
    guestRole: 'client',
    guest: 'ibv_rc_pingpong -d rxe0 -g @GID@ -m 1024 -s 4096 -n 2 @PEER@',
    host: `${marker(2)}; ip link set $RXE_TAP mtu 4200; $ROCE pingpong -d $RXE_TAP -m 4096 -s 4096 -n 2 --json --timeout 15; rc=$?; ip link set $RXE_TAP mtu 1500; exit $rc`,
    timeoutS: 25,
  },
  {
    id: 3,
    guestRole: 'server',
    guest: 'ib_write_bw -d rxe0 -x @GID@ -n 5 -F',
    host: `${marker(3)}; $ROCE perftest write $RXE_GUEST_IP -d $RXE_TAP -n 5 --mismatch qpn --json --timeout 20`,
    timeoutS: 30,
  },
  {
    id: 4,
    guestRole: 'server',
    guest: 'ib_write_bw -d rxe0 -x @GID@ -n 5 -F',
    host: `${marker(4)}; $ROCE perftest write $RXE_GUEST_IP -d $RXE_TAP -n 5 --mismatch psn --json --timeout 20`,
    timeoutS: 30,
  },
  // The guest unloads rxe once the host command has said it is ready; the host waits for that
  // (the guest's step ends before the next one starts) and then runs the doctor.
  {
    id: 5,
    guestRole: 'client',
    guest: 'rmmod rdma_rxe',
    host: `${marker(5)}; touch "$ROCE_READY_FILE"; sleep 3; $ROCE probe --doctor --dev $RXE_TAP --dut $RXE_GUEST_IP --json`,
    timeoutS: 30,
  },
  // Keeps the guest up while step 5's doctor runs: the guest waits for this step's go, which
  // comes only after step 5's host command has ended.
  { id: 6, guestRole: 'client', guest: 'true', host: 'true', timeoutS: 10 },
];

/** The capture's frames from step `id`'s marker to the next step's (or the end). */
function stepCapture(run: LabRun, id: number): Uint8Array {
  const recs = [...iterateCapture(fs.readFileSync(run.capturePath))];
  // The datagram itself (IPv4, UDP to port 9), not the guest's ICMP port unreachable that quotes it.
  const markerOf = (data: Uint8Array): number | null => {
    const b = Buffer.from(data);
    if (b.length < 42 || b.readUInt16BE(12) !== 0x0800 || b[23] !== 17 || b.readUInt16BE(14 + ((b[14] ?? 0) & 15) * 4 + 2) !== 9) return null;
    const text = b.toString('latin1');
    const at = text.indexOf(MARK);
    return at < 0 ? null : Number.parseInt(text.slice(at + MARK.length), 10);
  };
  const from = recs.findIndex((r) => markerOf(r.data) === id);
  if (from < 0) throw new Error(`step ${id}: its marker is not in the capture`);
  const next = recs.findIndex((r, i) => i > from && markerOf(r.data) !== null);
  const w = new PcapWriter({ nanosecond: true });
  for (const r of recs.slice(from, next < 0 ? recs.length : next)) w.add(r.data, r.timestampNs);
  return w.toBytes();
}

function diagnosis(run: LabRun, id: number): Diagnosis[] {
  return analyzeCapture(stepCapture(run, id)).diagnosis;
}

function causeOf(ds: readonly Diagnosis[], cause: DiagnosisCause): Diagnosis {
  const found = ds.find((x) => x.cause === cause);
  if (found === undefined) throw new Error(`no ${cause} among ${JSON.stringify(ds.map((x) => x.cause))}`);
  return found;
}

d('the diagnosis of each cause, provoked against rxe', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('diagnosis', STEPS);
  }, 600_000);

  test('the boot ran every step', () => {
    expect(run.console).toContain('RXE-END');
    for (const s of STEPS) expect(stepOf(run, s.id).hostRc).not.toBeNull();
  });

  test('ECN on one end: CE-marked requests to rxe, no CNP back, the transfer itself fine', () => {
    const s = stepOf(run, 1);
    expect({ guest: s.guestRc, host: s.hostRc }).toEqual({ guest: 0, host: 0 });
    const e = causeOf(diagnosis(run, 1), DiagnosisCause.ECN_ONE_END);
    expect(e.explanation).toContain(`reached ${GUEST_IP} marked CE and ${GUEST_IP} sent no CNP back`);
    expect(e.frames.length).toBeGreaterThan(0);
  });

  test('path MTUs that differ: rxe at 1024 sends first, and we (at 4096) refuse its 1024-byte FIRST with NAK invalid request', () => {
    const s = stepOf(run, 2);
    expect(s.hostRc).not.toBe(0);
    const e = causeOf(diagnosis(run, 2), DiagnosisCause.PATH_MTU_ABOVE_PEER);
    expect(e.explanation).toContain(`${HOST_IP} answered a FIRST or MIDDLE packet of 1024 payload bytes from ${GUEST_IP}`);
    expect(e.explanation).toContain(`the path MTU of ${HOST_IP} is not 1024`);
  });

  test('wrong QPN: our requests go to a QPN rxe did not announce, nothing answers, our retries run out', () => {
    const s = stepOf(run, 3);
    expect(s.hostRc).not.toBe(0);
    expect(s.hostOut + s.hostErr).toContain('RETRY_EXC_ERR');
    const ds = diagnosis(run, 3);
    const e = causeOf(ds, DiagnosisCause.WRONG_QPN);
    expect(e.explanation).toMatch(
      new RegExp(`${HOST_IP} sent requests to QP 0x[0-9a-f]+ at ${GUEST_IP}, which announced QPN 0x[0-9a-f]+ in the perftest exchange`),
    );
    expect(causeOf(ds, DiagnosisCause.RETRY_EXHAUSTED).consistentWith).toContain(DiagnosisCause.WRONG_QPN);
  });

  test('wrong PSN: rxe NAKs the sequence at the PSN we announced, one before our first', () => {
    const s = stepOf(run, 4);
    expect(s.hostRc).not.toBe(0);
    const e = causeOf(diagnosis(run, 4), DiagnosisCause.WRONG_PSN);
    expect(e.explanation).toMatch(/announced start PSN|PSN sequence error NAK/);
  });

  test('no RoCE on the peer: with rdma_rxe unloaded, the doctor and the analysis both read the ICMP port unreachable', () => {
    const s = stepOf(run, 5);
    expect(s.guestRc).toBe(0);
    expect(s.hostRc).not.toBe(0);
    const doctor = s.hostJson as { checks?: { check: string; status: string }[] } | null;
    expect(doctor?.checks?.find((c) => c.check === 'roce-port')?.status).toBe('problem');
    const e = causeOf(diagnosis(run, 5), DiagnosisCause.NO_ROCE_ON_PEER);
    expect(e.explanation).toContain(`${GUEST_IP} answered`);
  });
});
