/**
 * `--steer`: ntuple rules that send every RoCE v2 frame (UDP destination port 4791,
 * IPv4 and IPv6) to one receive queue, so AF_XDP needs a socket on that queue only, whatever RSS
 * would have done. The rules are the NIC's flow classifier (ETHTOOL_SRXCLSRLINS), set with the
 * `ethtool` binary, as an administrator would:
 *
 *   ethtool -N IF flow-type udp4 dst-port 4791 action Q     → "Added rule with ID N"
 *   ethtool -N IF flow-type udp6 dst-port 4791 action Q
 *   ethtool -N IF delete N                                   (when the command ends)
 *
 * The ntuple feature: when `ethtool -k` shows `ntuple-filters: off` (changeable), it is turned on
 * for the run and off again at the end, because several drivers refuse rules while it is off (i40e,
 * ixgbe, mlx5) and turning it off flushes their rules, so leaving it on would keep a setting the
 * administrator did not choose. When it shows `off [fixed]` the driver has no classifier the
 * feature controls; the insert is still tried (the driver decides) and its message reported.
 *
 * Every step runs through a CommandRunner, so the parsing and the order of the steps are tested
 * against ethtool's recorded output; systemRunner is the real one. Whatever fails, what was added
 * is removed before the error is thrown: a failed --steer leaves the NIC as it found it.
 */
import { spawnSync } from 'node:child_process';
import { RoceError } from '../../base/roce-error';
import { ROCE_V2_PORT } from '../../packets/udp';

export const XdpSteerErrorCode = {
  /** The ntuple rules could not be installed (no ethtool, not root, no flow classifier, a conflicting rule). */
  STEER: 'ROCE_ERR_XDP_STEER',
} as const;
export type XdpSteerErrorCode = (typeof XdpSteerErrorCode)[keyof typeof XdpSteerErrorCode];

export class XdpSteerError extends RoceError<XdpSteerErrorCode> {}

/** What a command printed and how it ended (spawnSync's fields). */
export interface CommandResult {
  /** The exit status, or null when it did not run or was killed. */
  status: number | null;
  stdout: string;
  stderr: string;
  /** Why it did not run (spawn's error: ENOENT when the binary is missing), or undefined. */
  error?: string;
}

/** Runs `ethtool ARGS` (the arguments only: the runner knows the binary and the namespace). */
export type CommandRunner = (args: readonly string[]) => CommandResult;

const ETHTOOL_TIMEOUT_MS = 10_000;

/** The ethtool binary, run directly or in network namespace `netns` (`ip netns exec`). */
export function systemRunner(o: { netns?: string; binary?: string } = {}): CommandRunner {
  const binary = o.binary ?? 'ethtool';
  return (args) => {
    const [file, full] = o.netns !== undefined ? ['ip', ['netns', 'exec', o.netns, binary, ...args]] : [binary, [...args]];
    const r = spawnSync(file, full, { encoding: 'utf8', timeout: ETHTOOL_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'pipe'] });
    const res: CommandResult = { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
    if (r.error !== undefined) res.error = (r.error as NodeJS.ErrnoException).code ?? r.error.message;
    // `ip netns exec` reports a missing binary itself (exec of "ethtool" failed: No such file or directory).
    else if (o.netns !== undefined && r.status !== 0 && /exec of "[^"]*" failed: No such file/.test(res.stderr)) res.error = 'ENOENT';
    return res;
  };
}

/** The ntuple-filters line of `ethtool -k IF`. */
export interface NtupleFeature {
  on: boolean;
  /** `[fixed]`: the driver does not let it change. */
  fixed: boolean;
}

/** `ethtool -k IF` → the ntuple feature, or null when the list has no ntuple-filters line. */
export function parseNtupleFeature(text: string): NtupleFeature | null {
  // ethtool prints each feature as "name: on|off" with " [fixed]" or " [requested on|off]" after.
  const m = /^ntuple-filters: (on|off)( \[fixed\])?/m.exec(text);
  return m === null ? null : { on: m[1] === 'on', fixed: m[2] !== undefined };
}

/** One rule of `ethtool -n IF` (ethtool's rxclass.c prints each as "Filter: N" and tab-indented fields). */
export interface RxRule {
  id: number;
  /** "UDP over IPv4", "TCP over IPv6", "Raw Ethernet", ... as ethtool names the flow type. */
  type: string;
  /** UDP/TCP/SCTP rules: the destination port and whether the rule matches it exactly (ethtool prints mask 0x0 for "must match"). */
  dstPort: number | null;
  dstPortExact: boolean;
  /** True when no field but the destination port is matched (addresses, source port and TOS all wildcards). */
  onlyDstPort: boolean;
  /** The queue frames go to, or null for Drop (or a VF's queue: `vf` set). */
  queue: number | null;
  vf: number | null;
}

