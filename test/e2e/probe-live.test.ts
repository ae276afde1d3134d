/**
 * `roce probe` on a live link where the truth is known: the DUT is this stack's `roce perftest`
 * (the same engine the in-memory runner measures) in one network namespace, the probe in the
 * other, joined by a veth pair, both over AF_PACKET and AF_XDP. Each bundled scenario's DUT
 * command runs as `roce perftest` with the same flags, in the role the scenario gives it, and the
 * figures say what the engine does: one NAK for a gap, naming the skipped PSN; the resend from
 * the NAK's PSN; a timeout resend from the first PSN we had not acknowledged, no earlier than
 * 4.096 µs × 2^timeout after the DUT's last frame; RNR resends of the NAK'd PSN after the timer;
 * a READ retry from the missing PSN at the address and length left; retry_cnt (perftest's 7)
 * resends after the last progress, after which the DUT gives up and the probe says the run
 * ended without it, with the figures kept. Times are not asserted beyond the rules: the machine
 * is shared and slow.
 *
 * @group netns
 */
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, HOST_DRIVERS, startRoce } from './harness';
import { bundledScenario } from '../../apps/probe/bundled-scenarios';
import { localAckTimeoutNs } from '../../stack/qp-attributes';
import { RNR_TIMER_USEC } from '../../packets/aeth';
import { type CapturePoint, analyzeFile } from '../../analysis/analyzer';
import { Trigger } from '../../analysis/types';
import { iterateCapture } from '../../packets/pcap';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const reason = e2eSkipReason();
const t = testUnless(reason);
const net = pairPerFile(reason, { mtu: 1500 });
let port = 21000 + Math.floor(Math.random() * 20000);

interface Fig {
  kind: string;
  psn: number;
  measuredNs: number | null;
  configured: number | null;
  value: number | null;
  verdict: string;
  detail: string;
}
interface ProbeJson {
  ok: boolean;
  figures: Fig[];
  timestamps: { errorNs: number; where: string };
  dut: { driver: string };
  pcap?: { file: string; frames: number; capturePoint: string };
  live: { error: string | null; dutCommand: string; messagesPerQp: number; warnings: string[]; ourCompletions: string[][] };
  doctor: { check: string; status: string }[] | null;
}

/** Writes `yaml` to a file the probe reads. */
function scenarioFile(name: string, yaml: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probe-live-'));
  const f = path.join(dir, `${name}.yml`);
  fs.writeFileSync(f, yaml);
  return f;
}

/**
 * Runs the probe on scenario `file` in nsB and the DUT (`roce perftest VERB` with the flags the
 * probe's DUT command names) in nsA, in the scenario's roles; both results.
 */
async function probeAgainstStack(
  driver: 'xdp' | 'packet',
  file: string,
  role: 'requester' | 'responder',
  verb: string,
  dutFlags: readonly string[],
  probeExtra: readonly string[] = [],
): Promise<{ probe: ProbeJson; probeCode: number | null; dut: { code: number | null; text: string } }> {
  const p = net();
  const pt = String(port++);
  const common = ['--driver', driver, '--port', pt, '--json'];
  const probe = startRoce(p.nsB, ['probe', file, '--dev', p.ifB, ...common, ...probeExtra, ...(role === 'responder' ? ['--dut', p.ipA] : [])], 40_000);
  const dutArgs = ['perftest', verb, ...(role === 'requester' ? [p.ipB] : []), '--dev', p.ifA, ...dutFlags, ...common, '--timeout', '20'];
  const dut = startRoce(p.nsA, dutArgs, 40_000);
  const [pr, dr] = await Promise.all([probe.done, dut.done]);
  if (pr.json === null) throw new Error(`probe: ${explain(pr)}\nDUT: ${explain(dr)}`);
  return { probe: pr.json as unknown as ProbeJson, probeCode: pr.code, dut: { code: dr.code, text: explain(dr) } };
}

