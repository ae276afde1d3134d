/**
 * `roce devices`: the interfaces RoCE can run on, with the frame driver modes
 * each offers (AF_XDP zero-copy, AF_XDP copy, AF_PACKET), the netdev MTU, the
 * active IB MTU the stack would use, and the GID table as rdma-core's
 * `show_gids` prints it (index, GID, IPv4 address when IPv4-mapped, RoCE
 * version, netdev), and whether `--steer` can work: ntuple-filters and the RoCE rules present
 * (`ethtool -k` / `ethtool -n`; "ethtool is not installed" without the binary).
 *
 * Without --probe the AF_XDP modes come from the kernel driver's name (a table
 * of drivers with native XDP and with AF_XDP zero-copy, marked "expected");
 * --probe (root, native addon) opens each driver for a moment to find out,
 * which attaches and detaches the XDP program.
 */
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type OptionSpec, UsageError, formatOptions } from './args';
import { parseCommand } from './command';
import type { Output } from './output';
import { ipv6FromString, ipv6ToString, macFromString } from '../packets/bytes';
import { linkLocalGid as deviceLinkLocalGid } from '../stack/device';
import { NativeErrorCode, NicDriverError } from '../nic-driver/native-binding';
import { type CommandRunner, type SteeringStatus, steeringStatus, systemRunner } from '../apps/host/roce-steering';
import { type RdmaDevice, listRdmaDevices } from '../apps/host/rdma-sysfs';

/** Where the command reads the kernel's RDMA devices and interfaces' drivers. */
const SYSFS_ROOT = '/sys';

export const DEVICES_OPTIONS: readonly OptionSpec[] = [
  { name: 'netns', kind: 'string', value: 'NAME', help: 'list the interfaces of this network namespace (ip netns)' },
  { name: 'all', short: 'a', kind: 'flag', help: 'also list interfaces RoCE cannot use, with the reason' },
  { name: 'probe', kind: 'flag', help: 'open each driver briefly to find the AF_XDP mode (root; attaches XDP for a moment)' },
  { name: 'json', kind: 'flag', help: 'print one JSON array' },
  { name: 'help', short: 'h', kind: 'flag', help: 'this help' },
];

export const DEVICES_USAGE = `usage: roce devices [--netns NAME] [--all] [--probe] [--json]

Lists the kernel's RDMA devices (/sys/class/infiniband, as ibv_devices and
\`rdma link\` show them: node GUID, port state, link layer, network interface),
which \`roce perftest -d\` also takes, then the network interfaces RoCE v2 can
run on: the frame driver modes (AF_XDP zero-copy, AF_XDP copy, AF_PACKET), the
MTU, the active IB MTU, the receive queues, ntuple steering (ethtool: what
--steer needs) and the GID table (as show_gids prints it).

${formatOptions(DEVICES_OPTIONS)}

Exit status: 0 when the interfaces were listed, 1 when they could not be (the
reason is printed), 2 on a usage error.`;

/** How the AF_XDP driver can run on an interface. */
export const XdpSupport = {
  ZERO_COPY: 'AF_XDP zero-copy',
  COPY_NATIVE: 'AF_XDP copy (native XDP)',
  COPY_GENERIC: 'AF_XDP copy (generic XDP)',
} as const;
export type XdpSupport = (typeof XdpSupport)[keyof typeof XdpSupport];

export interface GidEntry {
  index: number;
  gid: string;
  /** The IPv4 address of an IPv4-mapped GID, else ''. */
  ipv4: string;
  version: 'v2';
  netdev: string;
}

export interface DeviceEntry {
  name: string;
  usable: boolean;
  /** Why it cannot be used ('' when usable). */
  reason: string;
  /** Kernel driver (or link kind: veth, vlan, bridge, ...). */
  kernelDriver: string;
  /** Frame driver modes, best first. */
  modes: string[];
  /** True when the modes were found by opening the drivers (--probe). */
  probed: boolean;
  mtu: number;
  /** The path MTU the stack uses at most (IB MTU: 256..4096), 0 when the link is too small. */
  activeMtu: number;
  state: string;
  mac: string;
  vlan: { parent: string; id: number } | null;
  /** Active receive queues (AF_XDP serves each with its own socket; RSS may use any). */
  rxQueues: number;
  /** With --probe: the receive queues AF_XDP could not open, each with why (RoCE flows hashed there would be lost). */
  queueProblems: string[];
  /** ntuple steering (`ethtool -k` / `ethtool -n`): whether `--steer` can work, and the RoCE rules present; null for loopback. */
  steering: SteeringStatus | null;
  gids: GidEntry[];
  /** The kernel's RDMA devices with a port on this interface (e.g. rxe0 port 1): `-d` may name them instead. */
  rdmaDevices: { name: string; port: number }[];
}

