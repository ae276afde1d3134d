/**
 * `roce audit --live-checks` against Linux rdma_rxe (6.1): the guest serves ib_write_bw nine times
 * in a row (each run under its own time bound), the host audits it: eight runs for the
 * guessability table, then the live-check connection. rxe hands out R_Keys and QP numbers in
 * sequence (QPNs sequential, R_Key indexes sequential under a random key byte; the verdict:
 * predictable), drops the WRITE injected from another source address
 * (rxe_recv.c check_addr() compares a connected QP's addresses with the packet's), and moves its
 * QP to the error state on one WRITE with a wrong R_Key (NAK remote access error; IBTA §9.9.3 class
 * C). The capture of the same boot must agree with what the audit measured: the injected frame on
 * the wire, rxe's sequence NAK for its PSN (a NAK names the PSN the responder expects next), rxe's
 * remote access NAK for the wrong key. Then the same audit against this stack on the in-memory
 * link: its names come out unpredictable, so the two verdicts differ.
 *
 * @group interop
 */
import { type LabRun, type Step, CAPTURE_DIR, GUEST_IP, HOST_IP, describe as describeStep, interopSkipReason, ipText, runLab } from './lab';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readCapture } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';
import { AethKind, NakCode, decodeSyndrome } from '../../packets/aeth';
import { Opcode } from '../../packets/opcodes';
import { psnAdd } from '../../base/psn';
import { createSimPair } from '../../apps/sim/sim-pair';
import { pumpVirtualClock } from '../../apps/host/clock-pump';
import { TcpChannel } from '../../apps/oob/tcp-channel';
import { runPerftest } from '../../apps/perftest/run';
import { auditPeer, type PeerAuditResult } from '../../apps/audit/peer-audit';
import { CryptoRandom } from '../../base/crypto-random';
import { guessabilityOfCapture } from '../../analysis/guessability-capture';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe audit interop [skipped: ${skip}]`, () => undefined);

/** Guessability runs, and the one live-check connection after them. */
const RUNS = 8;
const SERVES = RUNS + 1;
const PORT = 18540;

/**
 * The guest's /init runs a step's command word-split, without a shell: the loop is handed to
 * `sh -c` as words, joined again by "$*" and run by eval.
 */
const LOOP = `sh -c eval\${IFS}"$*" sh for i in ${Array.from({ length: SERVES }, (_, i) => i + 1).join(' ')}; do timeout -s KILL 60 ib_write_bw -d rxe0 -x @GID@ -p ${PORT} -s 64 -n 5 -F || :; done`;

const STEPS: Step[] = [
  {
    id: 1,
    guestRole: 'server',
    port: PORT,
    guest: LOOP,
    host: `$ROCE audit $RXE_GUEST_IP -d $RXE_TAP -p ${PORT} --runs ${RUNS} --live-checks --json`,
    timeoutS: 400,
  },
];

interface Judgement {
  kind: string;
  pattern: string;
  entropyBits: number | null;
  verdict: string;
}
interface AuditJson {
  ok: boolean;
  runs: { rkey: number }[];
  report: { verdict: string; judgements: Judgement[] };
  live: PeerAuditResult['live'];
}

/** The RoCE frames of the capture that matter here: from whom, opcode, PSN, NAK code. */
function roceFrames(file: string): { src: string; opcode: number; destQp: number; psn: number; nak: number | null }[] {
  const out: { src: string; opcode: number; destQp: number; psn: number; nak: number | null }[] = [];
  for (const rec of readCapture(fs.readFileSync(file)).records) {
    const f = decodeFrame(rec.data, rec.linkType);
    if (!f.roce || f.bth === null || f.ipv4 === null) continue;
    const syn = f.aeth !== null ? decodeSyndrome(f.aeth.syndrome) : null;
    out.push({ src: ipText(f.ipv4.src), opcode: f.bth.opcode, destQp: f.bth.destQp, psn: f.bth.psn, nak: syn?.kind === AethKind.NAK ? syn.value : null });
  }
  return out;
}

/** The same audit against this stack: a perftest server run again after each run, on the in-memory link. */
async function auditThisStack(): Promise<PeerAuditResult> {
  const sim = createSimPair({ seed: 11, random: new CryptoRandom() });
  const pump = pumpVirtualClock(sim.clock);
  const l = await TcpChannel.listen(0, '127.0.0.1');
  try {
    const serve = (async () => {
      for (let i = 0; i < SERVES; i++)
        await runPerftest(sim.b, { verb: 'write', lat: false, role: 'server', listener: l, iters: 5, size: 64, connectTimeoutMs: 10_000 }).catch(() => null);
    })();
    const r = await auditPeer(sim.a, { server: '127.0.0.1', port: l.port, runs: RUNS, restartWaitMs: 5000, liveChecks: true });
    await serve;
    return r;
  } finally {
    l.close();
    pump.stop();
  }
}

d('roce audit --live-checks against rxe', () => {
  let run: LabRun;
  let audit: AuditJson;
  beforeAll(async () => {
    // The auditor's QP starts one PSN past the one it told rxe, leaving that PSN to the injected frame,
    // and fills it itself later: a retransmission that starts past the first unacknowledged PSN, on purpose.
    run = await runLab('audit', STEPS, { timeoutS: 480, breaksRules: ['retransmitFromFirstUnacked'] });
    audit = run.steps.get(1)?.hostJson as unknown as AuditJson;
    // The audit's own report beside the capture (docs/security.md's rxe column comes from it).
    fs.writeFileSync(path.join(CAPTURE_DIR, 'audit-report.json'), `${JSON.stringify(audit, null, 1)}\n`);
  }, 600_000);

  test('every run and the live-check connection complete', () => {
    const s = run.steps.get(1);
    expect({ hostRc: s?.hostRc, guestRc: s?.guestRc }).toEqual({ hostRc: 0, guestRc: 0 });
    if (audit === null || audit === undefined) throw new Error(describeStep(s));
    expect(audit.ok).toBe(true);
    expect(audit.runs).toHaveLength(RUNS);
    expect(audit.live?.stopped).toBeNull();
  });

  test("rxe's QP numbers come out sequential and its R_Key indexes too (8 bits left: the key byte); the peer predictable", () => {
    const by = Object.fromEntries(audit.report.judgements.map((j) => [j.kind, j]));
    expect(by['qpn']).toMatchObject({ pattern: 'sequential', verdict: 'predictable' });
    // rxe's R_Key is index << 8 | a random key byte, the index handed out in turn (rxe_mr.c, rxe_pool.c).
    const indexes = audit.runs.map((r) => r.rkey >>> 8);
    expect(indexes.slice(1).map((x, i) => x - (indexes[i] as number))).toEqual(Array(RUNS - 1).fill(1));
    expect(by['rkey']?.pattern).toMatch(/^high bits stride 0x1, low 8 bits/);
    expect(by['rkey']?.entropyBits).toBeLessThanOrEqual(8);
    expect(by['rkey']?.verdict).toBe('weak');
    expect(audit.report.verdict).toBe('predictable');
  });

  test('rxe rejects the WRITE injected from another source address; the capture shows it and the sequence NAK', () => {
    const inj = audit.live?.injection;
    expect(inj?.outcome).toBe('rejected');
    const c = audit.live?.connection;
    if (inj === null || inj === undefined || c === null || c === undefined) throw new Error('no injection result');
    const frames = roceFrames(run.capturePath);
    // The injected frame: from the spoofed address, to rxe's QP, at the PSN rxe expected.
    expect(frames.filter((f) => f.src === inj.spoofedIp && f.opcode === Opcode.RC_RDMA_WRITE_ONLY && f.destQp === c.qpn).map((f) => f.psn)).toEqual([inj.psn]);
    // rxe's answer to this side's next request: a PSN sequence NAK naming the injected PSN as still expected.
    const naks = frames.filter((f) => f.src === GUEST_IP && f.destQp === c.localQpn && f.nak !== null);
    expect(naks[0]).toMatchObject({ nak: NakCode.PSN_SEQUENCE_ERROR, psn: inj.psn });
  });

  test("one WRITE with a wrong R_Key: NAK remote access error, rxe's QP to the error state", () => {
    const w = audit.live?.wrongRkey;
    expect(w).toMatchObject({ outcome: 'qp-error', answer: 'REM_ACCESS_ERR', peerQp: 'error' });
    const c = audit.live?.connection;
    if (w === null || w === undefined || c === null || c === undefined) throw new Error('no wrong-R_Key result');
    expect(w.psn).toBe(psnAdd(c.psn, 2));
    const naks = roceFrames(run.capturePath).filter((f) => f.src === GUEST_IP && f.destQp === c.localQpn && f.nak === NakCode.REMOTE_ACCESS_ERROR);
    expect(naks.map((f) => f.psn)).toEqual([w.psn]);
    // The probe after it went unanswered: every frame to rxe's QP after the NAK came from this side, none from rxe.
    const toRxe = roceFrames(run.capturePath).filter((f) => f.src === HOST_IP && f.destQp === c.qpn && f.psn === w.psn);
    expect(toRxe.length).toBeGreaterThan(1);
  });

  test("roce analyze --audit on the same capture: rxe's R_Keys as the audit measured them, then the live-check key; the wrong key counted apart", () => {
    const c = guessabilityOfCapture(run.capturePath);
    const live = audit.live?.connection;
    const w = audit.live?.wrongRkey;
    if (live === null || live === undefined || w === null || w === undefined) throw new Error('no live-check connection');
    const rkey = c.report.judgements.find((j) => j.host === GUEST_IP && j.kind === 'rkey');
    const hex = (k: number): string => `0x${(k >>> 0).toString(16)}`;
    // The wrong key was refused at its one use (NAK remote access error): rxe never handed it out.
    expect(rkey?.sample).toEqual([...audit.runs.map((r) => hex(r.rkey)), hex(live.rkey)]);
    expect(rkey?.sample).not.toContain(hex(w.rkey));
    expect(c.refusedRkeys).toEqual([{ host: GUEST_IP, count: 1 }]);
    const mine = audit.report.judgements.find((j) => j.kind === 'rkey');
    expect({ pattern: rkey?.pattern, verdict: rkey?.verdict }).toEqual({ pattern: mine?.pattern, verdict: mine?.verdict });
  });

  test('the same audit against this stack: unpredictable, and it drops the injected WRITE as rxe does (check_addr()); the two verdicts differ', async () => {
    const mine = await auditThisStack();
    expect(mine.stopped).toBeNull();
    expect(mine.report.verdict).toBe('unpredictable');
    expect(mine.report.verdict).not.toBe(audit.report.verdict);
    expect(mine.live?.injection?.outcome).toBe('rejected');
    expect(mine.live?.wrongRkey).toMatchObject({ outcome: 'qp-error', answer: 'REM_ACCESS_ERR', peerQp: 'error' });
  }, 60_000);
});