/** `ethtool -n IF` → the receive rings and the rules; rings null when ethtool could not say. */
export function parseRxRules(text: string): { rings: number | null; rules: RxRule[] } {
  const ringsMatch = /^(\d+) RX rings available$/m.exec(text);
  const rules: RxRule[] = [];
  // Blocks start at "Filter: N" (rxclass_print_nfc_rule) and end at the next one.
  const parts = text.split(/^\s*Filter: /m).slice(1);
  for (const part of parts) {
    const id = Number(/^(\d+)/.exec(part)?.[1] ?? NaN);
    if (!Number.isInteger(id)) continue;
    const field = (name: string): RegExpExecArray | null => new RegExp(`^\\s*${name}: (.*)$`, 'm').exec(part);
    const type = (field('Rule Type') ?? field('Flow Type'))?.[1]?.trim() ?? '';
    const dst = /^\s*Dest port: (\d+) mask: (0x[0-9a-fA-F]+)$/m.exec(part);
    const action = field('Action')?.[1]?.trim() ?? '';
    const toVf = /^Direct to VF (\d+) queue (\d+)$/.exec(action);
    const toQueue = /^Direct to queue (\d+)$/.exec(action);
    // Every other match field must be a wildcard: address masks all ones (ethtool prints the inverted mask), port and TOS masks full.
    const wild = (re: RegExp): boolean => {
      const m = re.exec(part);
      return m === null || /^(255\.255\.255\.255|ffff(:ffff){7}|0xf+)$/i.test(m[1]!.trim());
    };
    const onlyDstPort =
      wild(/^\s*Src IP addr: \S+ mask: (\S+)$/m) &&
      wild(/^\s*Dest IP addr: \S+ mask: (\S+)$/m) &&
      wild(/^\s*Src port: \d+ mask: (\S+)$/m) &&
      wild(/^\s*(?:TOS|Traffic Class): \S+ mask: (\S+)$/m) &&
      wild(/^\s*VLAN: \S+ mask: (\S+)$/m) &&
      wild(/^\s*User-defined: \S+ mask: (\S+)$/m);
    rules.push({
      id,
      type,
      dstPort: dst === null ? null : Number(dst[1]),
      dstPortExact: dst !== null && Number(dst[2]) === 0,
      onlyDstPort: onlyDstPort && dst !== null && Number(dst[2]) === 0,
      queue: toQueue !== null ? Number(toQueue[1]) : toVf !== null ? Number(toVf[2]) : null,
      vf: toVf !== null ? Number(toVf[1]) : null,
    });
  }
  return { rings: ringsMatch === null ? null : Number(ringsMatch[1]), rules };
}

/** The flow types --steer installs, with ethtool's word for each and the name `ethtool -n` prints. */
export const STEER_FLOWS = [
  { flowType: 'udp4', ruleType: 'UDP over IPv4' },
  { flowType: 'udp6', ruleType: 'UDP over IPv6' },
] as const;
export type SteerFlowType = (typeof STEER_FLOWS)[number]['flowType'];

/** A rule that steers RoCE v2: UDP (IPv4 or IPv6) to destination port 4791 exactly. */
export interface RoceRule {
  id: number;
  flowType: SteerFlowType;
  /** The queue, or null (drop, or a VF's queue). */
  queue: number | null;
  /** False when the rule also matches other fields (an address, a source port): it steers only some RoCE flows. */
  allRoce: boolean;
}

/** The RoCE v2 rules among `ethtool -n`'s. */
export function roceRules(rules: readonly RxRule[]): RoceRule[] {
  const out: RoceRule[] = [];
  for (const r of rules) {
    const f = STEER_FLOWS.find((x) => x.ruleType === r.type);
    if (f === undefined || r.dstPort !== ROCE_V2_PORT || !r.dstPortExact) continue;
    out.push({ id: r.id, flowType: f.flowType, queue: r.vf === null ? r.queue : null, allRoce: r.onlyDstPort });
  }
  return out;
}

/** `ethtool -N IF flow-type ... ` → the new rule's ID ("Added rule with ID N", printed when ethtool or the driver chose the location), or null. */
export function parseAddedRule(stdout: string): number | null {
  const m = /^Added rule with ID (\d+)$/m.exec(stdout);
  return m === null ? null : Number(m[1]);
}

