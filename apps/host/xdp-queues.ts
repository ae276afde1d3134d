/**
 * Which receive queues of an interface AF_XDP serves, and the drivers that serve them.
 * A real NIC spreads UDP flows over its queues by RSS, so by default every active queue gets a
 * socket; `--queues 0,2` picks some. A queue that cannot be opened is an error that names it and
 * the remedies, never a silent partial device that would lose the flows hashed to it.
 */
import * as fs from 'node:fs';
import { AfXdpDriver, type XdpAttachMode } from '../../nic-driver/af-xdp-driver';
import { MultiQueueDriver } from '../../nic-driver/multi-queue-driver';
import type { NicDriver } from '../../nic-driver/driver';
import { RoceError } from '../../base/roce-error';

export const XdpQueueErrorCode = {
  /** A receive queue asked for (or one of all) cannot be opened, or does not exist. */
  QUEUE: 'ROCE_ERR_XDP_QUEUE',
} as const;
export type XdpQueueErrorCode = (typeof XdpQueueErrorCode)[keyof typeof XdpQueueErrorCode];

export class XdpQueueError extends RoceError<XdpQueueErrorCode> {}

/** UMEM frames per queue: the default for one queue; less per queue when there are several, so the memory stays near one queue's. */
export function umemFramesPerQueue(queues: number): number | undefined {
  if (queues <= 1) return undefined;
  return queues <= 4 ? 2048 : 1024;
}

/** The interface's active receive queues (the kernel's real_num_rx_queues: /sys/class/net/IF/queues/rx-N), or null when sysfs does not say. */
export function activeRxQueues(ifname: string): number | null {
  try {
    const n = fs.readdirSync(`/sys/class/net/${ifname}/queues`).filter((e) => /^rx-\d+$/.test(e)).length;
    return n > 0 ? n : null;
  } catch {
    return null;
  }
}

/** What to do when a queue cannot be had, in one sentence. */
export function queueRemedy(ifname: string): string {
  return `use one queue (ethtool -L ${ifname} combined 1), or steer RoCE to queue 0 with --steer (by hand: ethtool -N ${ifname} flow-type udp4 dst-port 4791 action 0, the same for udp6, and --queues 0), or use --driver packet, which sees every queue`;
}

export interface XdpQueueOptions {
  /** The queues to serve, or null for every active queue. */
  queues: readonly number[] | null;
  /** How many queues the interface has active (activeRxQueues), or null when unknown (then queue 0 only, unless a list is given). */
  available: number | null;
  busyPoll: boolean;
  /** AfXdpOptions.napiBusyPoll (default: by the interface's driver). */
  napiBusyPoll?: boolean;
  mtu?: number;
  xdpMode?: XdpAttachMode;
  /** The interface's network namespace (default this process's). */
  netns?: string;
}

/** One AF_XDP driver per queue asked for, as one device (a plain AfXdpDriver when there is one queue). */
export function openXdpQueues(ifname: string, o: XdpQueueOptions): NicDriver {
  const list = o.queues ?? Array.from({ length: o.available ?? 1 }, (_, i) => i);
  if (o.available !== null) {
    const bad = list.filter((q) => q >= o.available!);
    if (bad.length > 0)
      throw new XdpQueueError(
        XdpQueueErrorCode.QUEUE,
        `${ifname} has ${o.available} receive queue${o.available === 1 ? '' : 's'} (0..${o.available - 1}), not ${bad.join(', ')}`,
      );
  }
  const frames = umemFramesPerQueue(list.length);
  const opened: AfXdpDriver[] = [];
  try {
    for (const queue of list) {
      try {
        opened.push(
          AfXdpDriver.open({
            ifname,
            queue,
            busyPoll: o.busyPoll,
            ...(o.napiBusyPoll !== undefined ? { napiBusyPoll: o.napiBusyPoll } : {}),
            ...(o.mtu !== undefined ? { mtu: o.mtu } : {}),
            ...(o.xdpMode !== undefined ? { xdpMode: o.xdpMode } : {}),
            ...(frames !== undefined ? { frames } : {}),
            ...(o.netns !== undefined ? { netns: o.netns } : {}),
          }),
        );
      } catch (e) {
        // The first queue failing is the driver's own error (no XDP, no privileges, busy): reported as before.
        if (opened.length === 0 && queue === list[0]) throw e;
        throw new XdpQueueError(
          XdpQueueErrorCode.QUEUE,
          `receive queue ${queue} of ${ifname} cannot be opened (${(e as Error).message}); RoCE flows that RSS sends to it would be lost: ${queueRemedy(ifname)}`,
        );
      }
    }
  } catch (e) {
    for (const d of opened) d.close();
    throw e;
  }
  return opened.length === 1 ? opened[0]! : new MultiQueueDriver(opened);
}
