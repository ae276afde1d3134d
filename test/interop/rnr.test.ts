/**
 * RNR against Linux rdma_rxe, both ways: ib_send_bw into a receive queue one WQE deep (rxe's `-r 1`
 * in the guest, roce-ts's `--rx-depth 1` on the host), path MTU 256 and 1 KiB messages (4 packets),
 * so that nearly every message draws an RNR NAK. Then `roce analyze` on the boot's capture: the
 * same scenario as captures/rxe/send-bw-rnr.pcap (test/analysis/rxe-lab-captures.test.ts holds
 * the recorded one frame by frame; this one holds a fresh recording to the classification).
 *
 * What rxe does here and IBTA leaves open is the `rxe` class (analysis/rxe-behaviours.ts): its
 * responder follows each RNR NAK with a sequence NAK for the same PSN (rxe_resp.c check_psn()), and
 * its requester goes on sending past the RNR NAK'd PSN until its RNR timer fires (rxe_req.c
 * rxe_requester()). Neither is a violation, and the requests rxe sends during the wait are not the
 * episode's retransmission: the rewind to the RNR NAK'd PSN is.
 *
 * @group interop
 */
import { type LabRun, type Step, GUEST_IP, HOST_IP, interopSkipReason, ipText, runLab } from './lab';
import { analyseRun, expectCleanCapture, expectConversations, expectExits, stepOf } from './checks';
import type { AnalysisResult } from '../../analysis/analyzer';
import { RxeBehaviourId } from '../../analysis/rxe-behaviours';
import { RESPONDER_RULES } from '../../analysis/gbn-checks';
import type { Violation } from '../../analysis/types';
import { analyzeCommand } from '../../cli/analyze-command';
import { memoryOutput } from '../../cli/output';
import { AethKind, NakCode, decodeSyndrome } from '../../packets/aeth';
import { decodeFrame } from '../../packets/decode';
import { readCapture } from '../../packets/pcap';
import * as fs from 'node:fs';

const skip = interopSkipReason();
const d = skip === null ? describe : describe.skip;
if (skip !== null) test.skip(`rxe RNR interop [skipped: ${skip}]`, () => undefined);

const FLAGS = '-m 256 -s 1024 -n 8';
const STEPS: Step[] = [
  // rxe's responder has one receive WQE; roce-ts's requester sends.
  {
    id: 1,
    guestRole: 'server',
    guest: `ib_send_bw -d rxe0 -x @GID@ ${FLAGS} -r 1`,
    host: `$ROCE perftest send $RXE_GUEST_IP -d $RXE_TAP ${FLAGS} --json --timeout 80`,
    timeoutS: 90,
  },
  // roce-ts's responder has one receive WQE; rxe's requester sends.
  {
    id: 2,
    guestRole: 'client',
    port: 18516,
    guest: `ib_send_bw -d rxe0 -x @GID@ ${FLAGS} -p 18516 @PEER@`,
    host: `$ROCE perftest send -d $RXE_TAP ${FLAGS} -p 18516 --rx-depth 1 --json --timeout 80`,
    timeoutS: 90,
  },
];

/** The requester's address of a conversation's flow. */
function requesterIp(r: AnalysisResult, conversation: number, side: 'a' | 'b'): string {
  const c = r.conversations.find((x) => x.id === conversation);
  if (c === undefined) throw new Error(`no conversation ${conversation}`);
  return c[side].ip;
}

/** RNR NAKs in the capture, by sender, and how many of them the next response from that sender follows with a sequence NAK for the same PSN. */
function rnrPairs(file: string): Record<string, { rnr: number; followedBySeqNak: number }> {
  const out: Record<string, { rnr: number; followedBySeqNak: number }> = {};
  const last = new Map<string, { rnr: boolean; psn: number }>();
  for (const rec of readCapture(fs.readFileSync(file)).records) {
    const f = decodeFrame(rec.data, rec.linkType);
    if (!f.roce || f.bth === null || f.aeth === null || f.ipv4 === null || f.bth.opcode !== 0x11) continue;
    const src = ipText(f.ipv4.src);
    const s = (out[src] ??= { rnr: 0, followedBySeqNak: 0 });
    const syn = decodeSyndrome(f.aeth.syndrome);
    const rnr = syn.kind === AethKind.RNR_NAK;
    const seqNak = syn.kind === AethKind.NAK && syn.value === NakCode.PSN_SEQUENCE_ERROR;
    if (rnr) s.rnr++;
    const prev = last.get(src);
    if (seqNak && prev?.rnr === true && prev.psn === f.bth.psn) s.followedBySeqNak++;
    last.set(src, { rnr, psn: f.bth.psn });
  }
  return out;
}