/** Kernel drivers with AF_XDP zero-copy (mainline, as of Linux 6.x). */
const ZERO_COPY_DRIVERS = new Set([
  'i40e',
  'ice',
  'ixgbe',
  'igc',
  'igb',
  'mlx5_core',
  'stmmac',
  'idpf',
  'virtio_net',
  'bnxt_en',
  'txgbe',
  'ngbe',
  'gve',
  'fec',
]);
/** Kernel drivers (and link kinds) with native XDP. */
const NATIVE_XDP_DRIVERS = new Set([
  ...ZERO_COPY_DRIVERS,
  'veth',
  'tun',
  'mlx4_en',
  'ena',
  'nfp',
  'qede',
  'sfc',
  'thunderx',
  'mvneta',
  'mvpp2',
  'ixgbevf',
  'netsec',
  'cpsw',
  'hv_netvsc',
  'xen-netfront',
  'bnxt',
  'lan966x',
  'atlantic',
  'dpaa2-eth',
  'enetc',
  'octeontx2',
  'mana',
]);

/**
 * RoCE v2 overhead that must fit in the netdev MTU besides the IB payload: IPv6 40 (the larger IP
 * header), UDP 8, BTH 12, the largest extension headers 28, ICRC 4 (stack/device.ts maxMtu).
 */
const ROCE_OVERHEAD = 40 + 8 + 12 + 28 + 4;

/** The IB MTU the stack uses on a link of `mtu` bytes (0: not even 256 fits). */
export function activeIbMtu(mtu: number): number {
  for (const b of [4096, 2048, 1024, 512, 256]) if (b <= mtu - ROCE_OVERHEAD) return b;
  return 0;
}

/** GID 0 of a RoCE port for a MAC in text form (see stack/device.ts linkLocalGid); '' for a malformed MAC. */
export function linkLocalGidText(mac: string): string {
  try {
    return ipv6ToString(deviceLinkLocalGid(macFromString(mac)));
  } catch {
    return '';
  }
}

/** The GID table the stack builds (stack/device.ts): the link-local GID, then one per IPv4 address (IPv4-mapped), then per IPv6 address. */
export function gidTable(netdev: string, mac: string, ipv4: readonly string[], ipv6: readonly string[]): GidEntry[] {
  const out: GidEntry[] = [];
  const ll = linkLocalGidText(mac);
  if (ll !== '') out.push({ index: 0, gid: ll, ipv4: '', version: 'v2', netdev });
  for (const a of ipv4) out.push({ index: out.length, gid: ipv6ToString(ipv6FromString(`::ffff:${a}`)), ipv4: a, version: 'v2', netdev });
  for (const a of ipv6) {
    // The link-local address derived from the MAC is GID 0 already.
    const text = ipv6ToString(ipv6FromString(a));
    if (text !== ll) out.push({ index: out.length, gid: text, ipv4: '', version: 'v2', netdev });
  }
  return out;
}

interface IpAddrLink {
  ifname?: string;
  num_rx_queues?: number;
  address?: string;
  mtu?: number;
  operstate?: string;
  flags?: string[];
  link_type?: string;
  link?: string;
  linkinfo?: { info_kind?: string; info_data?: { id?: number } };
  addr_info?: Array<{ family?: string; local?: string; scope?: string }>;
}

function runIp(args: string[], netns: string | undefined): Promise<string> {
  const full = netns !== undefined ? ['-n', netns, ...args] : args;
  return new Promise((resolve, reject) => {
    execFile('ip', full, { timeout: 5000, encoding: 'utf8', maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err !== null) reject(new NicDriverError(NativeErrorCode.InterfaceQuery, `ip ${full.join(' ')}: ${stderr.trim() || err.message}`));
      else resolve(stdout);
    });
  });
}