/** ethtool's own words for a failure: its stderr (or stdout), one line, without the blank ones; then what they mean. */
export function ethtoolMessage(r: CommandResult): string {
  const text = `${r.stderr}\n${r.stdout}`
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .join('; ');
  const said = text || (r.error ?? `exit status ${r.status ?? 'none (killed)'}`);
  // The errno ethtool printed (perror / netlink error): EOPNOTSUPP from a driver without a flow classifier, EPERM without CAP_NET_ADMIN.
  if (/Operation not supported/.test(said)) return `${said} (the driver has no ntuple flow steering)`;
  if (/Operation not permitted/.test(said)) return `${said} (changing the NIC needs root: CAP_NET_ADMIN)`;
  return said;
}

/** The remedies besides --steer, for an error message. */
export function steerRemedy(ifname: string): string {
  return `use one queue (ethtool -L ${ifname} combined 1), or --driver packet, which sees every queue`;
}

/** What --steer did, to be undone when the command ends. */
export interface SteeringInfo {
  ifname: string;
  queue: number;
  /** Rules this run added (removed at the end), in the order added. */
  added: { id: number; flowType: SteerFlowType }[];
  /** Rules that were there already and steer RoCE to the same queue (left alone). */
  reused: { id: number; flowType: SteerFlowType }[];
  /** True when this run turned ntuple-filters on (turned off again at the end). */
  ntupleTurnedOn: boolean;
  /** Things short of failure the user should know (a flow type the NIC could not steer). */
  warnings: string[];
}

/** The installed steering: remove() undoes exactly what install did, once; it returns what could not be undone. */
export interface RoceSteering {
  readonly info: SteeringInfo;
  /**
   * Checks the rules are still there (call it after the device opened): some drivers reset the
   * classifier when an XDP program is attached (ixgbe drops its Flow Director rules, as reported on
   * xdp-newbies for the X520). Throws XdpSteerError, after undoing the rest, when one is gone.
   */
  verify(): void;
  remove(): string[];
}

/** Runs `ethtool ARGS` and turns "ethtool is missing" into the typed error; returns the result. */
function runEthtool(run: CommandRunner, ifname: string, args: readonly string[]): CommandResult {
  const r = run(args);
  if (r.error === 'ENOENT')
    throw new XdpSteerError(
      XdpSteerErrorCode.STEER,
      `--steer on ${ifname}: ethtool is not installed (apt-get install ethtool); without it ${steerRemedy(ifname)}`,
    );
  return r;
}

/** Undoes `info` (rules newest first, then the feature): the steps that failed, each with ethtool's message. */
function undo(run: CommandRunner, info: SteeringInfo): string[] {
  const problems: string[] = [];
  for (const rule of [...info.added].reverse()) {
    const r = run(['-N', info.ifname, 'delete', String(rule.id)]);
    if (r.status !== 0) problems.push(`ethtool -N ${info.ifname} delete ${rule.id}: ${ethtoolMessage(r)}`);
  }
  info.added.length = 0;
  if (info.ntupleTurnedOn) {
    const r = run(['-K', info.ifname, 'ntuple', 'off']);
    if (r.status !== 0) problems.push(`ethtool -K ${info.ifname} ntuple off: ${ethtoolMessage(r)}`);
    info.ntupleTurnedOn = false;
  }
  return problems;
}

/**
 * Installs the rules that steer RoCE v2 (UDP 4791, IPv4 and IPv6) on `ifname` to `queue`.
 * Fails (XdpSteerError, nothing left changed) when ethtool is missing, the caller may not change
 * the NIC, the NIC has no flow classifier, IPv4 cannot be steered, or a rule already sends RoCE
 * to another queue. IPv6 that cannot be steered while IPv4 can is a warning (some classifiers
 * take IPv4 only): IPv6 RoCE then still goes where RSS puts it.
 */
