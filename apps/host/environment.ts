/**
 * The ROCE_* environment variables, all read here, by the composition roots
 * (the `roce` CLI, the benchmarks), and handed to the library as options:
 *
 *   ROCE_NO_NATIVE=1        leave the native addon alone (TypeScript ICRC, no AF_XDP/AF_PACKET)
 *   ROCE_BUSY_POLL=1        host devices busy-poll (also `on`, `true`; HostDeviceOptions.busyPoll)
 *   ROCE_RX_LINGER_US=N     receive linger without busy-poll, 0..1000000 µs (default 200)
 *   ROCE_XDP_MODE=M         where AF_XDP's program runs: native, skb or auto
 *   ROCE_NAPI_BUSY_POLL=0|1 with busy-poll, AF_XDP drives the driver's NAPI on an empty ring
 *                           (default: yes, except on a veth; HostDeviceOptions.napiBusyPoll)
 *   ROCE_FAULTS=JSON        fault injector on this side of a real link (nic-driver/fault-driver.ts)
 *   ROCE_MAX_UNACKED_PSNS=N send window per QP, 1..8388607 (default 128, as rxe)
 *   ROCE_MAX_PKTS_PER_ACK=N AckReq spacing inside a message, 1..8388607 (default 64, as rxe)
 *   ROCE_MAX_INFLIGHT=N     packets in flight across a device's QPs, 1..2147483647 (default 512)
 *   ROCE_COALESCE_ACKS=1    one ACK per QP per receive burst (also `on`, `true`; default off, as rxe)
 *   ROCE_ALLOCATION=ORDER   memory keys, addresses and QP numbers: random (default) or sequential,
 *                           rxe's order, for tests that want known names (docs/security.md)
 *   ROCE_READY_FILE=PATH    a server-role command writes its port to PATH once it listens (for scripts)
 *
 * (The native addon itself reads ROCE_NATIVE_DEBUG=1 to print what libxdp and
 * libbpf say.) The native switch applies to a whole process from its start;
 * the host-device settings are read and checked when a command opens a host
 * device, so a malformed value fails that command (exit 1, the message below)
 * and leaves the others alone.
 */
import { parseHostFaults } from '../../nic-driver/fault-driver';
import type { XdpAttachMode } from '../../nic-driver/af-xdp-driver';
import { type AllocationOrder, parseAllocationOrder } from '../../stack/allocation-order';
import { DEFAULT_RX_LINGER_US, HostDeviceError, HostDeviceErrorCode, type HostDeviceOptions } from './host-device';

export type { Environment } from './native-switch';
import type { Environment } from './native-switch';

export { applyNativeSwitch } from './native-switch';

/** The host-device options the environment gives; throws (naming the variable) on a malformed value. */
export function hostOptionsFromEnv(env: Environment): HostDeviceOptions {
  const busyPoll = busyPollFromEnv(env);
  const xdpMode = xdpModeFromEnv(env);
  // The linger applies without busy-poll only (a busy-polling device never sleeps).
  const rxLingerUs = busyPoll ? 0 : rxLingerFromEnv(env);
  const faultsText = env['ROCE_FAULTS'];
  const faults = faultsText === undefined || faultsText.trim() === '' ? null : parseHostFaults(faultsText, 'ROCE_FAULTS');
  const maxUnackedPsns = positiveFromEnv(env, 'ROCE_MAX_UNACKED_PSNS', 0x7fffff);
  const maxPktsPerAck = positiveFromEnv(env, 'ROCE_MAX_PKTS_PER_ACK', 0x7fffff);
  const maxInflightPackets = positiveFromEnv(env, 'ROCE_MAX_INFLIGHT', 0x7fffffff);
  const coalesceAcks = switchFromEnv(env, 'ROCE_COALESCE_ACKS');
  const napiBusyPoll = napiBusyPollFromEnv(env);
  const allocation = allocationFromEnv(env);
  return {
    busyPoll,
    ...(napiBusyPoll !== undefined ? { napiBusyPoll } : {}),
    rxLingerUs,
    ...(xdpMode !== undefined ? { xdpMode } : {}),
    faults,
    ...(maxUnackedPsns !== undefined ? { maxUnackedPsns } : {}),
    ...(maxPktsPerAck !== undefined ? { maxPktsPerAck } : {}),
    ...(maxInflightPackets !== undefined ? { maxInflightPackets } : {}),
    ...(coalesceAcks ? { coalesceAcks } : {}),
    ...(allocation !== undefined ? { allocation } : {}),
  };
}

/** ROCE_ALLOCATION: the order of memory keys, addresses and QP numbers (random or sequential), or undefined for the default (random). */
export function allocationFromEnv(env: Environment): AllocationOrder | undefined {
  const v = env['ROCE_ALLOCATION'];
  if (v === undefined || v === '') return undefined;
  const order = parseAllocationOrder(v.trim());
  if (order === null) throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `ROCE_ALLOCATION must be random or sequential, not ${JSON.stringify(v)}`);
  return order;
}

/** ROCE_BUSY_POLL: '1', 'on' or 'true' turn busy-poll on. */
function busyPollFromEnv(env: Environment): boolean {
  return switchFromEnv(env, 'ROCE_BUSY_POLL');
}

/** A switch variable: '1', 'on' or 'true' turn it on. */
function switchFromEnv(env: Environment, name: string): boolean {
  const v = env[name];
  return v === '1' || v === 'on' || v === 'true';
}

/** ROCE_RX_LINGER_US (µs, 0..1 000 000), or the default. */
function rxLingerFromEnv(env: Environment): number {
  const v = env['ROCE_RX_LINGER_US'];
  if (v === undefined || v === '') return DEFAULT_RX_LINGER_US;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 1_000_000)
    throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `ROCE_RX_LINGER_US must be an integer 0..1000000 (µs), not ${JSON.stringify(v)}`);
  return n;
}

/** ROCE_XDP_MODE: native, skb or auto (a tuning knob for benchmarks). */
function xdpModeFromEnv(env: Environment): XdpAttachMode | undefined {
  const v = env['ROCE_XDP_MODE'];
  if (v === undefined || v === '') return undefined;
  if (v === 'native' || v === 'skb' || v === 'auto') return v;
  throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `ROCE_XDP_MODE must be native, skb or auto, not ${JSON.stringify(v)}`);
}

/** ROCE_NAPI_BUSY_POLL: 1/on/true or 0/off/false, or undefined (the device chooses by the interface's driver). */
function napiBusyPollFromEnv(env: Environment): boolean | undefined {
  const v = env['ROCE_NAPI_BUSY_POLL'];
  if (v === undefined || v === '') return undefined;
  if (v === '1' || v === 'on' || v === 'true') return true;
  if (v === '0' || v === 'off' || v === 'false') return false;
  throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `ROCE_NAPI_BUSY_POLL must be 1, on, true, 0, off or false, not ${JSON.stringify(v)}`);
}

/** An integer variable 1..max, or undefined when not set. */
function positiveFromEnv(env: Environment, name: string, max: number): number | undefined {
  const v = env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new HostDeviceError(HostDeviceErrorCode.DRIVER_FAILED, `${name} must be an integer 1..${max}, not ${JSON.stringify(v)}`);
  return n;
}

/** ROCE_READY_FILE: where a server-role command announces that it listens (its port, one line), or null. */
export function readyFileFromEnv(env: Environment): string | null {
  const v = env['ROCE_READY_FILE'];
  return v === undefined || v.trim() === '' ? null : v;
}