/** The kernel driver of `ifname` (sysfs), or its link kind (veth, vlan, ...) for virtual links. */
function kernelDriverOf(ifname: string, kind: string | undefined, netns: string | undefined): string {
  if (netns === undefined) {
    try {
      return path.basename(fs.readlinkSync(`/sys/class/net/${ifname}/device/driver`));
    } catch {
      // a virtual link: no device
    }
  }
  return kind ?? 'unknown';
}

/** Active receive queues of `ifname` (sysfs rx-N entries; in another namespace through `ip netns exec`), or `fallback`. */
function rxQueueCount(ifname: string, netns: string | undefined, fallback: number): number {
  try {
    const names =
      netns === undefined
        ? fs.readdirSync(`/sys/class/net/${ifname}/queues`)
        : execFileSync('ip', ['netns', 'exec', netns, 'ls', `/sys/class/net/${ifname}/queues`], {
            encoding: 'utf8',
            timeout: 5000,
            stdio: ['ignore', 'pipe', 'ignore'],
          }).split(/\s+/);
    const n = names.filter((e) => /^rx-\d+$/.test(e)).length;
    return n > 0 ? n : fallback;
  } catch {
    return fallback;
  }
}

/** With --probe: opens AF_XDP on every receive queue at once, as the stack does, and says which cannot be had. */
function probeQueues(ifname: string, netns: string | undefined, queues: number): string[] {
  if (queues <= 1) return [];
  const { openXdpQueues } = require('../apps/host/xdp-queues') as typeof import('../apps/host/xdp-queues');
  try {
    openXdpQueues(ifname, { queues: null, available: queues, busyPoll: false, ...(netns !== undefined ? { netns } : {}) }).close();
    return [];
  } catch (e) {
    return [(e as Error).message];
  }
}

function expectedModes(driver: string): string[] {
  const m: string[] = [];
  if (ZERO_COPY_DRIVERS.has(driver)) m.push(XdpSupport.ZERO_COPY, XdpSupport.COPY_NATIVE);
  else if (NATIVE_XDP_DRIVERS.has(driver)) m.push(XdpSupport.COPY_NATIVE);
  else m.push(XdpSupport.COPY_GENERIC);
  m.push('AF_PACKET');
  return m;
}

interface Probed {
  modes: string[];
  notes: string[];
}

/** Opens the drivers for a moment to learn what works (needs root and the native addon). */
function probeModes(ifname: string, netns: string | undefined): Probed {
  const modes: string[] = [];
  const notes: string[] = [];
  const xdp = require('../nic-driver/af-xdp-driver') as typeof import('../nic-driver/af-xdp-driver');
  const pkt = require('../nic-driver/af-packet-driver') as typeof import('../nic-driver/af-packet-driver');
  const base = { ifname, frames: 128, ...(netns !== undefined ? { netns } : {}) };
  for (const mode of ['zerocopy', 'copy'] as const) {
    try {
      const d = xdp.AfXdpDriver.open({ ...base, mode });
      const where = d.xdpMode === 'native' ? 'native XDP' : 'generic XDP';
      d.close();
      modes.push(mode === 'zerocopy' ? XdpSupport.ZERO_COPY : `AF_XDP copy (${where})`);
    } catch (e) {
      if (mode === 'copy') notes.push(`AF_XDP: ${(e as Error).message}`);
    }
  }
  try {
    pkt.AfPacketDriver.open({ ifname, ...(netns !== undefined ? { netns } : {}) }).close();
    modes.push('AF_PACKET');
  } catch (e) {
    notes.push(`AF_PACKET: ${(e as Error).message}`);
  }
  return { modes, notes };
}

