/** Assertions shared by the interop tests. */
import {
  type CaptureCheck,
  type LabRun,
  type StepResult,
  type TcpConversation,
  GUEST_IP,
  HOST_IP,
  describe as describeStep,
  ipText,
  pingpongNumbers,
  perftestRow,
} from './lab';
import * as fs from 'node:fs';
import { readCapture } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';
import { AethKind, decodeSyndrome } from '../../packets/aeth';
import { opcodeName } from '../../packets/opcodes';
import { analyzeFile, type AnalysisResult, type CapturePoint } from '../../analysis/analyzer';
import type { Conversation } from '../../analysis/conversations';
import { run as runCli } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import type { ReplaySummary } from '../../apps/replay/differences';

export function hex(v: number, d: number): string {
  return v.toString(16).padStart(d, '0');
}

/** rc_pingpong's wire GID: the 16 bytes as four big-endian words, %08x each. */
export function wireGid(ipv4: string): string {
  const b = ipv4.split('.').map(Number);
  return `00000000000000000000ffff${b.map((x) => hex(x, 2)).join('')}`;
}

/** The whole capture of a boot: RoCE frames, every one decoded with a valid ICRC. */
export function expectCleanCapture(c: CaptureCheck): void {
  expect(c.firstProblems).toEqual([]);
  expect(c.roce).toBeGreaterThan(0);
  expect(c.malformed).toBe(0);
  expect(c.badIcrc).toBe(0);
}

/**
 * The TCP connections on `port` that carried a payload, in the order they opened, when there are
 * `count` (one per step). Otherwise the failure lists each: its ends, first frame and bytes.
 */
export function tcpConversationsOn(run: LabRun, port: number, count: number): TcpConversation[] {
  const convs = run.capture.tcp.filter((t) => t.port === port);
  if (convs.length !== count)
    expect(
      convs.map((t) => `${t.client} > ${t.server} from frame ${t.firstFrame}: ${t.toServer.length} B to the server, ${t.toClient.length} B back`),
    ).toHaveLength(count);
  return convs;
}

export function stepOf(run: LabRun, id: number): StepResult {
  const s = run.steps.get(id);
  if (s === undefined) throw new Error(`step ${id} has no result`);
  return s;
}

/** Exit statuses of both ends (the message carries both outputs when it fails). */
export function expectExits(s: StepResult): void {
  const both = { guest: s.guestRc, host: s.hostRc };
  if (both.guest !== 0 || both.host !== 0) throw new Error(`step ${s.id} failed: ${describeStep(s)}`);
  expect(both).toEqual({ guest: 0, host: 0 });
}

export interface PingpongExpect {
  type: 'rc' | 'uc' | 'ud';
  size: number;
  iters: number;
  mtu: number;
  /** Who is the server: the guest (rdma-core tool) or the host (roce-ts). */
  guestRole: 'server' | 'client';
}

/**
 * A pingpong step: both exit 0, both count size x iters x 2 bytes, roce-ts checked every
 * message it received (-c), the tool found no invalid page, the exchange on the wire is
 * byte for byte what rc_pingpong sends, and RoCE frames went to both QPs.
 */
