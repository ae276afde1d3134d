/**
 * `roce attack DEST_IP --dev IFACE --qpn N [--psn N|follow] [--case LIST] [--count N] [--rate PPS]`:
 * a hostile injector for negative tests of one's own RNIC or stack. It crafts RoCE v2 frames with a
 * valid ICRC (apps/attack/attack-cases.ts) toward a live QP and sends them through a frame driver
 * (AF_PACKET by default, AF_XDP, or the memory test mode's link), one case or a mixed flood at a
 * given rate. The peer's MAC comes from the kernel's neighbour table, as for perftest. The summary
 * (--json: one object) counts the frames sent per case.
 */
import { type OptionSpec, UsageError, formatOptions, intValue } from './args';
import { type CommandContext, parseCommand } from './command';
import type { Output } from './output';
import { failureOf } from './failure';
import { parseDriver } from './host-run-options';
import { ATTACK_CASES, ATTACK_CASE_HELP, type AttackCase, type AttackTarget } from '../apps/attack/attack-cases';
import { type AttackPlan, type AttackPort, runAttack } from '../apps/attack/attack-run';
import { HostDriverKind, interfaceIpv4 } from '../apps/host/host-device';
import { AfPacketDriver } from '../nic-driver/af-packet-driver';
import { AfXdpDriver } from '../nic-driver/af-xdp-driver';
import { resolveNeighbor } from '../nic-driver/interface-info';
import { rxeUdpSourcePort } from '../stack/address';

