/**
 * `roce probe --doctor`: the local configuration a RoCE connection needs, checked one item at a
 * time, each with ok or problem and the fix: the interface exists and is up, its MTU carries the
 * path MTU asked for, its GIDs (which are RoCE v2 IPv4-mapped, which link-local), the DUT's
 * address resolves (neighbour entry), UDP 4791 at the DUT is taken (no ICMP port unreachable),
 * and the ECN settings the host exposes.
 */
import * as dgram from 'node:dgram';
import * as fs from 'node:fs';
import { isIP } from 'node:net';
import { Opcode } from '../../packets/opcodes';
import type { RocePacket } from '../../packets/decode';
import { interfaceInfo, resolveNeighbor, type InterfaceInfo } from '../../nic-driver/interface-info';
import { NicDriverError } from '../../nic-driver/native-binding';

export const CheckStatus = { OK: 'ok', PROBLEM: 'problem', INFO: 'info' } as const;
export type CheckStatus = (typeof CheckStatus)[keyof typeof CheckStatus];

/** One check: its name, what it found, and (for a problem) what to change. */
export interface DoctorCheck {
  check: 'interface' | 'mtu' | 'gids' | 'neighbour' | 'roce-port' | 'ecn';
  status: CheckStatus;
  detail: string;
  fix: string | null;
}

export interface DoctorOptions {
  ifname: string;
  /** The DUT's (peer's) address, or undefined to skip the checks that need it. */
  dut?: string | undefined;
  /** The path MTU the connection is to use (256..4096), default 1024 (perftest's default on RoCE). */
  mtu?: number | undefined;
  /** How long to wait for the neighbour and for an ICMP answer, ms (default 1000). */
  waitMs?: number | undefined;
  /** Where sysfs and procfs are (tests of the ECN reading only). */
  sysRoot?: string | undefined;
  /**
   * Checks to leave out. The checks before a live run (pre-run.ts) leave out `ecn`, which is about
   * the host's kernel RoCE and not this stack, and make `roce-port` themselves, judged by the
   * DUT's role.
   */
  skip?: readonly ('roce-port' | 'ecn')[] | undefined;
}

/** The IB path MTUs (IBTA §7.7.2, table 43 lists 256..4096). */
export const PATH_MTUS = [256, 512, 1024, 2048, 4096] as const;

/**
 * Bytes a RoCE v2 packet adds to its payload on the Ethernet MTU at most: the kernel's
 * iboe_get_mtu() (include/rdma/ib_verbs.h) takes GRH 40 + UDP 8 + BTH 12 + XRC ETH 4 + AtomicETH 28
 * + ICRC 4 = 96 off the interface MTU before it picks the largest IB MTU that fits.
 */
export const ROCE_MTU_OVERHEAD = 96;

/** The largest path MTU an interface MTU carries, as iboe_get_mtu() reckons it, or 0 when none does. */
export function pathMtuFor(interfaceMtu: number): number {
  const room = interfaceMtu - ROCE_MTU_OVERHEAD;
  let best = 0;
  for (const m of PATH_MTUS) if (room >= m) best = m;
  return best;
}

/** A GID this stack (and rxe) makes from an interface address: RoCE v2 from IPv4 (IPv4-mapped), from IPv6 (link-local or global). */
export interface LocalGid {
  gid: string;
  kind: 'ipv4Mapped' | 'linkLocal' | 'ipv6';
}

/** The RoCE v2 GIDs of an interface's addresses, in the order rxe lists them (link-local first, as the default GID 0). */
export function gidsOf(info: Pick<InterfaceInfo, 'ipv4' | 'ipv6'>): LocalGid[] {
  const six: LocalGid[] = info.ipv6.map((a) => ({ gid: a, kind: a.toLowerCase().startsWith('fe80:') ? 'linkLocal' : 'ipv6' }));
  return [
    ...six.filter((g) => g.kind === 'linkLocal'),
    ...info.ipv4.map((a): LocalGid => ({ gid: `::ffff:${a}`, kind: 'ipv4Mapped' })),
    ...six.filter((g) => g.kind === 'ipv6'),
  ];
}