export function expectPingpong(run: LabRun, s: StepResult, e: PingpongExpect): void {
  expectExits(s);
  expect(s.guestOut).not.toMatch(/invalid data/);
  const g = pingpongNumbers(s.guestOut);
  expect(g).toEqual({ bytes: e.size * e.iters * 2, iters: e.iters });
  const j = s.hostJson;
  expect(j).not.toBeNull();
  if (j === null) return;
  expect(j).toMatchObject({
    ok: true,
    test: `${e.type}_pingpong`,
    role: e.guestRole === 'server' ? 'client' : 'server',
    msgSize: e.size,
    iterations: e.iters,
    bytes: g?.bytes,
    messages: 2 * e.iters,
  });
  if (e.type !== 'ud') expect(j['mtu']).toBe(e.mtu);
  expect(j['verify']).toEqual({ enabled: true, messagesChecked: e.iters, bytesChecked: e.iters * e.size, mismatches: 0 });
  const lat = j['latencyUs'] as Record<string, number> | null;
  expect(lat).not.toBeNull();
  for (const k of ['min', 'p50', 'p99', 'max']) expect(lat?.[k]).toBeGreaterThan(0);
  expect(j['gbps'] as number).toBeGreaterThan(0);
  // The guest's local-address line names the QPN and PSN the exchange must carry.
  const m = /local address: {2}LID 0x([0-9a-f]{4}), QPN 0x([0-9a-f]{6}), PSN 0x([0-9a-f]{6})[,:] GID (\S+)/.exec(s.guestOut);
  expect(m).not.toBeNull();
  const local = j['local'] as { qpn: number; psn: number };
  const remote = j['remote'] as { qpn: number; psn: number };
  expect(remote.qpn).toBe(parseInt(m?.[2] ?? '', 16));
  expect(remote.psn).toBe(parseInt(m?.[3] ?? '', 16));
  const guestMsg = `0000:${hex(remote.qpn, 6)}:${hex(remote.psn, 6)}:${wireGid(GUEST_IP)}\0`;
  const hostMsg = `0000:${hex(local.qpn, 6)}:${hex(local.psn, 6)}:${wireGid(HOST_IP)}\0`;
  const [clientMsg, serverMsg] = e.guestRole === 'server' ? [hostMsg, guestMsg] : [guestMsg, hostMsg];
  const conv = run.capture.tcp.find((t) => t.toServer.subarray(0, 52).toString('latin1') === clientMsg);
  expect(conv).toBeDefined();
  expect(conv?.toServer.toString('latin1')).toBe(`${clientMsg}done\0`);
  expect(conv?.toClient.toString('latin1')).toBe(serverMsg);
  expect(run.capture.toQp[`${GUEST_IP}/${remote.qpn}`] ?? 0).toBeGreaterThanOrEqual(e.iters);
  expect(run.capture.toQp[`${HOST_IP}/${local.qpn}`] ?? 0).toBeGreaterThanOrEqual(e.iters);
}

/**
 * rc_pingpong under loss has a race at its very end that neither end can close: once the
 * guest's tool has its last completion it exits and destroys its QP, so if the ACK of the
 * stack's final SEND is lost (here: dropped by the stack's own receive fault injector) every
 * retransmission goes to a QP that no longer exists, and the stack's SEND ends in
 * RETRY_EXC_ERR (rc_pingpong against rc_pingpong fails the same way). Accept exactly that:
 * the guest finished every iteration with correct data, the failed PSN is the first of the
 * stack's last message, and the capture (taken before the drop) shows rxe's ACK of that
 * message. Anything else must pass expectPingpong.
 */
export function expectPingpongUnderLoss(run: LabRun, s: StepResult, e: PingpongExpect): void {
  const j = s.hostJson;
  const err = j !== null && j['ok'] === false ? String(j['error']) : '';
  const failed = /RETRY_EXC_ERR .* at PSN (\d+)/.exec(err);
  if (s.guestRc !== 0 || failed === null) {
    expectPingpong(run, s, e);
    return;
  }
  expect(s.guestOut).not.toMatch(/invalid data/);
  expect(pingpongNumbers(s.guestOut)).toEqual({ bytes: e.size * e.iters * 2, iters: e.iters });
  const m = /remote address: {1,2}LID 0x[0-9a-f]{4}, QPN 0x([0-9a-f]{6}), PSN 0x([0-9a-f]{6})/.exec(s.guestOut);
  expect(m).not.toBeNull();
  const hostQpn = parseInt(m?.[1] ?? '', 16);
  const pkts = Math.ceil(e.size / e.mtu);
  const lastMsgPsn = (parseInt(m?.[2] ?? '', 16) + (e.iters - 1) * pkts) & 0xffffff;
  expect(Number(failed[1])).toBe(lastMsgPsn);
  // As client, the stack can tell from the replies that its last message was delivered, and says so.
  if (e.guestRole === 'server') expect(err).toMatch(/all \d+ replies arrived, so the peer received this last message/);
  const ackPsn = (lastMsgPsn + pkts - 1) & 0xffffff;
  let acked = false;
  const cap = readCapture(fs.readFileSync(run.capturePath));
  for (const rec of cap.records) {
    const d = decodeFrame(rec.data, rec.linkType);
    if (!d.roce || d.bth === null || d.aeth === null || d.ipv4 === null || opcodeName(d.bth.opcode) !== 'RC_ACKNOWLEDGE') continue;
    if (d.bth.destQp === hostQpn && d.bth.psn === ackPsn && decodeSyndrome(d.aeth.syndrome).kind === AethKind.ACK && ipText(d.ipv4.src) === GUEST_IP)
      acked = true;
  }
  expect({ rxeAckedTheLastMessage: acked }).toEqual({ rxeAckedTheLastMessage: true });
}

