/**
 * `roce replay [FILE] --role responder|requester`: conformance tests from
 * captures. The stack plays one side of a captured RC conversation and its
 * answers are compared with what the real peer sent.
 */
import { isatty } from 'node:tty';
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { type CommandContext, parseCommand } from './command';
import { BAD_INPUT_STATUS, captureInput, isNotACapture, readWholeInput, reportNotACapture } from './capture-input';
import {
  NO_CONVERSATION_REASON,
  captureFileOf,
  conversationOf,
  exitStatusText,
  frameSelectionOf,
  qpnsOf,
  selectionHooks,
  selects,
  takesAll,
  captureSelectionSpecs,
} from './capture-options';
import { analyzeCapture } from '../analysis/analyzer';
import { noneChosenText } from '../analysis/conversation-choice';
import type { RcConversation } from '../apps/replay/conversation';
import type { Output } from './output';
import { readCapture, describeCaptureError } from '../packets/pcap';
import { packetAddresses } from '../packets/decode';
import { findRcConversations } from '../apps/replay/conversation';
import { replayResponder } from '../apps/replay/responder-replay';
import { replayRequester } from '../apps/replay/requester-replay';
import type { ReplaySummary } from '../apps/replay/differences';
import { replayOnto, rulesFromFlags } from './replay-onto';
import { PCAP_OPTIONS, captureArgs } from './host-run-options';
import { capturedPackets } from '../apps/replay/captured-packets';
import { applyCmSetup, cmConnections } from '../apps/replay/cm-setup';
import { splitReplayable } from '../apps/replay/replayable';
import { replayReportJson, replayReportText, replayTotals } from './replay-report';

