/**
 * What the stack needs to know about a real interface: MAC, MTU, ifindex,
 * addresses, VLAN parent and id, queue counts (from `ip -j -d addr`), and the
 * neighbour table lookup that turns a peer's IP address into its MAC.
 * `ip` runs through execFile with a timeout; with `netns` it runs as
 * `ip -n NS`, so the interface may live in another network namespace.
 */
import { execFile } from 'node:child_process';
import * as dgram from 'node:dgram';
import * as net from 'node:net';
import { NativeErrorCode, NicDriverError } from './native-binding';

export interface InterfaceInfo {
  name: string;
  ifindex: number;
  /** MAC as a 48-bit integer (0 when the link has none). */
  mac: number;
  mtu: number;
  operState: string;
  ipv4: string[];
  ipv6: string[];
  /** For a VLAN interface: its parent and VLAN id. */
  vlan: { parent: string; id: number; protocol: string } | null;
  rxQueues: number;
  txQueues: number;
}

export interface IpOptions {
  /** Network namespace name (as `ip netns` knows it). */
  netns?: string;
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5000;

function runIp(args: string[], o: IpOptions): Promise<string> {
  const full = o.netns !== undefined ? ['-n', o.netns, ...args] : args;
  return new Promise((resolve, reject) => {
    execFile('ip', full, { timeout: o.timeoutMs ?? DEFAULT_TIMEOUT_MS, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err !== null) {
        const msg = stderr.trim() || err.message;
        const code = /does not exist|Cannot find device/i.test(msg) ? NativeErrorCode.NoSuchInterface : NativeErrorCode.InterfaceQuery;
        reject(new NicDriverError(code, `ip ${full.join(' ')}: ${msg}`));
        return;
      }
      resolve(stdout);
    });
  });
}

interface IpLink {
  ifindex?: number;
  ifname?: string;
  address?: string;
  mtu?: number;
  operstate?: string;
  link?: string;
  num_rx_queues?: number;
  num_tx_queues?: number;
  linkinfo?: { info_kind?: string; info_data?: { protocol?: string; id?: number } };
  addr_info?: Array<{ family?: string; local?: string }>;
}

export function macToNumber(mac: string): number {
  const hex = mac.replace(/[:-]/g, '');
  return /^[0-9a-f]{12}$/i.test(hex) ? parseInt(hex, 16) : 0;
}

/** The interface's MAC, MTU, addresses, VLAN and queues. Throws NicDriverError (NoSuchInterface, InterfaceQuery). */
export async function interfaceInfo(ifname: string, o: IpOptions = {}): Promise<InterfaceInfo> {
  if (!/^[^\s/]{1,15}$/.test(ifname)) throw new NicDriverError(NativeErrorCode.BadArgument, `'${ifname}' is not an interface name`);
  const out = await runIp(['-j', '-d', 'addr', 'show', 'dev', ifname], o);
  const links = JSON.parse(out) as IpLink[];
  const l = links[0];
  if (l === undefined) throw new NicDriverError(NativeErrorCode.NoSuchInterface, `no such interface: ${ifname}`);
  const addrs = l.addr_info ?? [];
  const vlan =
    l.linkinfo?.info_kind === 'vlan' ? { parent: l.link ?? '', id: l.linkinfo.info_data?.id ?? 0, protocol: l.linkinfo.info_data?.protocol ?? '802.1Q' } : null;
  return {
    name: l.ifname ?? ifname,
    ifindex: l.ifindex ?? 0,
    mac: macToNumber(l.address ?? ''),
    mtu: l.mtu ?? 0,
    operState: l.operstate ?? 'UNKNOWN',
    ipv4: addrs.filter((a) => a.family === 'inet' && a.local !== undefined).map((a) => a.local!),
    ipv6: addrs.filter((a) => a.family === 'inet6' && a.local !== undefined).map((a) => a.local!),
    vlan,
    rxQueues: l.num_rx_queues ?? 1,
    txQueues: l.num_tx_queues ?? 1,
  };
}

interface IpNeigh {
  dst?: string;
  lladdr?: string;
  state?: string[];
}

/** Usable states: the kernel has a MAC for the address. */
const RESOLVED = new Set(['REACHABLE', 'STALE', 'DELAY', 'PROBE', 'PERMANENT', 'NOARP']);

async function lookup(ifname: string, ip: string, o: IpOptions): Promise<{ mac: number; state: string } | null> {
  const out = await runIp(['-j', 'neigh', 'show', 'dev', ifname, 'to', ip], o);
  const entries = (out.trim() === '' ? [] : JSON.parse(out)) as IpNeigh[];
  const e = entries.find((x) => x.dst === ip);
  if (e === undefined) return null;
  const state = e.state?.[0] ?? 'NONE';
  if (e.lladdr !== undefined && RESOLVED.has(state)) return { mac: macToNumber(e.lladdr), state };
  return { mac: 0, state };
}