export const ATTACK_OPTIONS: readonly OptionSpec[] = [
  { name: 'dev', short: 'd', kind: 'string', value: 'IFACE', help: 'interface to send from (memory test mode: sim-a or sim-b)' },
  {
    name: 'driver',
    kind: 'string',
    value: 'KIND',
    help: "frame driver: packet (AF_PACKET, default), xdp (AF_XDP) or memory (the test mode's link, in-process)",
  },
  { name: 'qpn', short: 'q', kind: 'string', value: 'N', help: 'the target QP number (decimal or 0x-hex)' },
  {
    name: 'psn',
    kind: 'string',
    value: 'N|follow',
    help: "the PSN the target expects next, or follow: learn it from the target's responses to this host and keep following it (default follow)",
  },
  { name: 'psn-window', kind: 'string', value: 'N', help: "spread each case's frames over N PSNs from the expected one (default 8)" },
  { name: 'rkey', kind: 'string', value: 'N', help: "the target's real R_Key, when known (bad-va, oversize, read-2g, unaligned-atomic use it)" },
  { name: 'va', kind: 'string', value: 'ADDR', help: "a VA of the target's region (0x-hex), when known" },
  { name: 'case', kind: 'list', value: 'LIST', help: `cases, comma-separated, or all (default): ${ATTACK_CASES.join(', ')}` },
  { name: 'count', short: 'c', kind: 'string', value: 'N', help: 'frames in all, the cases in turn (default: one per case)' },
  { name: 'rate', kind: 'string', value: 'PPS', help: 'frames per second (default: as fast as the driver takes them)' },
  { name: 'learn-ms', kind: 'string', value: 'MS', help: "with --psn follow: how long to wait for the target's first response (default 5000)" },
  { name: 'json', kind: 'flag', help: 'print one JSON summary object' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const ATTACK_USAGE = `usage: roce attack DEST_IP --dev IFACE --qpn N [--psn N|follow] [options]

Sends hostile RoCE v2 frames (valid ICRC unless the case says otherwise) to QP N
at DEST_IP: a negative test for an RNIC or a stack, which should answer each as
IBTA says (see docs/conformance.md, "Hostile frames") and never hang. Only for
links you own.

cases:
${ATTACK_CASES.map((c) => `  ${c.padEnd(17)} ${ATTACK_CASE_HELP[c]}`).join('\n')}

${formatOptions(ATTACK_OPTIONS)}

Exit status: 0 when every frame was sent, 1 when not (the reason is printed),
2 on a usage error.`;

function parseCases(list: readonly string[] | undefined): AttackCase[] {
  if (list === undefined || list.length === 0 || list.includes('all')) return [...ATTACK_CASES];
  return list.map((c) => {
    if (!(ATTACK_CASES as readonly string[]).includes(c)) throw new UsageError(`unknown case ${JSON.stringify(c)} (cases: ${ATTACK_CASES.join(', ')}, all)`);
    return c as AttackCase;
  });
}

export async function attackCommand(argv: readonly string[], out: Output, ctx: CommandContext): Promise<number> {
  const args = parseCommand(argv, out, { name: 'attack', options: ATTACK_OPTIONS, usage: ATTACK_USAGE, operands: 'any' });
  if (args === null) return 0;
  const [dstIp, ...extra] = args.positionals;
  if (dstIp === undefined || extra.length > 0) throw new UsageError('attack takes one DEST_IP');
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(dstIp)) throw new UsageError(`DEST_IP must be an IPv4 address, not ${JSON.stringify(dstIp)}`);
  const ifname = args.values.get('dev');
  if (ifname === undefined) throw new UsageError('--dev IFACE is required (the interface to send from)');
  const driverKind = parseDriver(args.values.get('driver') ?? HostDriverKind.PACKET);
  const qpnText = args.values.get('qpn');
  if (qpnText === undefined) throw new UsageError('--qpn N is required (the target QP)');
  const qpn = intValue(qpnText, 'qpn', 2, 0xffffff);
  const psnText = args.values.get('psn') ?? 'follow';
  const follow = psnText === 'follow';
  const psn = follow ? -1 : intValue(psnText, 'psn', 0, 0xffffff);
  const num = (name: string, min: number, max: number): number | undefined => {
    const v = args.values.get(name);
    return v === undefined ? undefined : intValue(v, name, min, max);
  };
  const window = num('psn-window', 1, 0x400000) ?? 8;
  const rkey = num('rkey', 0, 0xffffffff) ?? null;
  const vaText = args.values.get('va');
  if (vaText !== undefined && !/^0x[0-9a-f]{1,16}$/i.test(vaText)) throw new UsageError(`--va must be a 0x-hex address, not ${JSON.stringify(vaText)}`);
  const va = vaText === undefined ? null : BigInt(vaText);
  const cases = parseCases(args.lists.get('case'));
  const count = num('count', 1, 1e9) ?? cases.length;
  const rate = num('rate', 1, 1e8) ?? null;
  const learnMs = num('learn-ms', 1, 600_000) ?? 5000;
  const json = args.flags.has('json');

  let port: (AttackPort & { close(): void }) | null = null;
  try {
    let srcMac: number;
    let srcIp: string;
    let dstMac: number;
    if (driverKind === HostDriverKind.MEMORY) {
      const inj = ctx.testbed.injector(ifname);
      port = { ...inj, close: () => undefined };
      srcMac = inj.mac;
      srcIp = inj.ipv4;
      const other = ifname === 'sim-a' ? 'sim-b' : 'sim-a';
      dstMac = ctx.testbed.injector(other).mac;
    } else {
      const ips = await interfaceIpv4(ifname);
      const first = ips[0];
      if (first === undefined) throw new UsageError(`interface ${ifname} has no IPv4 address`);
      srcIp = first;
      dstMac = await resolveNeighbor(ifname, dstIp, 3000);
      // Every frame the interface receives stays the kernel's and the stack's too (no UDP guard, no redirect of their traffic).
      const d = driverKind === HostDriverKind.XDP ? AfXdpDriver.open({ ifname }) : AfPacketDriver.open({ ifname, udpGuard: false });
      port = d;
      srcMac = d.mac;
    }
    const target: AttackTarget = { srcMac, dstMac, srcIp, dstIp, qpn, psn, window, rkey, va, udpSport: rxeUdpSourcePort(qpn, qpn, 0) };
    const plan: AttackPlan = { cases, count, ratePps: rate, follow, learnMs };
    const s = await runAttack(port, target, plan);
    if (json) out.stdout(`${JSON.stringify({ ...s, device: ifname, driver: driverKind })}\n`);
    else {
      out.stdout(
        `sent ${s.frames} frames to ${dstIp} QP 0x${qpn.toString(16)} in ${s.seconds.toFixed(3)} s (PSN ${s.target.psnFirst}${s.target.psnLast !== s.target.psnFirst ? ` .. ${s.target.psnLast}` : ''}, window ${window})\n`,
      );
      for (const [c, n] of Object.entries(s.perCase)) out.stdout(`  ${c.padEnd(17)} ${n}\n`);
    }
    return 0;
  } catch (e) {
    if (e instanceof UsageError) throw e;
    const f = failureOf(e);
    if (json) out.stdout(`${JSON.stringify({ ok: false, ...f })}\n`);
    out.stderr(`roce attack: ${f.error}\n`);
    return 1;
  } finally {
    port?.close();
  }
}