d('RNR against a one-deep receive queue, both ways: ib_send_bw against roce perftest send', () => {
  let run: LabRun;
  beforeAll(async () => {
    run = await runLab('rnr-send-bw', STEPS);
  }, 300_000);

  test('both runs complete; RNR NAKs from both responders, each followed by a sequence NAK for its PSN', () => {
    expect(run.console).toContain('RXE-END');
    expectCleanCapture(run.capture);
    for (const s of STEPS) expectExits(stepOf(run, s.id));
    const pairs = rnrPairs(run.capturePath);
    // rxe's responder and roce-ts's (which copies it) each NAK twice per refused message.
    for (const ip of [GUEST_IP, HOST_IP]) {
      expect(pairs[ip]?.rnr ?? 0).toBeGreaterThan(0);
      expect(pairs[ip]?.followedBySeqNak).toBe(pairs[ip]?.rnr);
    }
  });

  test('roce analyze: no violation by roce-ts, RNR episodes both ways, each resending from the RNR NAK’s PSN after its timer', () => {
    const r = analyseRun(run);
    expectConversations(
      run,
      r,
      STEPS.map((s) => ({ id: s.id, type: 'rc' as const })),
    );
    // Whose rule each violation is: the responder's rules judge the responder, the rest the requester.
    const subject = (v: Violation): string => {
      const c = r.conversations.find((x) => x.id === v.conversation);
      const side = RESPONDER_RULES.includes(v.rule) ? (v.requester === 'a' ? 'b' : 'a') : v.requester;
      return c?.[side].ip ?? '?';
    };
    expect(r.violations.filter((v) => subject(v) !== GUEST_IP)).toEqual([]);
    // rxe's own departures are a class of their own (retryFromStaleCompleterPsn: a second go-back-N
    // to a PSN acknowledged since, rxe_comp.c rxe_completer() / rxe_req.c req_retry()), not violations.
    expect(r.violations).toEqual([]);
    const rnrPsn = new Map<number, number>();
    for (const rec of readCapture(fs.readFileSync(run.capturePath)).records) {
      const f = decodeFrame(rec.data, rec.linkType);
      if (f.roce && f.bth !== null && f.aeth !== null && decodeSyndrome(f.aeth.syndrome).kind === AethKind.RNR_NAK) rnrPsn.set(rec.index, f.bth.psn);
    }
    for (const ip of [GUEST_IP, HOST_IP])
      expect(r.episodes.filter((e) => e.trigger === 'rnr' && requesterIp(r, e.conversation, e.requester) === ip).length).toBeGreaterThan(0);
    // Every RNR episode starts at the PSN its RNR NAK named (the requests rxe sends during its wait
    // are not the resend), after the NAK's timer.
    for (const e of r.episodes.filter((x) => x.trigger === 'rnr')) {
      expect({ episode: e.id, gapPsn: e.gapPsn, waited: (e.retransmitDelayNs ?? 0) >= (e.rnrTimerNs ?? 0) }).toEqual({
        episode: e.id,
        gapPsn: rnrPsn.get(e.triggerFrame ?? -1),
        waited: true,
      });
    }
  });

  test('the rxe class: sequence NAKs after RNR NAKs from both responders; rxe’s requester sending during its wait', () => {
    // The capture is qemu's filter-dump at the guest's NIC: the guest's requests as it sent them.
    const r = analyseRun(run, `host:${GUEST_IP}`);
    const seq = r.rxeBehaviours.filter((b) => b.behaviour === RxeBehaviourId.SEQ_NAK_AFTER_RNR_NAK);
    const pairs = rnrPairs(run.capturePath);
    expect(seq.length).toBe((pairs[GUEST_IP]?.followedBySeqNak ?? 0) + (pairs[HOST_IP]?.followedBySeqNak ?? 0));
    for (const b of seq) expect(b).toMatchObject({ class: 'rxe', by: 'responder', ibta: 'silent' });
    // Only rxe's requester sends past an RNR NAK'd PSN: roce-ts's waits (stack/requester.ts).
    for (const b of r.rxeBehaviours.filter((x) => x.behaviour === RxeBehaviourId.SENDS_DURING_RNR_WAIT)) {
      expect({ by: b.by, requester: requesterIp(r, b.conversation, b.requester) }).toEqual({ by: 'requester', requester: GUEST_IP });
    }
  });

  test('--fail-on any passes on the capture unless rxe broke a rule; --fail-on rxe fails on it', async () => {
    const any = memoryOutput();
    expect(await analyzeCommand(['--fail-on', 'any', run.capturePath], any)).toBe(analyseRun(run).violationCount > 0 ? 1 : 0);
    const rxe = memoryOutput();
    expect(await analyzeCommand(['--fail-on', 'rxe', run.capturePath], rxe)).toBe(1);
    expect(rxe.err).toMatch(/rxe seqNakAfterRnrNak: \d+ time/);
  });
});