/** The interfaces of this (or `netns`'s) network namespace, usable ones first. */
export async function listDevices(o: { netns?: string; probe?: boolean; ethtool?: CommandRunner; rdma?: readonly RdmaDevice[] } = {}): Promise<DeviceEntry[]> {
  const ethtool = o.ethtool ?? systemRunner(o.netns !== undefined ? { netns: o.netns } : {});
  const rdma = o.rdma ?? [];
  const links = JSON.parse(await runIp(['-j', '-d', 'addr', 'show'], o.netns)) as IpAddrLink[];
  const out: DeviceEntry[] = [];
  for (const l of links) {
    const name = l.ifname ?? '';
    if (name === '') continue;
    const addrs = l.addr_info ?? [];
    const ipv4 = addrs.filter((a) => a.family === 'inet' && a.local !== undefined).map((a) => a.local as string);
    const ipv6 = addrs.filter((a) => a.family === 'inet6' && a.local !== undefined).map((a) => a.local as string);
    const mac = l.address ?? '';
    const mtu = l.mtu ?? 0;
    const kind = l.linkinfo?.info_kind;
    const kernelDriver = kernelDriverOf(name, kind, o.netns);
    const up = (l.flags ?? []).includes('UP');
    let reason = '';
    if (l.link_type === 'loopback' || (l.flags ?? []).includes('LOOPBACK')) reason = 'loopback';
    else if (l.link_type !== undefined && l.link_type !== 'ether') reason = `link type ${l.link_type}, not Ethernet`;
    else if (!up) reason = 'down';
    else if (ipv4.length === 0 && ipv6.length === 0) reason = 'no IP address (RoCE v2 needs one for its GID)';
    else if (activeIbMtu(mtu) === 0) reason = `MTU ${mtu} is too small for a 256-byte IB MTU`;
    let modes = expectedModes(kernelDriver);
    let probed = false;
    const rxQueues = rxQueueCount(name, o.netns, l.num_rx_queues ?? 1);
    let queueProblems: string[] = [];
    if (o.probe === true && reason === '') {
      const p = probeModes(name, o.netns);
      modes = p.modes;
      probed = true;
      if (modes.length === 0) reason = p.notes.join('; ');
      else if (modes.some((m) => m.startsWith('AF_XDP'))) queueProblems = probeQueues(name, o.netns, rxQueues);
    }
    out.push({
      name,
      usable: reason === '',
      reason,
      kernelDriver,
      modes,
      probed,
      mtu,
      activeMtu: activeIbMtu(mtu),
      state: l.operstate ?? 'UNKNOWN',
      mac,
      vlan: kind === 'vlan' ? { parent: l.link ?? '', id: l.linkinfo?.info_data?.id ?? 0 } : null,
      rxQueues,
      queueProblems,
      steering: reason === 'loopback' ? null : steeringStatus(name, ethtool),
      gids: reason === 'loopback' ? [] : gidTable(name, mac, ipv4, ipv6),
      rdmaDevices: rdma.flatMap((d) => d.ports.filter((p) => p.netdev === name).map((p) => ({ name: d.name, port: p.port }))),
    });
  }
  return out.sort((a, b) => Number(b.usable) - Number(a.usable));
}

