/**
 * `roce probe --pcap` held to `roce analyze`: every bundled scenario runs through the CLI with
 * --pcap, the analyzer reads the file at the capture point the run names (the DUT's NIC), and
 * where the two judge the same thing they must say the same:
 *  - nakGeneration: the analyzer's NAK episode at the skipped PSN, its NAK generation time, the
 *    NAKs for the gap, and `oneNakPerGap` (IBTA vol. 1 §9.7.5.2.2);
 *  - nakRetransmit and readRetry: the NAK (or implied NAK) episode, its resend delay and first
 *    PSN, and `retransmitFromNakPsn` (§9.7.5.2.6);
 *  - timeoutRetransmit: the timeout episode, its delay and first PSN, and
 *    `retransmitFromFirstUnacked` (§9.7.6.1.3);
 *  - retryCount: the timeout episodes at the lost PSN after the DUT's last progress;
 *  - rnrWait: each RNR episode, its wait and timer, and `rnrWaitRespected` (§9.7.5.2.8).
 * The events that break a rule on purpose are read as what they look like at the DUT's NIC: our
 * `skip` (a request never sent) and `drop-read-response` are losses before the capture point, so
 * the analyzer shows an episode whose lost copy it never saw and judges no rule of ours; a skip
 * inside the DUT-triggered go-back-N resend is the same, and its NAK generation time is counted
 * from the request past the skip, as the probe counts it. A withheld ACK that a later ACK covers
 * leaves the DUT nothing to recover: no figure verdict, no episode. A NAK that moves the DUT's
 * acknowledged PSN is progress: the resend it asks for is no retry, the timeouts after it are. A
 * second skip while the DUT waits for the first skipped PSN shows no gap of its own: no NAK, none.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { type AnalysisResult, type CapturePoint, analyzeFile } from '../../analysis/analyzer';
import { type Episode, RuleId, Trigger } from '../../analysis/types';
import { psnAdd } from '../../base/psn';
import { BUNDLED_SCENARIOS } from '../../apps/probe/bundled-scenarios';
import type { Figure } from '../../apps/probe/measurements';
import type { ProbeResult } from '../../apps/probe/probe-result';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-probe-agree-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

interface Run {
  result: ProbeResult & { pcap: { file: string; frames: number; capturePoint: string } };
  analysis: AnalysisResult;
  /** The requester's first PSN: relative PSN 0. */
  start: number;
}

/** `roce probe ARGS --pcap F --json`, then the analyzer on F at the capture point the run names. */
async function probeAndAnalyze(name: string, args: string[]): Promise<Run> {
  const file = path.join(dir, `${name}.pcap`);
  const o = memoryOutput();
  const code = await run(['probe', ...args, '--pcap', file, '--json'], o);
  expect(o.err).toBe('');
  expect(code).toBe(0);
  const result = JSON.parse(o.out) as Run['result'];
  expect(result.pcap).toEqual({ file, frames: expect.any(Number), capturePoint: 'host:198.18.0.2' });
  const analysis = analyzeFile(file, { capturePoint: result.pcap.capturePoint as CapturePoint, allFrames: true });
  expect(analysis.frames).toMatchObject({ total: result.pcap.frames, roce: result.pcap.frames, icrcBad: 0 });
  // Every frame on the wire: ours less those the events kept off it, and all of the DUT's.
  expect(result.pcap.frames).toBe(result.frames.tx + result.frames.rx);
  // The run starts with the requester's first request: its PSN is relative PSN 0.
  const first = analysis.frameResults[0]!;
  expect(first.opcode).toMatch(/REQUEST|FIRST|ONLY|FETCH_ADD|COMPARE_SWAP/);
  return { result, analysis, start: first.psn };
}

const rules = (a: AnalysisResult, rule: RuleId, psn: number): number => a.violations.filter((v) => v.rule === rule && v.psn === psn).length;