/**
 * The next hop towards `ip` from `ifname`, as the kernel's route table says (`ip route get`): the
 * gateway when the route has one (a routed RoCE v2 peer: its frames go to the router's MAC), else
 * `ip` itself (on-link).
 */
export async function nextHop(ifname: string, ip: string, o: IpOptions = {}): Promise<string> {
  if (!net.isIP(ip)) throw new NicDriverError(NativeErrorCode.BadArgument, `'${ip}' is not an IP address`);
  const out = await runIp(['-j', 'route', 'get', ip, 'oif', ifname], o);
  const routes = (out.trim() === '' ? [] : JSON.parse(out)) as Array<{ gateway?: string }>;
  return routes[0]?.gateway ?? ip;
}

/** Makes the kernel resolve `ip`: one UDP datagram (discard port) from the interface's address. */
async function trigger(ifname: string, ip: string, o: IpOptions): Promise<void> {
  if (o.netns !== undefined) {
    // Sockets of this process live in its own namespace: let ping, run inside the namespace, send it.
    await new Promise<void>((resolve) => {
      execFile('ip', ['netns', 'exec', o.netns!, 'ping', '-c', '1', '-W', '1', '-I', ifname, ip], { timeout: o.timeoutMs ?? DEFAULT_TIMEOUT_MS }, () =>
        resolve(),
      );
    });
    return;
  }
  const info = await interfaceInfo(ifname, o);
  const v6 = net.isIPv6(ip);
  const local = v6 ? info.ipv6[0] : info.ipv4[0];
  const sock = dgram.createSocket(v6 ? 'udp6' : 'udp4');
  try {
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.bind({ port: 0, ...(local !== undefined ? { address: local } : {}) }, () => resolve());
    });
    const target = v6 && ip.toLowerCase().startsWith('fe80:') && !ip.includes('%') ? `${ip}%${ifname}` : ip;
    await new Promise<void>((resolve) => sock.send(Buffer.alloc(1), 9, target, () => resolve()));
  } catch {
    // resolution is then up to the poll below timing out
  } finally {
    sock.close();
  }
}

/**
 * The MAC of `ip` on `ifname` from the kernel's neighbour table. When there is no usable entry it
 * makes the kernel resolve it (ARP / neighbour discovery, by sending one datagram to the address)
 * and polls the table until the entry is REACHABLE or STALE, it FAILED, or `timeoutMs` passed.
 * @throws NicDriverError NeighborUnresolved (or NoSuchInterface / BadArgument / InterfaceQuery).
 */
export async function resolveNeighbor(ifname: string, ip: string, timeoutMs = 3000, o: IpOptions = {}): Promise<number> {
  if (!net.isIP(ip)) throw new NicDriverError(NativeErrorCode.BadArgument, `'${ip}' is not an IP address`);
  const first = await lookup(ifname, ip, o);
  if (first !== null && first.mac !== 0) return first.mac;
  const deadline = Date.now() + timeoutMs;
  await trigger(ifname, ip, { ...o, timeoutMs: Math.max(1000, timeoutMs) });
  let last = first?.state ?? 'none';
  for (;;) {
    const e = await lookup(ifname, ip, o);
    if (e !== null) {
      if (e.mac !== 0) return e.mac;
      last = e.state;
      if (e.state === 'FAILED') break;
    }
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new NicDriverError(
    NativeErrorCode.NeighborUnresolved,
    `cannot resolve ${ip} on ${ifname}${o.netns !== undefined ? ` (netns ${o.netns})` : ''}: neighbour state ${last} after ${timeoutMs} ms`,
  );
}

/**
 * The interface that reaches `ip`, as rdma_resolve_addr() finds its device: the interface that
 * holds `ip` when it is one of this host's addresses (a server's bind address), otherwise the
 * `dev` of `ip -j route get IP`. Throws NicDriverError (BadArgument, InterfaceQuery).
 */
export async function interfaceForAddress(ip: string, o: IpOptions = {}): Promise<string> {
  if (!net.isIP(ip)) throw new NicDriverError(NativeErrorCode.BadArgument, `'${ip}' is not an IP address`);
  const own = JSON.parse((await runIp(['-j', 'addr', 'show', 'to', ip], o)) || '[]') as IpLink[];
  const holder = own.find((l) => l.ifname !== undefined && l.ifname !== 'lo' && (l.addr_info?.length ?? 0) > 0);
  if (holder?.ifname !== undefined) return holder.ifname;
  const routes = JSON.parse((await runIp(['-j', 'route', 'get', ip], o)) || '[]') as Array<{ dev?: string; type?: string }>;
  const dev = routes[0]?.dev;
  if (dev === undefined || dev === 'lo')
    throw new NicDriverError(
      NativeErrorCode.InterfaceQuery,
      `no route to ${ip} through a network interface${dev === 'lo' ? ' (it is a loopback address)' : ''}`,
    );
  return dev;
}