/** The DUT's flags for a scenario, as the probe's DUT command names them: -s, -n (at least 5), -m, -u. */
function flagsOf(yaml: string): readonly string[] {
  const s = /message-size: (\d+)/.exec(yaml);
  const m = /mtu: (\d+)/.exec(yaml);
  const u = /min-retransmit-timeout: (\d+)/.exec(yaml);
  const n = /num-msgs-per-qp: (\d+)/.exec(yaml);
  return ['-s', s?.[1] ?? '65536', '-n', String(Math.max(5, Number(n?.[1] ?? 1))), '-m', m?.[1] ?? '1024', '-u', u?.[1] ?? '14'];
}

const bundled = (name: string): string => bundledScenario(name)?.yaml ?? '';

describe('roce probe against roce perftest over a veth pair', () => {
  for (const [driver, label] of HOST_DRIVERS) {
    t(
      `${label}: nak-generation (DUT responder) and nak-retransmit (DUT requester): one NAK naming the skipped PSN; the resend from the NAK's PSN`,
      async () => {
        const y1 = bundled('nak-generation');
        const g = await probeAgainstStack(driver, scenarioFile('nak-generation', y1), 'responder', 'write', flagsOf(y1));
        expect(g.probeCode).toBe(0);
        expect(g.dut.code).toBe(0);
        expect(g.probe.dut.driver).toBe(driver);
        expect(g.probe.live.error).toBeNull();
        expect(g.probe.live.dutCommand).toMatch(/^ib_write_bw -d DEV -x GID_INDEX -s 16384 -n 5 -m 1024 -u 14 -p \d+ -F$/);
        // The checks before the run passed this correct setup, the DUT's server (started with us) taking UDP 4791 by the time they ended.
        expect(g.probe.doctor?.map((c) => c.check)).toEqual(['interface', 'mtu', 'gids', 'neighbour', 'roce-port']);
        expect(g.probe.doctor?.filter((c) => c.status === 'problem')).toEqual([]);
        expect(g.probe.figures).toHaveLength(1);
        expect(g.probe.figures[0]).toMatchObject({ kind: 'nakGeneration', psn: 4, configured: 4, value: 1, verdict: 'pass' });
        // Our requester's five messages all completed (the DUT's NAK made us go back to PSN 4).
        expect(g.probe.live.ourCompletions).toEqual([['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']]);

        const y2 = bundled('nak-retransmit');
        const pcap = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'probe-live-pcap-')), 'run.pcap');
        const r = await probeAgainstStack(driver, scenarioFile('nak-retransmit', y2), 'requester', 'write', flagsOf(y2), ['--pcap', pcap]);
        expect(r.probeCode).toBe(0);
        // The live capture is the DUT's NIC's view: the analyzer finds the NAK episode at the figure's PSN, and no violation of the DUT's.
        expect(r.probe.pcap).toMatchObject({ file: pcap, capturePoint: expect.stringMatching(/^host:198\.18\./) });
        const a = analyzeFile(pcap, { capturePoint: r.probe.pcap!.capturePoint as CapturePoint });
        expect(a.violations).toEqual([]);
        // One NAK, and the resend from its PSN. Which of the two caused the resend is the probe's to say (it
        // knows the NAK caused it): the analyzer takes a NAK unanswered for 500 µs or 8 round trips as
        // ignored, and a software DUT busy sending may take longer, so the episode may read as a timeout.
        expect(a.flagCounts.nakSeqErr).toBe(1);
        expect(a.episodes.some((e) => e.trigger === Trigger.NAK || e.trigger === Trigger.TIMEOUT)).toBe(true);
        expect(r.dut.code).toBe(0);
        expect(r.probe.figures).toHaveLength(1);
        expect(r.probe.figures[0]).toMatchObject({ kind: 'nakRetransmit', psn: 4, configured: 4, value: 4, verdict: 'pass' });
        // The run moved perftest's minimum of 5 messages, and says so.
        expect(r.probe.live.messagesPerQp).toBe(5);
        expect(r.probe.live.warnings.join(' ')).toMatch(/at least 5 messages per QP/);
        expect(r.probe.timestamps.errorNs).toBeGreaterThanOrEqual(0);
        // AF_PACKET hands over the kernel's receive stamps; AF_XDP's frames take the poll's time.
        expect(r.probe.timestamps.where).toMatch(driver === 'packet' ? /kernel's receive stamp/ : /polling delay/);
        // Either way the capture is in time order (a stamp may be earlier than frames sent before the poll).
        const times = [...iterateCapture(fs.readFileSync(pcap))].map((x) => x.timestampNs);
        expect(times.every((t, i) => i === 0 || t >= (times[i - 1] as bigint))).toBe(true);
      },
      90_000,
    );

    t(
      `${label}: timeout-tail-drop with 5 messages: the DUT resends from the first PSN we had not acknowledged, no earlier than its timeout`,
      async () => {
        // Timeout 15 (134 ms): far above what a loaded machine takes to acknowledge a message.
        const y = bundled('timeout-tail-drop')
          .replace(/^traffic:\n/m, 'traffic:\n  num-msgs-per-qp: 5\n')
          .replace(/min-retransmit-timeout: 12/, 'min-retransmit-timeout: 15')
          .replace(/^( {4}psn: )15/m, '$179');
        const r = await probeAgainstStack(driver, scenarioFile('tail', y), 'requester', 'write', flagsOf(y));
        expect(r.probeCode).toBe(0);
        const [f] = r.probe.figures;
        expect(f).toMatchObject({ kind: 'timeoutRetransmit', psn: 79, configured: localAckTimeoutNs(15), verdict: 'pass' });
        // Each 16-packet message asks for an ACK on its last packet: 0..63 were acknowledged, the resend starts at 64.
        expect(f!.value).toBe(64);
        // The verdict judges earliness against the timer's earliest start; the figure, from the DUT's
        // last frame, may be shorter by right (that frame may have left its sender after the timer started).
        expect(f!.measuredNs!).toBeGreaterThan(0);
      },
      90_000,
    );

    t(
      `${label}: duplicate-atomic (DUT responder, ib_atomic_bw): the copy of our fetch-and-add answered with the original value, the add applied once`,
      async () => {
        const y = bundled('duplicate-atomic');
        const r = await probeAgainstStack(driver, scenarioFile('duplicate-atomic', y), 'responder', 'atomic', flagsOf(y));
        expect(r.probeCode).toBe(0);
        expect(r.dut.code).toBe(0);
        expect(r.probe.live.error).toBeNull();
        expect(r.probe.live.dutCommand).toMatch(/^ib_atomic_bw -d DEV -x GID_INDEX -s 8 -n 5 -m 1024 -u 14 -p \d+ -F$/);
        expect(r.probe.figures).toHaveLength(1);
        expect(r.probe.figures[0]).toMatchObject({ kind: 'duplicateResponse', psn: 2, configured: 2, value: 2, verdict: 'pass' });
        // perftest's server buffer starts zeroed and each of our atomics adds 1 to one word: PSN 2 returns 2, so does its copy, and PSN 3 finds 3.
        expect(r.probe.figures[0]!.detail).toMatch(
          /original value 0x2 \(the first answer: 0x2\); the next atomic on its word \(PSN 3\) found 0x3, executed once$/,
        );
        expect(r.probe.live.ourCompletions).toEqual([['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']]);
      },
      90_000,
    );

    t(
      `${label}: rnr-wait and read-retry (DUT requester): RNR resends of the NAK'd PSN after the timer; the READ retry from the missing PSN`,
      async () => {
        const y1 = bundled('rnr-wait');
        const n = await probeAgainstStack(driver, scenarioFile('rnr', y1), 'requester', 'send', flagsOf(y1));
        expect(n.probeCode).toBe(0);
        expect(n.dut.code).toBe(0);
        const rnr = n.probe.figures.filter((f) => f.kind === 'rnrWait');
        expect(rnr).toHaveLength(2);
        for (const f of rnr) {
          expect(f).toMatchObject({ psn: 0, value: 0, verdict: 'pass', configured: RNR_TIMER_USEC[14]! * 1000 });
          // From our NAK (sent: no delay) to the resend (received: late, never early).
          expect(f.measuredNs!).toBeGreaterThanOrEqual(RNR_TIMER_USEC[14]! * 1000);
        }
        // Every message of the DUT arrived in a receive of ours (those after the held one posted once the NAKs were sent).
        expect(n.probe.live.ourCompletions).toEqual([['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']]);

        const y2 = bundled('read-retry');
        const r = await probeAgainstStack(driver, scenarioFile('read', y2), 'requester', 'read', flagsOf(y2));
        expect(r.probeCode).toBe(0);
        expect(r.dut.code).toBe(0);
        expect(r.probe.figures).toHaveLength(1);
        expect(r.probe.figures[0]).toMatchObject({ kind: 'readRetry', psn: 6, value: 6, verdict: 'pass' });
        expect(r.probe.figures[0]!.detail).toMatch(/VA \+6144 \(expected \+6144\), length 10240 \(expected 10240\)/);
      },
      90_000,
    );

    t(
      `${label}: seq-nak, delay-ack and cnp on a live DUT: the resend from the NAK's PSN; the timer firing while our ACK is held; the rate cut by our CNP, and none where the DUT does not cut`,
      async () => {
        const seq = bundled('seq-nak').replace(/^traffic:\n/m, 'traffic:\n  num-msgs-per-qp: 5\n');
        const s = await probeAgainstStack(driver, scenarioFile('seq-nak', seq), 'requester', 'write', flagsOf(seq));
        expect(s.probeCode).toBe(0);
        expect(s.probe.figures).toHaveLength(1);
        expect(s.probe.figures[0]).toMatchObject({ kind: 'nakRetransmit', value: s.probe.figures[0]!.psn, verdict: 'pass' });

        // Timeout 14 (67 ms) and the ACK held 300 ms: the DUT's timer must fire, whatever the polling delay.
        const held = [
          'name: held',
          'dut:',
          '  role: requester',
          '  tool: ib_write_bw',
          'traffic:',
          '  num-msgs-per-qp: 5',
          '  message-size: 4096',
          '  mtu: 1024',
          '  min-retransmit-timeout: 14',
          'events:',
          '  - type: delay-ack',
          '    psn: 19',
          '    delay-us: 300000',
          '',
        ].join('\n');
        const d = await probeAgainstStack(driver, scenarioFile('held', held), 'requester', 'write', flagsOf(held));
        expect(d.probeCode).toBe(0);
        expect(d.probe.figures[0]).toMatchObject({ kind: 'ackDelay', verdict: 'pass', value: 16 });

        // The DUT paced at 20 Mb/s by its DCQCN reaction point (well below what a loaded machine sends, so
        // the pacer, not the CPU, sets its rate), recovering too slowly to show in the run (rp_time_reset
        // 10 s, rp_byte_reset 1 GB): one CNP at the start of message 3 halves its rate.
        const cnp = [
          'name: cnp-live',
          'dut:',
          '  role: requester',
          '  tool: ib_write_bw',
          'traffic:',
          '  num-msgs-per-qp: 5',
          '  message-size: 1048576',
          '  mtu: 1024',
          '  min-retransmit-timeout: 18',
          'events:',
          '  - type: cnp',
          '    psn: 2048',
          '',
        ].join('\n');
        const cc = (p: string): string[] => ['--cc', 'dcqcn', '--cc-line-rate', '20', '--cc-param', `rp_time_reset=10000000,rp_byte_reset=1000000000${p}`];
        const c = await probeAgainstStack(driver, scenarioFile('cnp', cnp), 'requester', 'write', [...flagsOf(cnp), ...cc('')]);
        expect(c.probeCode).toBe(0);
        expect(c.probe.figures).toHaveLength(1);
        const cut = c.probe.figures[0]!;
        expect(cut).toMatchObject({ kind: 'rateCut', verdict: 'pass' });
        expect(cut.value!).toBeGreaterThan(35);
        expect(cut.value!).toBeLessThan(65);
        // rp_min_dec_fac 100: a reaction point that never cuts, at the same paced rate.
        const n = await probeAgainstStack(driver, scenarioFile('cnp', cnp), 'requester', 'write', [...flagsOf(cnp), ...cc(',rp_min_dec_fac=100')]);
        expect(n.probeCode).toBe(0);
        expect(n.probe.figures[0]).toMatchObject({ kind: 'rateCut', verdict: 'none' });
        expect(n.probe.figures[0]!.detail).toMatch(/^no cut beyond the rate's own variation/);
      },
      120_000,
    );

    t(
      `${label}: -R (the RDMA CM, as perftest -R): retry_cnt 3 reaches the DUT through --retry_count, and it resends 3 times after its last progress`,
      async () => {
        const y = [
          'name: exhaust-cm',
          'dut:',
          '  role: requester',
          '  tool: ib_write_bw',
          'traffic:',
          '  num-msgs-per-qp: 5',
          '  message-size: 4096',
          '  mtu: 1024',
          '  min-retransmit-timeout: 12',
          '  max-retransmit-retry: 3',
          'events:',
          '  - type: drop',
          '    psn: 19',
          '    iter: all',
          '',
        ].join('\n');
        const r = await probeAgainstStack(driver, scenarioFile('exhaust-cm', y), 'requester', 'write', [...flagsOf(y), '-R', '--retry_count', '3'], ['-R']);
        expect(r.probe.live.dutCommand).toMatch(/ -R --retry_count 3 -F /);
        expect(r.dut.code).toBe(1);
        expect(r.probeCode).toBe(1);
        const rc = r.probe.figures.find((f) => f.kind === 'retryCount');
        expect(rc).toMatchObject({ psn: 19, configured: 3, value: 3, verdict: 'pass' });
        expect(r.probe.live.warnings.join(' ')).not.toMatch(/retry_cnt/);
      },
      90_000,
    );

    t(
      `${label}: every try of the DUT's last PSN lost: retry_cnt 7 resends after its last progress, then the DUT gives up and the probe ends saying why, figures kept`,
      async () => {
        const y = [
          'name: exhaust',
          'dut:',
          '  role: requester',
          '  tool: ib_write_bw',
          'traffic:',
          '  num-msgs-per-qp: 5',
          '  message-size: 4096',
          '  mtu: 1024',
          '  min-retransmit-timeout: 12',
          'events:',
          '  - type: drop',
          '    psn: 19',
          '    iter: all',
          '',
        ].join('\n');
        const r = await probeAgainstStack(driver, scenarioFile('exhaust', y), 'requester', 'write', flagsOf(y));
        // The DUT's work request ended in RETRY_EXC_ERR: its tool fails, and the exchange with it ends.
        expect(r.dut.code).toBe(1);
        expect(r.probeCode).toBe(1);
        expect(r.probe.ok).toBe(false);
        expect(r.probe.live.error).not.toBeNull();
        const rc = r.probe.figures.find((f) => f.kind === 'retryCount');
        // The verdict holds every try to its timer chain; one gap may be short by right (the DUT, a
        // process on this loaded host, may send a try late and the next on time: 1.4 ms in one run).
        expect(rc).toMatchObject({ psn: 19, configured: 7, value: 7, verdict: 'pass' });
        expect(rc!.measuredNs!).toBeGreaterThan(0);
      },
      90_000,
    );
  }
});
