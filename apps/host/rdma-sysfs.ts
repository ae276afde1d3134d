/**
 * The kernel's RDMA devices as sysfs shows them (/sys/class/infiniband, what ibv_devices and
 * `rdma link` read): each device's node GUID and, per port, its state, link layer and network
 * interface; and the name a user gives `-d`, which perftest takes as an RDMA device (rxe0,
 * mlx5_0) and this stack runs on a network interface, mapped to that interface.
 *
 * The sysfs root is a parameter (the CLI passes /sys), so a test can build a tree of its own.
 * Where a port's interface is found, in this order: the port's GID table
 * (ports/N/gid_attrs/ndevs/*, one interface name per GID entry in use), the device's PCI
 * function (device/net/*, mlx5 and other hardware), and `parent` (rxe: the interface it was
 * added on, `rdma link add rxe0 type rxe netdev eth0`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { HostDeviceError, HostDeviceErrorCode } from './host-device';

/** One port of an RDMA device. */
export interface RdmaPort {
  port: number;
  /** ports/N/state without its number: ACTIVE, DOWN, INIT, ARMED ("4: ACTIVE" in sysfs). */
  state: string;
  /** ports/N/phys_state without its number: LINK_UP, DISABLED, ... ('' when absent). */
  physState: string;
  /** ports/N/link_layer: Ethernet (RoCE, iWARP) or InfiniBand. */
  linkLayer: string;
  /** The network interface of the port ('' when sysfs names none). */
  netdev: string;
}

/** One RDMA device (a directory of /sys/class/infiniband). */
export interface RdmaDevice {
  name: string;
  /** node_guid as sysfs prints it (four groups of four hex digits), '' when absent. */
  nodeGuid: string;
  ports: RdmaPort[];
}

/** The directory of the RDMA devices under the sysfs root `root`. */
function classDir(root: string): string {
  return path.join(root, 'class', 'infiniband');
}

function readText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

function list(dir: string): string[] {
  try {
    return fs.readdirSync(dir).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  } catch {
    return [];
  }
}

/** "4: ACTIVE" → "ACTIVE". */
function withoutNumber(text: string): string {
  const m = /^\d+:\s*(.*)$/.exec(text);
  return m !== null ? (m[1] as string) : text;
}

/** The network interface of port `port` of `devDir`: its GID table's, the PCI function's, or rxe's parent. */
function portNetdev(devDir: string, port: string): string {
  const ndevs = path.join(devDir, 'ports', port, 'gid_attrs', 'ndevs');
  // Reading an unused GID entry's ndev fails (EINVAL) or gives nothing: the first that names one.
  for (const e of list(ndevs)) {
    const n = readText(path.join(ndevs, e));
    if (n !== '') return n;
  }
  const net = list(path.join(devDir, 'device', 'net'));
  if (net.length > 0) return net[0] as string;
  return readText(path.join(devDir, 'parent'));
}

/** The RDMA devices under the sysfs root `root` (empty when there are none, or no /class/infiniband). */
export function listRdmaDevices(root: string): RdmaDevice[] {
  const dir = classDir(root);
  return list(dir).map((name) => {
    const devDir = path.join(dir, name);
    const ports = list(path.join(devDir, 'ports'))
      .filter((p) => /^\d+$/.test(p))
      .map((p) => ({
        port: Number(p),
        state: withoutNumber(readText(path.join(devDir, 'ports', p, 'state'))),
        physState: withoutNumber(readText(path.join(devDir, 'ports', p, 'phys_state'))),
        linkLayer: readText(path.join(devDir, 'ports', p, 'link_layer')),
        netdev: portNetdev(devDir, p),
      }));
    return { name, nodeGuid: readText(path.join(devDir, 'node_guid')), ports };
  });
}

/** What `-d NAME` named: a network interface, or an RDMA device and the interface of its port 1. */
export interface DeviceName {
  /** The network interface the stack runs on. */
  netdev: string;
  /** The RDMA device NAME was, or null when it was an interface. */
  rdmaDevice: string | null;
}

/**
 * The network interface `name` stands for: itself when /class/net has it; the interface of port 1
 * of the RDMA device of that name (perftest's -d, with -i 1); or, when sysfs has no /class/net
 * (not mounted), `name` unchanged, for the driver to judge. Otherwise a HostDeviceError
 * (NO_INTERFACE) that says where it looked.
 */
export function resolveDeviceName(name: string, root: string): DeviceName {
  if (name === '' || name.includes('/') || name === '.' || name === '..') {
    throw new HostDeviceError(HostDeviceErrorCode.NO_INTERFACE, `${JSON.stringify(name)} is not a network interface or RDMA device name`);
  }
  const net = path.join(root, 'class', 'net');
  if (fs.existsSync(path.join(net, name))) return { netdev: name, rdmaDevice: null };
  const devDir = path.join(classDir(root), name);
  if (fs.existsSync(devDir)) {
    const netdev = portNetdev(devDir, '1');
    if (netdev === '') {
      throw new HostDeviceError(
        HostDeviceErrorCode.NO_INTERFACE,
        `RDMA device ${name} names no network interface for port 1 (looked in ${path.join(devDir, 'ports', '1', 'gid_attrs', 'ndevs')}, ${path.join(devDir, 'device', 'net')} and ${path.join(devDir, 'parent')})`,
      );
    }
    return { netdev, rdmaDevice: name };
  }
  if (!fs.existsSync(net)) return { netdev: name, rdmaDevice: null };
  const known = listRdmaDevices(root).map((d) => d.name);
  throw new HostDeviceError(
    HostDeviceErrorCode.NO_INTERFACE,
    `no network interface or RDMA device named ${name}: tried ${path.join(net, name)} and ${devDir} (RDMA devices: ${known.length === 0 ? 'none' : known.join(', ')})`,
  );
}