export const REPLAY_OPTIONS: readonly OptionSpec[] = [
  { name: 'role', kind: 'string', value: 'responder|requester', help: 'which side the stack plays (default responder)' },
  ...captureSelectionSpecs({
    conversation:
      'only conversation N, numbered as roce analyze lists them with the same --frames, --time-window, --roce-port and --ignore-icrc (an RC conversation)',
    qpn: 'the conversations whose responder (or, with --role requester, requester) has one of these QPNs: the side the stack plays (default: every RC conversation)',
    frames: 'replay only frames numbered A to B (A-B, A-, -B or A), as if the capture held no others',
    'time-window': `replay only frames whose time since the capture's first frame lies in [FROM, TO], as if the capture held no others (FROM-, -TO; each a number with s, ms, us or ns after it; a bare number is µs)`,
  }),
  { name: 'timing', kind: 'string', value: 'captured|fast', help: 'feed packets at the captured times (default) or back to back' },
  { name: 'mtu', kind: 'string', value: 'N', help: 'path MTU, when the capture does not show it (default: inferred)' },
  { name: 'roce-port', kind: 'string', value: 'N', help: 'UDP destination port of RoCE v2 (default 4791)' },
  {
    name: 'ignore-icrc',
    kind: 'flag',
    help: 'do not check the captured ICRCs (a capture tool that did not preserve them); the stack is fed each frame with the ICRC its contents call for',
  },
  { name: 'json', kind: 'flag', help: 'one JSON summary document' },
  { name: 'onto', kind: 'string', value: 'IFACE', help: 're-send the capture onto this interface instead of comparing (like tcpreplay)' },
  { name: 'driver', kind: 'string', value: 'xdp|packet', help: 'with --onto: the driver (default packet)' },
  { name: 'netns', kind: 'string', value: 'NAME', help: 'with --onto: the network namespace of the interface' },
  { name: 'rewrite-mac', kind: 'list', value: 'OLD=NEW', help: 'with --onto: rewrite a MAC address (repeatable)' },
  { name: 'rewrite-ip', kind: 'list', value: 'OLD=NEW', help: 'with --onto: rewrite an IP address (repeatable)' },
  { name: 'rewrite-qpn', kind: 'list', value: 'OLD=NEW', help: 'with --onto: rewrite a destination QPN (repeatable)' },
  { name: 'psn-offset', kind: 'list', value: '[QPN=]N', help: 'with --onto: add N to the PSNs (of frames to QPN, after rewriting)' },
  { name: 'roce-only', kind: 'flag', help: 'with --onto: send only the RoCE v2 frames' },
  ...PCAP_OPTIONS.map((o) => ({ ...o, help: `with --onto: ${o.help}` })),
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const REPLAY_USAGE = `usage: roce replay [FILE] [--role responder|requester] [options]
       roce replay [FILE] --onto IFACE [--driver xdp|packet] [--rewrite-mac|ip|qpn OLD=NEW] [--psn-offset N]

Replays one side of each captured RC conversation into the stack and compares
its answers with the real peer's: ACK/NAK coverage and MSN, READ response
segmentation and data, atomic results (responder); request segmentation, PSNs,
headers and go-back-N (requester). Each difference is a violation or a policy
difference the IBTA allows. The capture is FILE or -r FILE: a file, a FIFO, or
- for standard input, read whole before the replay starts; without FILE,
standard input is read, unless it is a terminal.

${formatOptions(REPLAY_OPTIONS)}

${exitStatusText('when every conversation replayed without a violation', 'on a violation, when no conversation can be replayed (the one --conversation names included: not RC, or not replayable), or when the capture is truncated or corrupt after its header (what it held is replayed)', [NO_CONVERSATION_REASON])}`;

export async function replayCommand(argv: readonly string[], out: Output, ctx?: Pick<CommandContext, 'stdinIsTerminal'>): Promise<number> {
  const args = parseCommand(argv, out, { name: 'replay', options: REPLAY_OPTIONS, usage: REPLAY_USAGE, operands: 'optional FILE' });
  if (args === null) return 0;
  const named = captureFileOf('replay', args);
  const selection = frameSelectionOf(args);
  const role = args.values.get('role') ?? 'responder';
  if (role !== 'responder' && role !== 'requester') throw new UsageError(`--role must be responder or requester, not ${JSON.stringify(role)}`);
  const timing = args.values.get('timing') ?? 'captured';
  if (timing !== 'captured' && timing !== 'fast') throw new UsageError(`--timing must be captured or fast, not ${JSON.stringify(timing)}`);
  const mtuText = args.values.get('mtu');
  const mtu = mtuText === undefined ? undefined : intValue(mtuText, 'mtu', 256, 4096);
  if (mtu !== undefined && ![256, 512, 1024, 2048, 4096].includes(mtu)) throw new UsageError('--mtu must be 256, 512, 1024, 2048 or 4096');
  const qpns = qpnsOf(args);
  const conversation = conversationOf(args);
  if (args.values.get('onto') !== undefined && (qpns !== null || conversation !== null)) {
    throw new UsageError(
      '--onto re-sends every frame --frames and --time-window select: --qpn and --conversation choose conversations to compare, not frames to send',
    );
  }
  const rocePort = intValue(args.values.get('roce-port') ?? '4791', 'roce-port', 1, 65535);
  const capture = captureArgs(args);
  if (capture !== null && args.values.get('onto') === undefined) throw new UsageError('--pcap records a live link: it goes with --onto IFACE');

  // The replay needs the whole capture at once: standard input is read to its end first.
  const input = captureInput('replay', named, out, ctx?.stdinIsTerminal ?? isatty(0), REPLAY_USAGE);
  if (input === null) return BAD_INPUT_STATUS;
  const bytes = readWholeInput('replay', input, out);
  if (bytes === null) return BAD_INPUT_STATUS;
  const file = input.name;
  const whole = readCapture(bytes);
  if (isNotACapture(whole.error)) {
    reportNotACapture('replay', file, whole.error, out);
    return BAD_INPUT_STATUS;
  }
  // --frames and --time-window: the frames outside are left out, as if the capture did not hold
  // them; damage after the range's last frame is then none of the replay's, as `roce analyze` has it.
  const t0 = whole.records[0]?.timestampNs ?? 0n;
  const cap = takesAll(selection)
    ? whole
    : {
        ...whole,
        records: whole.records.filter((r) => selects(selection, r.index, Number(r.timestampNs - t0))),
        error: selection.last <= whole.records.length ? null : whole.error,
      };
  if (cap.error !== null) out.stderr(`roce replay: ${file}: ${describeCaptureError(whole)}; replaying what was read\n`);
  const onto = args.values.get('onto');
  if (onto !== undefined) {
    const driver = args.values.get('driver') ?? 'packet';
    if (driver !== 'xdp' && driver !== 'packet') throw new UsageError(`--driver must be xdp or packet, not ${JSON.stringify(driver)}`);
    const netns = args.values.get('netns');
    return replayOnto(
      cap.records,
      {
        ifname: onto,
        driver,
        ...(netns !== undefined ? { netns } : {}),
        timing: timing as 'captured' | 'fast',
        rules: rulesFromFlags(args.lists),
        roceOnly: args.flags.has('roce-only'),
        capture,
      },
      out,
    );
  }
  // Frames cut short by the capture, or whose ICRC it did not keep, are made whole for the stack
  // (missing payload zero, ICRC recomputed); comparisons look only at the bytes captured.
  const ignoreIcrc = args.flags.has('ignore-icrc');
  const { packets, truncated, v1 } = capturedPackets(cap, { rocePort, ignoreIcrc });
  if (v1 > 0) out.stderr(`roce replay: ${file}: ${v1} RoCE v1 frames fed to the stack as RoCE v2 (same transport; the stack speaks v2)\n`);
  if (truncated > 0)
    out.stderr(`roce replay: ${file}: ${truncated} frames truncated by the capture: headers replayed, payload compared only as far as captured\n`);
  let convs = findRcConversations(packets, packetAddresses);
  applyCmSetup(convs, cmConnections(packets));
  if (conversation !== null) {
    // Numbered by the analysis roce analyze makes of the same frames; found here by its two ends.
    const analysis = analyzeCapture(bytes, { decode: { rocePort, verifyIcrc: !ignoreIcrc }, keep: false, ...selectionHooks(selection) });
    const c = analysis.conversations[conversation - 1];
    if (c === undefined) {
      out.stderr(`roce replay: ${file}: ${noneChosenText({ conversation, qpns: null }, analysis.conversations.length)}\n`);
      return BAD_INPUT_STATUS;
    }
    const ends = `${c.a.ip} QP ${qpText(c.a.qpn)} ↔ ${c.b.ip} QP ${qpText(c.b.qpn)}`;
    if (c.type !== 'RC') {
      out.stderr(`roce replay: ${file}: conversation #${conversation} (${ends}) is ${c.type}: roce replay replays RC conversations\n`);
      return 1;
    }
    convs = convs.filter((x) => endsMatch(x, c.a, c.b) || endsMatch(x, c.b, c.a));
    if (convs.length === 0) {
      out.stderr(`roce replay: ${file}: conversation #${conversation} (${ends}): no replayable request stream between those QPs\n`);
      return 1;
    }
  }
  if (qpns !== null) convs = convs.filter((c) => qpns.includes(role === 'responder' ? c.responderQpn : c.requesterQpn));
  if (convs.length === 0) {
    const hint = !ignoreIcrc && cap.records.length > 0 ? ' (if the capture tool did not preserve the ICRCs, try --ignore-icrc)' : '';
    out.stderr(
      `roce replay: ${file}: no RC conversation${qpns !== null ? ` with ${role} QPN ${qpns.map((q) => `0x${q.toString(16)}`).join(' or ')}` : ''}${takesAll(selection) ? '' : ' in the frames selected'} found${hint}\n`,
    );
    return 1;
  }
  const { replayable, notReplayable } = splitReplayable(convs);
  for (const n of notReplayable) {
    out.stderr(
      `roce replay: ${file}: QP 0x${n.requesterQpn.toString(16)} -> 0x${n.responderQpn.toString(16)} (${n.requesterIp} -> ${n.responderIp}, ${n.frames} frames) not replayable: ${n.reason}\n`,
    );
  }
  if (replayable.length === 0) {
    out.stderr(`roce replay: ${file}: no replayable RC conversation\n`);
    if (args.flags.has('json')) out.stdout(`${JSON.stringify({ file, role, ok: false, error: 'no replayable RC conversation', notReplayable })}\n`);
    return 1;
  }
  convs = replayable;
  const opts = { timing: timing as 'captured' | 'fast', ...(mtu !== undefined ? { pathMtuBytes: mtu } : {}) };
  const results: ReplaySummary[] = convs.map((c) => (role === 'responder' ? replayResponder(c, opts) : replayRequester(c, opts)));
  if (args.flags.has('json')) out.stdout(replayReportJson(file, role, results, notReplayable, cap.error === null ? null : describeCaptureError(whole)));
  else out.stdout(replayReportText(role, results, notReplayable));
  // Like decode and analyze: a capture file that ends early or is corrupt exits 1, after what it held was replayed.
  if (cap.error !== null) {
    out.stderr(
      `roce replay: ${file}: exit status 1: the capture file is damaged (${describeCaptureError(whole)}); only the frames before the damage were replayed\n`,
    );
    return 1;
  }
  // Frames this stack cannot execute are unsupported, not violations: they do not fail the replay.
  return replayTotals(results).violations === 0 ? 0 : 1;
}

const qpText = (q: number | null): string => (q === null ? '?' : `0x${q.toString(16)}`);

/** Whether replay's conversation `x` has requester `req` and responder `rsp` (the analysis's two ends). */
function endsMatch(x: RcConversation, req: { ip: string; qpn: number | null }, rsp: { ip: string; qpn: number | null }): boolean {
  return x.requesterIp === req.ip && x.requesterQpn === req.qpn && x.responderIp === rsp.ip && x.responderQpn === rsp.qpn;
}