/** The figure's counterparts in the analysis, asserted equal. */
function agree(f: Figure, { analysis: a, start, result }: Run, rnrIndex: number): void {
  const P = psnAdd(start, f.psn);
  const at = (e: Episode): number => e.gapPsn;
  switch (f.kind) {
    case 'nakGeneration': {
      const ep = a.episodes.filter((e) => e.trigger === Trigger.NAK && at(e) === P);
      expect(ep).toHaveLength(1);
      // The copy the event kept off the wire is not in the capture: a loss before the capture point.
      expect(ep[0]!.lostFrame).toBeNull();
      expect(ep[0]!.nakGenerationNs).toBe(f.measuredNs);
      const naks = a.frameResults.filter((r) => r.flags.includes('nakSeqErr') && r.psn === P).length;
      expect(naks).toBe(f.value);
      expect(rules(a, RuleId.ONE_NAK_PER_GAP, P)).toBe(f.value === 1 ? 0 : f.value! - 1);
      expect(f.verdict).toBe(f.value === 1 && f.configured === f.psn ? 'pass' : 'fail');
      break;
    }
    case 'nakRetransmit':
    case 'readRetry': {
      const ep = a.episodes.find((e) => e.trigger === (f.kind === 'nakRetransmit' ? Trigger.NAK : Trigger.IMPLIED_NAK) && at(e) === psnAdd(start, f.value!));
      expect(ep).toBeDefined();
      expect(ep!.retransmitDelayNs).toBe(f.measuredNs);
      const broken = rules(a, RuleId.RETRANSMIT_FROM_NAK_PSN, P);
      expect(broken === 0).toBe(f.value === f.psn);
      if (f.kind === 'nakRetransmit') expect(f.verdict).toBe(broken === 0 ? 'pass' : 'fail');
      break;
    }
    case 'timeoutRetransmit': {
      const ep = a.episodes.find((e) => e.trigger === Trigger.TIMEOUT);
      expect(ep).toBeDefined();
      expect(at(ep!)).toBe(psnAdd(start, f.value!));
      // On this link all of a message's frames leave at one instant: the last frame before the
      // silence (the probe's start) and the last copy of the resent PSN (the analyzer's) coincide.
      expect(ep!.retransmitDelayNs).toBe(f.measuredNs);
      expect(a.violations.filter((v) => v.rule === RuleId.RETRANSMIT_FROM_FIRST_UNACKED)).toEqual([]);
      expect(f.verdict).toBe('pass');
      break;
    }
    case 'ackDelay': {
      // A timer that fired while our ACK was held is a timeout episode from the resend's PSN, with the
      // figure as its delay; an ACK in time leaves no episode at all.
      const eps = a.episodes.filter((e) => e.trigger === Trigger.TIMEOUT);
      if (f.measuredNs === null) expect(a.episodes).toEqual([]);
      else {
        expect(eps).toHaveLength(1);
        expect(at(eps[0]!)).toBe(psnAdd(start, f.value!));
        expect(eps[0]!.retransmitDelayNs).toBe(f.measuredNs);
        expect(a.violations.filter((v) => v.rule === RuleId.RETRANSMIT_FROM_FIRST_UNACKED)).toEqual([]);
      }
      expect(f.verdict).toBe('pass');
      break;
    }
    case 'retryCount': {
      // The resends after the DUT's last progress are timeouts at the lost PSN, each an episode.
      const eps = a.episodes.filter((e) => e.trigger === Trigger.TIMEOUT && at(e) === P);
      expect(eps).toHaveLength(f.value!);
      expect(Math.min(...eps.map((e) => e.retransmitDelayNs!))).toBeGreaterThanOrEqual(f.measuredNs!);
      // The DUT gave up: the message ends RETRY_EXC_ERR, those after it are flushed.
      expect(result.dutCompletions[f.qp]![0]).toBe('RETRY_EXC_ERR');
      expect(new Set(result.dutCompletions[f.qp]!.slice(1))).toEqual(new Set(result.dutCompletions[f.qp]!.length > 1 ? ['WR_FLUSH_ERR'] : []));
      break;
    }
    case 'rnrWait': {
      const ep = a.episodes.filter((e) => e.trigger === Trigger.RNR && at(e) === P)[rnrIndex];
      expect(ep).toBeDefined();
      expect(ep!.retransmitDelayNs).toBe(f.measuredNs);
      expect(ep!.rnrTimerNs).toBe(f.configured);
      expect(a.frameResults.find((x) => x.frame === ep!.firstRetransmitFrame)?.psn).toBe(psnAdd(start, f.value!));
      expect(rules(a, RuleId.RNR_WAIT_RESPECTED, P)).toBe(f.verdict === 'pass' ? 0 : 1);
      break;
    }
  }
}

test.each(BUNDLED_SCENARIOS.map((b) => b.name))('%s: the probe and roce analyze on its --pcap agree', async (name) => {
  const r = await probeAndAnalyze(name, ['--scenario', name]);
  expect(r.result.figures.length).toBeGreaterThan(0);
  let rnr = 0;
  for (const f of r.result.figures) agree(f, r, f.kind === 'rnrWait' ? rnr++ : 0);
  // The DUT is this stack: conformant, so neither judge finds fault with it.
  expect(r.result.figures.map((f) => f.verdict)).not.toContain('fail');
  expect(r.analysis.violations).toEqual([]);
  expect(r.analysis.rulesNotChecked).toEqual([]);
});