/** The GID check: is there one of the kind the DUT's address needs? */
export function gidCheck(gids: readonly LocalGid[], dut: string | undefined, ifname: string): DoctorCheck {
  const list =
    gids.length === 0
      ? 'none'
      : gids
          .map((g) => `${g.gid} (${g.kind === 'ipv4Mapped' ? 'RoCE v2, IPv4-mapped' : g.kind === 'linkLocal' ? 'RoCE v2, link-local' : 'RoCE v2, IPv6'})`)
          .join(', ');
  if (gids.length === 0)
    return { check: 'gids', status: CheckStatus.PROBLEM, detail: `${ifname} has no IP address, so no RoCE v2 GID`, fix: `ip addr add ADDR/LEN dev ${ifname}` };
  if (dut === undefined) return { check: 'gids', status: CheckStatus.OK, detail: list, fix: null };
  const want: LocalGid['kind'] = isIP(dut) === 4 || dut.startsWith('::ffff:') ? 'ipv4Mapped' : dut.toLowerCase().startsWith('fe80:') ? 'linkLocal' : 'ipv6';
  const index = gids.findIndex((g) => g.kind === want);
  if (index < 0)
    return {
      check: 'gids',
      status: CheckStatus.PROBLEM,
      detail: `${list}: none of the kind ${dut} needs (${want})`,
      fix: want === 'ipv4Mapped' ? `give ${ifname} an IPv4 address in ${dut}'s subnet` : `give ${ifname} an IPv6 address of ${dut}'s kind`,
    };
  const zero = gids[0];
  const note =
    index === 0 || zero === undefined
      ? ''
      : `; GID 0 is ${zero.gid} (${zero.kind}): tools that default to GID index 0 (perftest without -x) send from it, the wrong kind for ${dut}`;
  return {
    check: 'gids',
    status: index === 0 ? CheckStatus.OK : CheckStatus.INFO,
    detail: `${list}; ${dut} needs the ${want} one, GID index ${index} here${note}`,
    fix:
      index === 0
        ? null
        : `give both ends the GID index of the ${want} GID (perftest -x ${index}, roce ... --gid-index ${index}); index numbers on rxe follow its table: show_gids`,
  };
}

/** The MTU check: the interface's MTU against the path MTU asked for. */
export function mtuCheck(interfaceMtu: number, pathMtu: number, ifname: string): DoctorCheck {
  const fits = pathMtuFor(interfaceMtu);
  const detail = `${ifname} MTU ${interfaceMtu} carries a path MTU of ${fits === 0 ? 'none' : fits} (MTU - ${ROCE_MTU_OVERHEAD} bytes of RoCE headers); the connection asks for ${pathMtu}`;
  if (fits >= pathMtu) return { check: 'mtu', status: CheckStatus.OK, detail, fix: null };
  return {
    check: 'mtu',
    status: CheckStatus.PROBLEM,
    detail: `${detail}: frames of a full ${pathMtu}-byte payload do not fit and are dropped, the peer never answers them`,
    fix: `ip link set ${ifname} mtu ${pathMtu + ROCE_MTU_OVERHEAD} (on both ends and every hop), or use a path MTU of ${fits === 0 ? 256 : fits} (perftest -m ${fits === 0 ? 256 : fits}, --mtu ${fits === 0 ? 256 : fits})`,
  };
}