export async function devicesCommand(argv: readonly string[], out: Output): Promise<number> {
  const args = parseCommand(argv, out, { name: 'devices', options: DEVICES_OPTIONS, usage: DEVICES_USAGE, operands: 'none' });
  if (args === null) return 0;
  const netns = args.values.get('netns');
  if (netns !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(netns)) throw new UsageError(`--netns must be a namespace name, not ${JSON.stringify(netns)}`);
  let list: DeviceEntry[];
  // The RDMA devices of this process's view of sysfs (a namespace's own RDMA devices are not looked up).
  const rdma = listRdmaDevices(SYSFS_ROOT);
  try {
    list = await listDevices({ ...(netns !== undefined ? { netns } : {}), probe: args.flags.has('probe'), rdma });
  } catch (e) {
    out.stderr(`roce devices: ${(e as Error).message}\n`);
    return 1;
  }
  const shown = args.flags.has('all') ? list : list.filter((d) => d.usable);
  if (args.flags.has('json')) {
    out.stdout(`${JSON.stringify(shown)}\n`);
    return 0;
  }
  out.stdout(rdmaDevicesText(rdma, `${SYSFS_ROOT}/class/infiniband`));
  if (shown.length === 0) {
    out.stdout(`no usable interface${netns !== undefined ? ` in network namespace ${netns}` : ''} (run with --all to see why)\n`);
    return 0;
  }
  for (const d of shown) {
    const vlan = d.vlan !== null ? `, VLAN ${d.vlan.id} on ${d.vlan.parent}` : '';
    const rd = d.rdmaDevices.length > 0 ? `, RDMA ${d.rdmaDevices.map((r) => `${r.name} port ${r.port}`).join(', ')}` : '';
    out.stdout(`${d.name}: ${d.kernelDriver}${vlan}, ${d.state}, MAC ${d.mac}, MTU ${d.mtu}, active IB MTU ${d.activeMtu || '-'}${rd}\n`);
    if (!d.usable) {
      out.stdout(`  not usable: ${d.reason}\n\n`);
      continue;
    }
    out.stdout(`  drivers: ${d.modes.join(', ')}${d.probed ? '' : ' (expected from the kernel driver; --probe to check)'}\n`);
    out.stdout(`  receive queues: ${d.rxQueues}${d.rxQueues > 1 ? ' (AF_XDP opens a socket on each; --queues to choose)' : ''}\n`);
    for (const p of d.queueProblems) out.stdout(`  AF_XDP queues: ${p}\n`);
    if (d.steering !== null) out.stdout(`  ntuple steering: ${steeringText(d.steering)}\n`);
    out.stdout(`  ${'INDEX'.padEnd(7)}${'GID'.padEnd(41)}${'IPv4'.padEnd(17)}${'VER'.padEnd(5)}DEV\n`);
    out.stdout(`  ${'-----'.padEnd(7)}${'---'.padEnd(41)}${'----'.padEnd(17)}${'---'.padEnd(5)}---\n`);
    for (const g of d.gids) out.stdout(`  ${String(g.index).padEnd(7)}${expandGid(g.gid).padEnd(41)}${g.ipv4.padEnd(17)}${g.version.padEnd(5)}${g.netdev}\n`);
    out.stdout('\n');
  }
  return 0;
}

/** One line on what `--steer` would find: ntuple-filters, and the rules steering RoCE (UDP 4791). */
export function steeringText(s: SteeringStatus): string {
  if (!s.ethtool) return 'unknown: ethtool is not installed (apt-get install ethtool)';
  const feature =
    s.ntuple === 'fixed off'
      ? 'ntuple-filters off [fixed]'
      : s.ntuple === 'unknown'
        ? 'ntuple-filters not listed'
        : `ntuple-filters ${s.ntuple}${s.ntuple === 'off' ? ' (--steer turns it on for the run)' : ''}`;
  if (s.roceRules === null) return `${feature}; no rules readable (${s.problem}): --steer will not work here`;
  const rules = s.roceRules.map(
    (r) => `${r.id} ${r.flowType} port 4791 → ${r.queue === null ? 'drop or a VF' : `queue ${r.queue}`}${r.allRoce ? '' : ' (only some flows)'}`,
  );
  return `${feature}; RoCE rules: ${rules.length === 0 ? 'none' : rules.join(', ')}`;
}

/** show_gids prints GIDs in full: eight groups of four hex digits. */
export function expandGid(text: string): string {
  const b = ipv6FromString(text);
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((b[i] ?? 0) << 8) | (b[i + 1] ?? 0)).toString(16).padStart(4, '0'));
  return groups.join(':');
}

/**
 * The RDMA devices as a table of one line per port (ibv_devices' device and node GUID, `rdma
 * link`'s state, physical state and netdev, and the link layer), then a blank line; one line when
 * there are none (`dir`: where they were looked for).
 */
export function rdmaDevicesText(devices: readonly RdmaDevice[], dir: string): string {
  if (devices.length === 0) return `no RDMA devices under ${dir}: roce runs on the network interfaces below\n\n`;
  const rows: string[][] = [['device', 'node GUID', 'port', 'state', 'physical state', 'link layer', 'netdev']];
  for (const d of devices) {
    if (d.ports.length === 0) rows.push([d.name, d.nodeGuid || '-', '-', '-', '-', '-', '-']);
    for (const p of d.ports) rows.push([d.name, d.nodeGuid || '-', String(p.port), p.state || '-', p.physState || '-', p.linkLayer || '-', p.netdev || '-']);
  }
  const widths = (rows[0] as string[]).map((_, i) => Math.max(...rows.map((r) => (r[i] as string).length)));
  const line = (r: string[]): string => `  ${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd((widths[i] as number) + 2))).join('')}\n`;
  return `RDMA devices (${dir}):\n${rows.map(line).join('')}\n`;
}