test("a skip inside the DUT's go-back-N resend: a second gap, NAKed one round trip after the request past it, by both judges", async () => {
  const file = path.join(dir, 'skip-in-resend.yml');
  fs.writeFileSync(
    file,
    `name: skip-in-resend
dut:
  role: responder
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
events:
  - type: skip
    psn: 4
    iter: 1
  - type: skip      # the resend of PSN 6 after the NAK of PSN 4
    psn: 6
    iter: 2
`,
  );
  const r = await probeAndAnalyze('skip-in-resend', [file]);
  expect(r.result.figures.map((f) => [f.psn, f.verdict, f.measuredNs])).toEqual([
    [4, 'pass', 4000],
    [6, 'pass', 4000],
  ]);
  for (const f of r.result.figures) agree(f, r, 0);
  // Our skips look, at the DUT's NIC, like requests lost before it: no rule of ours is judged, and the DUT broke none.
  expect(r.analysis.violations).toEqual([]);
  // Read without the capture point, the analyzer sees the requests lost before the capture by itself and judges no skip either.
  expect(analyzeFile(r.result.pcap.file).violations).toEqual([]);
});

test('a withheld ACK that a later ACK covers: nothing to recover, for both judges (ACKs are cumulative)', async () => {
  const file = path.join(dir, 'withheld-covered.yml');
  fs.writeFileSync(
    file,
    `name: withheld-covered
dut:
  role: requester
  tool: ib_write_bw
traffic:
  num-msgs-per-qp: 3
  message-size: 16384
  mtu: 1024
events:
  - type: withhold-ack   # the first message's ACK; the second's acknowledges it too
    psn: 15
`,
  );
  const r = await probeAndAnalyze('withheld-covered', [file]);
  expect(r.result.figures).toHaveLength(1);
  expect(r.result.figures[0]).toMatchObject({ kind: 'timeoutRetransmit', verdict: 'none', measuredNs: null });
  expect(r.result.figures[0]!.detail).toBe('our ACK of PSN 31 acknowledged PSN 15 too: the DUT had nothing to recover');
  expect(r.analysis.episodes).toEqual([]);
  expect(r.analysis.violations).toEqual([]);
  expect(r.result.dutCompletions).toEqual([['SUCCESS', 'SUCCESS', 'SUCCESS']]);
});

test("retry-exhaust with messages after the lost PSN: our NAK is the DUT's last progress, its resend no retry; the timeouts after it are retry_cnt, for both judges", async () => {
  const file = path.join(dir, 'retry-after-nak.yml');
  const yaml = BUNDLED_SCENARIOS.find((b) => b.name === 'retry-exhaust')!.yaml.replace(/^traffic:\n/m, 'traffic:\n  num-msgs-per-qp: 3\n');
  fs.writeFileSync(file, yaml.replace(/^name: .*$/m, 'name: retry-after-nak'));
  const r = await probeAndAnalyze('retry-after-nak', [file]);
  expect(r.result.figures.map((f) => [f.kind, f.verdict, f.value])).toEqual([
    ['nakRetransmit', 'pass', 3],
    ['retryCount', 'pass', 3],
  ]);
  for (const f of r.result.figures) agree(f, r, 0);
  expect(r.analysis.episodes.map((e) => e.trigger)).toEqual(['nak', 'timeout', 'timeout', 'timeout']);
  expect(r.analysis.violations).toEqual([]);
});

test('a second skip while the DUT waits for the first skipped PSN: no gap of its own, for both judges', async () => {
  const file = path.join(dir, 'skip-twice.yml');
  fs.writeFileSync(
    file,
    `name: skip-twice
dut:
  role: responder
  tool: ib_write_bw
traffic:
  message-size: 16384
  mtu: 1024
events:
  - type: skip
    psn: 4
  - type: skip      # the same first transmission: the DUT still waits for PSN 4
    psn: 6
`,
  );
  const r = await probeAndAnalyze('skip-twice', [file]);
  expect(r.result.figures.map((f) => [f.psn, f.verdict])).toEqual([
    [4, 'pass'],
    [6, 'none'],
  ]);
  expect(r.result.figures[1]!.detail).toMatch(/^the DUT was still waiting for PSN 4 when we skipped PSN 6/);
  agree(r.result.figures[0]!, r, 0);
  // One gap, one NAK: the go-back-N from PSN 4 sends PSN 6 again before the DUT could miss it.
  expect(r.analysis.episodes.map((e) => [e.trigger, e.gapPsn])).toEqual([['nak', psnAdd(r.start, 4)]]);
  expect(r.analysis.violations).toEqual([]);
});