/** The roce-port check's datagram: BTH UD SEND ONLY, pad 0, P_Key 0xffff, DestQP 0, PSN 0; 8 bytes of DETH; a zero ICRC. */
export const ROCE_PORT_PROBE: Uint8Array = Uint8Array.from([Opcode.UD_SEND_ONLY, 0x00, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);

/** Whether a decoded frame is the roce-port check's datagram (a capture of a run that made the check holds it, with its bad ICRC on purpose). */
export function isRocePortProbe(p: RocePacket): boolean {
  return p.bth !== null && p.bth.opcode === Opcode.UD_SEND_ONLY && p.bth.destQp === 0 && p.bth.psn === 0 && p.icrc === 0;
}

/**
 * One UDP datagram to `dut`:4791 from a connected socket, then a wait: Linux reports an ICMP port
 * unreachable for it as ECONNREFUSED on the socket (udp_err()). The datagram is a BTH to QP 0 with
 * a wrong ICRC: a RoCE device drops it silently (rxe_icrc.c rxe_icrc_check()).
 */
export function rocePortAnswer(dut: string, waitMs: number): Promise<RocePortAnswer> {
  return new Promise((resolve) => {
    const sock = dgram.createSocket(isIP(dut) === 6 ? 'udp6' : 'udp4');
    let done = false;
    const end = (r: RocePortAnswer): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.close();
      resolve(r);
    };
    const timer = setTimeout(() => end('silent'), waitMs);
    sock.on('error', (e: NodeJS.ErrnoException) => end(e.code === 'ECONNREFUSED' ? 'refused' : { error: e.message }));
    const bth = Buffer.from(ROCE_PORT_PROBE);
    sock.connect(4791, dut, () => {
      sock.send(bth, (err) => {
        if (err !== null && err !== undefined) end((err as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? 'refused' : { error: err.message });
        // A second send after a short wait surfaces a pending ICMP error on kernels that report it only then.
        else
          setTimeout(
            () => {
              if (!done)
                sock.send(
                  bth,
                  (e2) => e2 !== null && e2 !== undefined && end((e2 as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? 'refused' : { error: e2.message }),
                );
            },
            Math.min(200, waitMs / 2),
          );
      });
    });
  });
}

/** What one datagram to the DUT's UDP 4791 brought back (rocePortAnswer). */
export type RocePortAnswer = 'refused' | 'silent' | { error: string };

/** The roce-port check from `answer`: ICMP port unreachable is a problem (nothing takes RoCE v2 there). */
export function rocePortCheck(dut: string, answer: RocePortAnswer, waitMs: number): DoctorCheck {
  if (answer === 'refused')
    return {
      check: 'roce-port',
      status: CheckStatus.PROBLEM,
      detail: `${dut} answered UDP port 4791 with ICMP port unreachable: nothing takes RoCE v2 there`,
      fix: ROCE_PORT_FIX(dut),
    };
  if (answer === 'silent')
    return { check: 'roce-port', status: CheckStatus.OK, detail: `no ICMP port unreachable from ${dut} for UDP 4791 within ${waitMs} ms`, fix: null };
  return {
    check: 'roce-port',
    status: CheckStatus.PROBLEM,
    detail: `a datagram to ${dut}:4791 could not be sent: ${answer.error}`,
    fix: `check the route to ${dut}`,
  };
}

/** What to do about a DUT whose UDP 4791 nothing takes. */
export const ROCE_PORT_FIX = (dut: string): string =>
  `load RoCE on ${dut} (rdma link add rxe0 type rxe netdev IF, or the NIC's RoCE driver; for this stack, a running roce command on that interface)`;

/** What the ECN settings the host exposes say (mlx5's per-priority roce_np / roce_rp switches; TCP's tcp_ecn does not apply to RoCE). */
export function ecnCheck(ifname: string, sysRoot: string): DoctorCheck {
  const read = (p: string): string | null => {
    try {
      return fs.readFileSync(`${sysRoot}${p}`, 'utf8').trim();
    } catch {
      return null;
    }
  };
  const parts: string[] = [];
  const enabled = (dir: string): number[] | null => {
    let names: string[];
    try {
      names = fs.readdirSync(`${sysRoot}${dir}`);
    } catch {
      return null;
    }
    return names
      .filter((n) => read(`${dir}/${n}`) === '1')
      .map(Number)
      .sort((a, b) => a - b);
  };
  const np = enabled(`/sys/class/net/${ifname}/ecn/roce_np/enable`);
  const rp = enabled(`/sys/class/net/${ifname}/ecn/roce_rp/enable`);
  const tcp = read('/proc/sys/net/ipv4/tcp_ecn');
  if (tcp !== null) parts.push(`net.ipv4.tcp_ecn=${tcp} (TCP only)`);
  if (np === null && rp === null) {
    parts.push(
      `${ifname} exposes no RoCE ECN switches (/sys/class/net/${ifname}/ecn: mlx5 only; rxe and this stack mark and answer per their own settings, roce ... --cc)`,
    );
    return { check: 'ecn', status: CheckStatus.INFO, detail: parts.join('; '), fix: null };
  }
  parts.push(`notification point on priorities [${(np ?? []).join(',')}], reaction point on [${(rp ?? []).join(',')}]`);
  const same = JSON.stringify(np) === JSON.stringify(rp);
  return {
    check: 'ecn',
    status: same ? CheckStatus.OK : CheckStatus.PROBLEM,
    detail: parts.join('; '),
    fix: same ? null : `enable roce_np and roce_rp on the same priorities here and on the peer (echo 1 > /sys/class/net/${ifname}/ecn/roce_np/enable/P)`,
  };
}

/** Runs every check in order; a check that cannot run (no interface) ends the list with its problem. */
export async function runDoctor(o: DoctorOptions): Promise<DoctorCheck[]> {
  const out: DoctorCheck[] = [];
  const waitMs = o.waitMs ?? 1000;
  const skip = new Set(o.skip ?? []);
  let info: InterfaceInfo;
  try {
    info = await interfaceInfo(o.ifname);
  } catch (e) {
    if (!(e instanceof NicDriverError)) throw e;
    out.push({ check: 'interface', status: CheckStatus.PROBLEM, detail: e.message, fix: 'give --dev an interface of this host (ip link)' });
    return out;
  }
  // A veth or a real NIC says UP; a loopback or tun device says UNKNOWN and still carries frames.
  const up = info.operState === 'UP' || info.operState === 'UNKNOWN';
  out.push({
    check: 'interface',
    status: up ? CheckStatus.OK : CheckStatus.PROBLEM,
    detail: `${info.name} is ${info.operState}`,
    fix: up ? null : `ip link set ${info.name} up (and its peer end or cable)`,
  });
  out.push(mtuCheck(info.mtu, o.mtu ?? 1024, info.name));
  out.push(gidCheck(gidsOf(info), o.dut, info.name));
  if (o.dut !== undefined && (info.ipv4.includes(o.dut) || info.ipv6.includes(o.dut) || info.mac === 0)) {
    // An address of this interface, or a link without MACs (loopback): no neighbour entry to have.
    out.push({
      check: 'neighbour',
      status: CheckStatus.OK,
      detail: `${o.dut} needs no neighbour entry on ${info.name} (a local address or a link without MACs)`,
      fix: null,
    });
  } else if (o.dut !== undefined) {
    try {
      const mac = await resolveNeighbor(info.name, o.dut, waitMs);
      out.push({
        check: 'neighbour',
        status: CheckStatus.OK,
        detail: `${o.dut} is at ${mac
          .toString(16)
          .padStart(12, '0')
          .replace(/(..)(?!$)/g, '$1:')}`,
        fix: null,
      });
    } catch (e) {
      if (!(e instanceof NicDriverError)) throw e;
      out.push({
        check: 'neighbour',
        status: CheckStatus.PROBLEM,
        detail: e.message,
        fix: `check that ${o.dut} is up and on ${info.name}'s link or route (ip route get ${o.dut}; ip neigh show dev ${info.name})`,
      });
    }
  }
  if (o.dut !== undefined && !skip.has('roce-port')) out.push(rocePortCheck(o.dut, await rocePortAnswer(o.dut, waitMs), waitMs));
  if (!skip.has('ecn')) out.push(ecnCheck(info.name, o.sysRoot ?? ''));
  return out;
}

/** The checks as text, one line each, with the fix under a problem. */
export function doctorText(checks: readonly DoctorCheck[]): string {
  const w = Math.max(...checks.map((c) => c.check.length));
  const lines: string[] = [];
  for (const c of checks) {
    lines.push(`${c.status.padEnd(7)} ${c.check.padEnd(w)}  ${c.detail}`);
    if (c.fix !== null) lines.push(`${''.padEnd(10 + w)}fix: ${c.fix}`);
  }
  return `${lines.join('\n')}\n`;
}
