/**
 * The kernel's RDMA devices read from a sysfs tree built in a temporary directory, as the kernel
 * lays it out: rxe (the GID table's ndevs and `parent`), mlx5 (device/net), a device whose port
 * names no interface; `-d` names mapped to interfaces, and what an unknown name says. And `roce
 * devices`' table of them, or its one line when there are none.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { listRdmaDevices, resolveDeviceName } from '../../apps/host/rdma-sysfs';
import { HostDeviceError, HostDeviceErrorCode } from '../../apps/host/host-device';
import { rdmaDevicesText } from '../../cli/devices-command';

let root: string;

function put(rel: string, text: string): void {
  const f = path.join(root, rel);
  fs.mkdirSync(path.dirname(f), { recursive: true });
  fs.writeFileSync(f, `${text}\n`);
}

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-sysfs-'));
  for (const n of ['eth0', 'ens1f0', 'lo']) fs.mkdirSync(path.join(root, 'class', 'net', n), { recursive: true });
  // rxe0 on eth0: its GID table names the interface (entries 0 and 1 in use, 2 not: empty).
  put('class/infiniband/rxe0/node_guid', '5054:00ff:fe12:3456');
  put('class/infiniband/rxe0/parent', 'eth0');
  put('class/infiniband/rxe0/ports/1/state', '4: ACTIVE');
  put('class/infiniband/rxe0/ports/1/phys_state', '5: LinkUp');
  put('class/infiniband/rxe0/ports/1/link_layer', 'Ethernet');
  put('class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0', 'eth0');
  put('class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1', 'eth0');
  put('class/infiniband/rxe0/ports/1/gid_attrs/ndevs/2', '');
  // mlx5_0: a PCI function with its interface under device/net, no GID entry in use yet.
  put('class/infiniband/mlx5_0/node_guid', 'b859:9f03:00d4:1a2e');
  put('class/infiniband/mlx5_0/ports/1/state', '1: DOWN');
  put('class/infiniband/mlx5_0/ports/1/phys_state', '3: Disabled');
  put('class/infiniband/mlx5_0/ports/1/link_layer', 'Ethernet');
  fs.mkdirSync(path.join(root, 'class/infiniband/mlx5_0/ports/1/gid_attrs/ndevs'), { recursive: true });
  fs.mkdirSync(path.join(root, 'class/infiniband/mlx5_0/device/net/ens1f0'), { recursive: true });
  // ib9: an InfiniBand port without an interface.
  put('class/infiniband/ib9/node_guid', '0002:c903:0000:1234');
  put('class/infiniband/ib9/ports/1/state', '2: INIT');
  put('class/infiniband/ib9/ports/1/link_layer', 'InfiniBand');
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

test('each device with its node GUID and, per port, state, link layer and interface', () => {
  expect(listRdmaDevices(root)).toEqual([
    { name: 'ib9', nodeGuid: '0002:c903:0000:1234', ports: [{ port: 1, state: 'INIT', physState: '', linkLayer: 'InfiniBand', netdev: '' }] },
    { name: 'mlx5_0', nodeGuid: 'b859:9f03:00d4:1a2e', ports: [{ port: 1, state: 'DOWN', physState: 'Disabled', linkLayer: 'Ethernet', netdev: 'ens1f0' }] },
    { name: 'rxe0', nodeGuid: '5054:00ff:fe12:3456', ports: [{ port: 1, state: 'ACTIVE', physState: 'LinkUp', linkLayer: 'Ethernet', netdev: 'eth0' }] },
  ]);
});

test('no /class/infiniband: no devices, and roce devices says so in one line', () => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-sysfs-empty-'));
  try {
    const list = listRdmaDevices(empty);
    expect(list).toEqual([]);
    const text = rdmaDevicesText(list, path.join(empty, 'class', 'infiniband'));
    expect(text.trimEnd().split('\n')).toEqual([`no RDMA devices under ${path.join(empty, 'class', 'infiniband')}: roce runs on the network interfaces below`]);
  } finally {
    fs.rmSync(empty, { recursive: true, force: true });
  }
});

test("roce devices' table: one line per port, as ibv_devices and rdma link show them", () => {
  const lines = rdmaDevicesText(listRdmaDevices(root), '/sys/class/infiniband').trimEnd().split('\n');
  expect(lines[0]).toBe('RDMA devices (/sys/class/infiniband):');
  expect(lines[1]).toMatch(/^\s+device\s+node GUID\s+port\s+state\s+physical state\s+link layer\s+netdev$/);
  expect(lines[2]).toMatch(/^\s+ib9\s+0002:c903:0000:1234\s+1\s+INIT\s+-\s+InfiniBand\s+-$/);
  expect(lines[3]).toMatch(/^\s+mlx5_0\s+b859:9f03:00d4:1a2e\s+1\s+DOWN\s+Disabled\s+Ethernet\s+ens1f0$/);
  expect(lines[4]).toMatch(/^\s+rxe0\s+5054:00ff:fe12:3456\s+1\s+ACTIVE\s+LinkUp\s+Ethernet\s+eth0$/);
  expect(lines).toHaveLength(5);
});

test("-d: an interface is itself; an RDMA device is its port 1's interface", () => {
  expect(resolveDeviceName('eth0', root)).toEqual({ netdev: 'eth0', rdmaDevice: null });
  expect(resolveDeviceName('rxe0', root)).toEqual({ netdev: 'eth0', rdmaDevice: 'rxe0' });
  expect(resolveDeviceName('mlx5_0', root)).toEqual({ netdev: 'ens1f0', rdmaDevice: 'mlx5_0' });
});

function errorOf(f: () => unknown): HostDeviceError {
  try {
    f();
  } catch (e) {
    if (e instanceof HostDeviceError) return e;
    throw e;
  }
  throw new Error('no error');
}

test('-d: an unknown name is a typed error naming where it looked and the devices there are', () => {
  const e = errorOf(() => resolveDeviceName('mlx5_9', root));
  expect(e.code).toBe(HostDeviceErrorCode.NO_INTERFACE);
  expect(e.message).toContain(path.join(root, 'class', 'net', 'mlx5_9'));
  expect(e.message).toContain(path.join(root, 'class', 'infiniband', 'mlx5_9'));
  expect(e.message).toContain('RDMA devices: ib9, mlx5_0, rxe0');
  const noPort = errorOf(() => resolveDeviceName('ib9', root));
  expect(noPort.code).toBe(HostDeviceErrorCode.NO_INTERFACE);
  expect(noPort.message).toMatch(/RDMA device ib9 names no network interface for port 1/);
  for (const bad of ['', '../etc', '.', 'a/b']) expect(errorOf(() => resolveDeviceName(bad, root)).code).toBe(HostDeviceErrorCode.NO_INTERFACE);
});

test("-d without sysfs's /class/net (not mounted): the name goes to the driver unchanged", () => {
  const bare = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-sysfs-bare-'));
  try {
    expect(resolveDeviceName('eth7', bare)).toEqual({ netdev: 'eth7', rdmaDevice: null });
  } finally {
    fs.rmSync(bare, { recursive: true, force: true });
  }
});