/**
 * The layout of one direction of a perftest exchange: its length, where each key message
 * (%04x:%04x:%06x:%06x:%08x:%016llx: + 16 x %02x: + %08x: + NUL) starts, and whether it ends
 * with "done\0". Binary messages (system data, reports) differ in value per run and are
 * compared by length only.
 */
export function oobShape(b: Buffer): string {
  // The trailing "done\0" is left out: ctx_close_connection writes it after the last exchange and
  // nobody reads it, so whether it reaches the wire before the peer's close (and its RST) is a race,
  // for the real perftest as for roce-ts (both were seen either way in the lab).
  const whole = b.toString('latin1');
  const text = whole.endsWith('done\0') ? whole.slice(0, -5) : whole;
  const re = /[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{6}:[0-9a-f]{6}:[0-9a-f]{8}:[0-9a-f]{16}:(?:[0-9a-f]{2}:){16}[0-9a-f]{8}:\0/g;
  const keys: number[] = [];
  for (let m = re.exec(text); m !== null; m = re.exec(text)) keys.push(m.index);
  return `${text.length} bytes before any closing "done"; key messages at ${keys.join(',')}`;
}

export interface PerftestExpect {
  verb: 'write' | 'read' | 'send' | 'atomic';
  lat: boolean;
  size: number;
  /** Iterations, or null in duration mode. */
  iters: number | null;
  guestRole: 'server' | 'client';
  /** perftest -q (default 1): every QP pair must carry frames, and the reports count iters × qps. */
  qps?: number;
  /** perftest -c (default RC): a UC or UD bandwidth test's frames all go one way. */
  conn?: 'RC' | 'UC' | 'UD';
  /** perftest -D seconds: the counts are what each side measured, not fixed. */
  duration?: number | null;
  /** perftest -b: both sides send; each prints the sum of both directions. */
  duplex?: boolean;
}

/** A perftest step: both exit 0, both reports agree on size and iterations (and bytes where roce-ts measures). */
export function expectPerftest(run: LabRun, s: StepResult, e: PerftestExpect): void {
  expectExits(s);
  const tool = `ib_${e.verb}_${e.lat ? 'lat' : 'bw'}`;
  const j = s.hostJson;
  expect(j).not.toBeNull();
  if (j === null) return;
  const qps = e.qps ?? 1;
  const conn = e.conn ?? 'RC';
  const duration = e.duration ?? null;
  expect(j).toMatchObject({
    ok: true,
    test: tool,
    role: e.guestRole === 'server' ? 'client' : 'server',
    msgSize: e.size,
    qps,
    connection: conn,
    durationS: duration,
    peerVersion: expect.any(String),
  });
  if (e.iters !== null) expect(j['iterations']).toBe(e.iters);
  expect((j['problems'] as unknown[]).length).toBe(0);
  const row = perftestRow(s.guestOut);
  // Every end prints its report but the ib_read_lat and ib_atomic_lat servers, which only answer.
  if (!(e.lat && (e.verb === 'read' || e.verb === 'atomic') && e.guestRole === 'server')) {
    expect(row).not.toBeNull();
    expect(row?.bytes).toBe(e.size);
    // print_full_bw_report: the #iterations column is iters × num_of_qps (in duration mode, what was measured).
    if (e.iters !== null) expect(row?.iters).toBe(e.lat ? e.iters : e.iters * qps);
    else expect(row?.iters).toBeGreaterThan(0);
    // The tool's server of a one-sided test prints what roce-ts's client measured.
    if (duration !== null && e.guestRole === 'server' && e.verb !== 'send') expect(row?.iters).toBe(j['messages']);
  }
  if (!e.lat && ((e.guestRole === 'server' && e.verb !== 'send') || e.duplex === true)) {
    // The tool's server prints the bandwidth roce-ts's client reported to it (MB = 2^20 bytes); with
    // -b both print the sum of both directions (print_full_bw_report with the peer's report).
    const avg = /^\s*\d+\s+\d+\s+[\d.]+\s+([\d.]+)/m.exec(
      s.guestOut
        .split('\n')
        .slice(s.guestOut.split('\n').findIndex((l) => /#bytes/.test(l)) + 1)
        .join('\n'),
    );
    const both = (j['bidirectional'] as { gbpsBothWays: number } | null)?.gbpsBothWays;
    const mbps = ((e.duplex === true ? (both ?? 0) : (j['gbps'] as number)) * 1e9) / 8 / 1048576;
    expect(avg).not.toBeNull();
    expect(Math.abs(Number(avg?.[1]) - mbps)).toBeLessThanOrEqual(Math.max(0.02, mbps * 0.02));
  }
  if (!e.lat) {
    // Bytes moved: size x iterations on both sides (roce-ts's server of WRITE/READ/atomic takes the client's report).
    if (e.iters !== null) {
      expect(j['bytes']).toBe(e.size * e.iters * qps);
      expect(j['messages']).toBe(e.iters * qps);
    } else {
      expect(j['messages'] as number).toBeGreaterThan(0);
      expect(j['bytes']).toBe(e.size * (j['messages'] as number));
    }
  } else if (j['measured'] === 'local') {
    const lat = j['latencyUs'] as Record<string, number>;
    for (const k of ['min', 'p50', 'p99', 'max']) expect(lat[k]).toBeGreaterThan(0);
  }
  // Every QP pair carried frames both ways (a UC or UD bandwidth test's toward the receiver; that
  // nothing went the other way is the conversations' check, as roce-ts's QPNs repeat across steps).
  const pairs = j['qpPairs'] as { local: { qpn: number }; remote: { qpn: number } }[];
  expect(pairs.length).toBe(qps);
  if (!run.captured) return;
  const oneWay = !e.lat && conn !== 'RC';
  for (const p of pairs) {
    if (!oneWay || e.guestRole === 'server') expect(run.capture.toQp[`${GUEST_IP}/${p.remote.qpn}`] ?? 0).toBeGreaterThan(0);
    if (!oneWay || e.guestRole === 'client') expect(run.capture.toQp[`${HOST_IP}/${p.local.qpn}`] ?? 0).toBeGreaterThan(0);
  }
}

// ---------------------------------------------------------------------------------------------
// `roce analyze` and `roce replay` on a boot's capture (no extra boot: the capture is already there).

export interface StepKind {
  id: number;
  type: 'rc' | 'uc' | 'ud';
  /** perftest -q: the step's QP pairs are each a conversation (the host's JSON `qpPairs`). */
  qps?: number;
  /** A UC or UD bandwidth test: only the sender sends (one UC conversation, toward the receiver). */
  oneWay?: 'host-sends' | 'guest-sends' | undefined;
}

/** `roce analyze` of the boot's capture, with the capture point the lab has (frames as sent, for a lossy boot). */
export function analyseRun(run: LabRun, capturePoint: CapturePoint = 'unknown'): AnalysisResult {
  return analyzeFile(run.capturePath, { capturePoint });
}

const endpointText = (ip: string, qpn: number | null): string => `${ip}#${qpn === null ? '?' : `0x${qpn.toString(16)}`}`;
const convText = (type: string, x: string, y: string): string => `${type} ${[x, y].sort().join(' ')}`;

/**
 * Every frame decodes with a valid ICRC, and the conversations are exactly the steps' QP pairs,
 * with the QPNs both sides printed: one RC or UD conversation per step (roce-ts reuses QPN 0x11
 * in every step, so conversations of different steps must not merge), two UC ones (one per
 * direction: UC has no responses to show the sender's QPN).
 */
export function expectConversations(run: LabRun, r: AnalysisResult, steps: readonly StepKind[]): void {
  expect(r.captureError).toBeNull();
  expect(r.frames.roce).toBeGreaterThan(0);
  expect({ icrcBad: r.frames.icrcBad, malformed: r.frames.malformed }).toEqual({ icrcBad: 0, malformed: 0 });
  expect(r.flagCounts.icrcBad + r.flagCounts.malformed).toBe(0);
  const want: string[] = [];
  for (const s of steps) {
    const j = stepOf(run, s.id).hostJson;
    // A host run that ended in an error prints no addresses; the guest's tool printed both
    // (its "remote address" is the stack's QP).
    const guest = stepOf(run, s.id).guestOut;
    const local = (j?.['local'] as { qpn: number } | undefined)?.qpn ?? guestQpn(guest, 'remote');
    const remote = (j?.['remote'] as { qpn: number } | undefined)?.qpn ?? guestQpn(guest, 'local');
    const pairs = (j?.['qpPairs'] as { local: { qpn: number }; remote: { qpn: number } }[] | undefined) ?? [];
    if ((s.qps ?? 1) > 1) {
      expect(pairs.length).toBe(s.qps);
      for (const p of pairs) want.push(convText(s.type.toUpperCase(), endpointText(HOST_IP, p.local.qpn), endpointText(GUEST_IP, p.remote.qpn)));
    } else if (s.type === 'uc' && s.oneWay !== undefined) {
      want.push(
        s.oneWay === 'host-sends'
          ? convText('UC', endpointText(HOST_IP, null), endpointText(GUEST_IP, remote))
          : convText('UC', endpointText(GUEST_IP, null), endpointText(HOST_IP, local)),
      );
    } else if (s.type === 'uc') {
      want.push(
        convText('UC', endpointText(HOST_IP, null), endpointText(GUEST_IP, remote)),
        convText('UC', endpointText(GUEST_IP, null), endpointText(HOST_IP, local)),
      );
    } else {
      want.push(convText(s.type.toUpperCase(), endpointText(HOST_IP, local), endpointText(GUEST_IP, remote)));
    }
  }
  const got = r.conversations.map((c) => convText(c.type, endpointText(c.a.ip, c.a.qpn), endpointText(c.b.ip, c.b.qpn)));
  expect(got.sort()).toEqual(want.sort());
}

/** The QPN in a guest tool's "local address" or "remote address" line (rc_pingpong and perftest both print one). */
function guestQpn(out: string, which: 'local' | 'remote'): number | null {
  const m = new RegExp(`${which} address:.*?QPN 0x([0-9a-f]+)`, 'i').exec(out);
  return m === null ? null : parseInt(m[1] ?? '', 16);
}

export function expectNoViolations(r: AnalysisResult): void {
  expect(r.violations.map((v) => `${v.rule} (conv ${v.conversation}, frames ${v.frames.join(',')}): ${v.message}`)).toEqual([]);
}

const requesterIp = (r: AnalysisResult, conv: number, side: 'a' | 'b'): string =>
  (r.conversations.find((c) => c.id === conv) as Conversation).endpoint(side).ip;

/** Per requester host: retransmitted requests, loss-recovery episodes by trigger, NAKs its peer sent it. */
export function recoveryBySide(
  r: AnalysisResult,
): Record<string, { retransmissions: number; nakEpisodes: number; timeoutEpisodes: number; naksReceived: number }> {
  const out: Record<string, { retransmissions: number; nakEpisodes: number; timeoutEpisodes: number; naksReceived: number }> = {};
  const of = (ip: string): (typeof out)[string] => (out[ip] ??= { retransmissions: 0, nakEpisodes: 0, timeoutEpisodes: 0, naksReceived: 0 });
  for (const c of r.conversations) {
    for (const side of ['a', 'b'] as const) {
      const f = c.flows[side];
      if (f === null) continue;
      const s = of(c.endpoint(side).ip);
      s.retransmissions += f.counts.retransmission;
      s.naksReceived += f.counts.nakSeqErr;
    }
  }
  for (const e of r.episodes) {
    const s = of(requesterIp(r, e.conversation, e.requester));
    if (e.trigger === 'nak') s.nakEpisodes++;
    if (e.trigger === 'timeout') s.timeoutEpisodes++;
  }
  return out;
}

/**
 * `roce replay --json` in-process. When it finds violations, its whole report is kept beside the
 * capture (`<capture>.replay-<role>.json`), and `first` names the first few: a run that fails keeps
 * what it saw, as the next lab run overwrites the capture.
 */
export async function replayCapture(
  file: string,
  role: 'responder' | 'requester',
): Promise<{ code: number; conversations: ReplaySummary[]; violations: number; err: string; first: string[] }> {
  const o = memoryOutput();
  const code = await runCli(['replay', file, '--role', role, '--json'], o);
  const j = o.out === '' ? {} : (JSON.parse(o.out) as { conversations?: ReplaySummary[]; violations?: number });
  const conversations = j.conversations ?? [];
  const first = conversations
    .flatMap((c) =>
      c.differences
        .filter((d) => d.class === 'violation')
        .map((d) => `${c.requesterIp} QP 0x${c.requesterQpn.toString(16)}: ${d.kind} PSN ${d.psn}: expected ${d.expected}, got ${d.got}`),
    )
    .slice(0, 5);
  if (first.length > 0) {
    fs.writeFileSync(`${file}.replay-${role}.json`, o.out);
    fs.copyFileSync(file, `${file}.failed-replay.pcap`);
  }
  return { code, conversations, violations: j.violations ?? -1, err: o.err, first };
}

/** Differences a replay of an rxe capture may show, and why they are not violations (docs/conformance.md, Replay). */
export const RXE_REPLAY_POLICY = new Set(['ackReq', 'retransmissions', 'extraAck']);

/**
 * `roce replay` in both roles on a no-loss capture (taken at rxe's netdev: for rxe a host
 * capture). Every RC flow the analysis found is replayed in the role of its requester and of
 * its responder, whichever host that is, with every captured frame of the compared side
 * matched and no violation; other differences are only the known policy ones, or unverifiable
 * ones where the tap dropped frames before the capture point. Returns the
 * differences seen, for the record.
 */
export async function expectReplays(run: LabRun, r: AnalysisResult): Promise<string[]> {
  const flows: { reqIp: string; reqQpn: number; rspQpn: number }[] = [];
  for (const c of r.conversations) {
    if (c.type !== 'RC') continue;
    for (const side of ['a', 'b'] as const) {
      const f = c.flows[side];
      const other = side === 'a' ? c.b : c.a;
      const me = c.endpoint(side);
      if (f === null || f.figures.newRequests === 0 || me.qpn === null || other.qpn === null) continue;
      flows.push({ reqIp: me.ip, reqQpn: me.qpn, rspQpn: other.qpn });
    }
  }
  expect(flows.some((f) => f.reqIp === GUEST_IP)).toBe(true);
  expect(flows.some((f) => f.reqIp === HOST_IP)).toBe(true);
  const seen: string[] = [];
  for (const role of ['responder', 'requester'] as const) {
    const rep = await replayCapture(run.capturePath, role);
    expect({ role, code: rep.code, violations: rep.violations, err: rep.err, first: rep.first }).toEqual({ role, code: 0, violations: 0, err: '', first: [] });
    for (const f of flows) {
      const c = rep.conversations.find((x) => x.requesterIp === f.reqIp && x.requesterQpn === f.reqQpn && x.responderQpn === f.rspQpn);
      const what = `${role} replay of ${f.reqIp} QP 0x${f.reqQpn.toString(16)} -> 0x${f.rspQpn.toString(16)}`;
      expect({ what, found: c !== undefined }).toEqual({ what, found: true });
      if (c === undefined) continue;
      expect({ what, matched: c.matched, violations: c.violations }).toEqual({ what, matched: c.expected, violations: 0 });
      for (const d of c.differences) {
        const line = `${what}: ${d.class} ${d.kind}: expected ${d.expected}, got ${d.got}`;
        seen.push(line);
        // Unverifiable differences say the capture lacks frames; the only way this lab's capture
        // can lack one is the tap dropping what the host sent before qemu read it (run.tapDropped).
        const known = (RXE_REPLAY_POLICY.has(d.kind) && d.class === 'policy') || (d.class === 'unverifiable' && (run.tapDropped ?? 0) > 0);
        expect({ line, known, tapDropped: run.tapDropped }).toEqual({ line, known: true, tapDropped: run.tapDropped });
      }
    }
  }
  return seen;
}