export function installRoceSteering(ifname: string, queue: number, run: CommandRunner): RoceSteering {
  const info: SteeringInfo = { ifname, queue, added: [], reused: [], ntupleTurnedOn: false, warnings: [] };
  const fail = (what: string): never => {
    const left = undo(run, info);
    throw new XdpSteerError(
      XdpSteerErrorCode.STEER,
      `--steer on ${ifname}: ${what}; ${steerRemedy(ifname)}${left.length > 0 ? ` (and could not undo: ${left.join('; ')})` : ''}`,
    );
  };

  const features = runEthtool(run, ifname, ['-k', ifname]);
  if (features.status !== 0) fail(`ethtool -k ${ifname}: ${ethtoolMessage(features)}`);
  const ntuple = parseNtupleFeature(features.stdout);
  if (ntuple !== null && !ntuple.on && !ntuple.fixed) {
    const r = runEthtool(run, ifname, ['-K', ifname, 'ntuple', 'on']);
    if (r.status !== 0) fail(`ethtool -K ${ifname} ntuple on: ${ethtoolMessage(r)}`);
    info.ntupleTurnedOn = true;
  }
  const featureNote = ntuple === null ? ' (ethtool -k lists no ntuple-filters feature)' : ntuple.fixed && !ntuple.on ? ' (ntuple-filters: off [fixed])' : '';

  // Rules already there: one that sends all of RoCE to our queue is reused; one that sends it elsewhere conflicts.
  const listed = runEthtool(run, ifname, ['-n', ifname]);
  const existing = listed.status === 0 ? roceRules(parseRxRules(listed.stdout).rules) : [];
  for (const flow of STEER_FLOWS) {
    const mine = existing.filter((r) => r.flowType === flow.flowType);
    const elsewhere = mine.find((r) => r.queue !== queue);
    if (elsewhere !== undefined) {
      fail(
        `rule ${elsewhere.id} already steers ${flow.flowType} port ${ROCE_V2_PORT} to ${elsewhere.queue === null ? 'no queue of this function (drop or a VF)' : `queue ${elsewhere.queue}`}: delete it (ethtool -N ${ifname} delete ${elsewhere.id}) or run with --queues ${elsewhere.queue ?? 0}`,
      );
    }
    const same = mine.find((r) => r.allRoce);
    if (same !== undefined) {
      info.reused.push({ id: same.id, flowType: flow.flowType });
      continue;
    }
    const r = runEthtool(run, ifname, ['-N', ifname, 'flow-type', flow.flowType, 'dst-port', String(ROCE_V2_PORT), 'action', String(queue)]);
    const id = r.status === 0 ? parseAddedRule(r.stdout) : null;
    if (id === null) {
      const why = r.status === 0 ? `ethtool printed no rule ID (${ethtoolMessage(r)})` : ethtoolMessage(r);
      const what = `ethtool -N ${ifname} flow-type ${flow.flowType} dst-port ${ROCE_V2_PORT} action ${queue} failed: ${why}${featureNote}`;
      if (flow.flowType === 'udp6' && info.added.length + info.reused.length > 0) {
        info.warnings.push(`${what}; IPv6 RoCE is not steered and reaches queue ${queue} only if RSS puts it there`);
        continue;
      }
      fail(what);
    }
    info.added.push({ id: id!, flowType: flow.flowType });
  }

  let removed = false;
  return {
    info,
    verify(): void {
      const r = run(['-n', ifname]);
      // A listing that cannot be read (the driver gives no rule count) proves nothing either way.
      if (r.status !== 0) return;
      const present = new Set(parseRxRules(r.stdout).rules.map((x) => x.id));
      const gone = [...info.added, ...info.reused].filter((x) => !present.has(x.id));
      if (gone.length === 0) return;
      info.added = info.added.filter((x) => present.has(x.id));
      removed = true;
      fail(
        `rule${gone.length === 1 ? '' : 's'} ${gone.map((x) => `${x.id} (${x.flowType})`).join(', ')} vanished once the device opened (the driver reset its classifier when XDP attached)`,
      );
    },
    remove(): string[] {
      if (removed) return [];
      removed = true;
      return undo(run, info);
    },
  };
}

/** What `roce devices` shows of an interface's steering: whether ntuple can be used and the RoCE rules present. */
export interface SteeringStatus {
  /** False when the ethtool binary is missing (then nothing else is known). */
  ethtool: boolean;
  /** `ethtool -k`: on, off, off [fixed] (no classifier the feature controls), or unknown. */
  ntuple: 'on' | 'off' | 'fixed off' | 'unknown';
  /** `ethtool -n`: the rules steering UDP 4791, or null when the rules cannot be read (ethtool's message in `problem`). */
  roceRules: RoceRule[] | null;
  problem: string;
}

/** Reads the ntuple feature and the RoCE rules of `ifname` (two ethtool calls; no change). */
export function steeringStatus(ifname: string, run: CommandRunner): SteeringStatus {
  const k = run(['-k', ifname]);
  if (k.error === 'ENOENT') return { ethtool: false, ntuple: 'unknown', roceRules: null, problem: 'ethtool is not installed' };
  const f = k.status === 0 ? parseNtupleFeature(k.stdout) : null;
  const ntuple = f === null ? 'unknown' : f.on ? 'on' : f.fixed ? 'fixed off' : 'off';
  const n = run(['-n', ifname]);
  if (n.status !== 0) return { ethtool: true, ntuple, roceRules: null, problem: ethtoolMessage(n) };
  return { ethtool: true, ntuple, roceRules: roceRules(parseRxRules(n.stdout).rules), problem: '' };
}
