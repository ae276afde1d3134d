/**
 * The stack a replay runs: one device on a virtual clock, its driver a
 * ReplayDriver that is handed the captured frames of the other side, addressed
 * as the captured side (its IP and MAC, the peer's as its neighbour), and the
 * path MTU of the conversation.
 */
import { fastestIcrcBatch } from '../../nic-driver/native-icrc';
import { invalid } from '../../stack/errors';
import { VirtualClock } from '../../base/clock';
import { Device } from '../../stack/device';
import { ReplayDriver } from '../../nic-driver/replay-driver';
import { mtuFromBytes, type Mtu } from '../../stack/mtu';
import type { RcConversation } from './conversation';

export interface ReplayOptions {
  /** Feed with the captured timing (default) or as fast as possible. */
  timing?: 'captured' | 'fast';
  /** Override the inferred path MTU. */
  pathMtuBytes?: number;
  /** Largest memory region to build, in bytes (default 64 MiB). */
  maxRegionBytes?: number;
}

export interface ReplayStack {
  clock: VirtualClock;
  driver: ReplayDriver;
  dev: Device;
  /** The path MTU, in bytes and as the QP attribute. */
  mtuBytes: number;
  pathMtu: Mtu;
  /** The peer as the QP's address handle names it. */
  peer: { dgid: string; dmac: number; sgidIndex: number };
}

/** MACs for a side the capture does not show one for (a link type without Ethernet headers). */
const DEFAULT_MAC = { requester: 0x02_00_00_00_00_01, responder: 0x02_00_00_00_00_02 } as const;

/** The stack that plays `side` of `conv`. */
export function replayStack(conv: RcConversation, side: 'requester' | 'responder', o: ReplayOptions): ReplayStack {
  const mtuBytes = o.pathMtuBytes ?? conv.pathMtuBytes;
  const pathMtu = mtuFromBytes(mtuBytes) as Mtu | undefined;
  if (pathMtu === undefined) throw invalid(`path MTU ${mtuBytes} is not one of 256..4096`);
  const other = side === 'requester' ? 'responder' : 'requester';
  const me = side === 'requester' ? { ip: conv.requesterIp, mac: conv.requesterMac } : { ip: conv.responderIp, mac: conv.responderMac };
  const peer = other === 'requester' ? { ip: conv.requesterIp, mac: conv.requesterMac } : { ip: conv.responderIp, mac: conv.responderMac };
  const peerMac = peer.mac || DEFAULT_MAC[other];
  const clock = new VirtualClock();
  const driver = new ReplayDriver(me.mac || DEFAULT_MAC[side], 9000);
  const v4 = /^\d+\.\d+\.\d+\.\d+$/.test(me.ip);
  const dev = new Device({
    driver,
    clock,
    ...(v4 ? { ipv4: [me.ip] } : { ipv6: [me.ip] }),
    neighbors: { [peer.ip]: peerMac },
    name: 'replay',
    icrc: fastestIcrcBatch(),
  });
  // The QP's source GID is the captured side's own address (GID index 1: the link-local GID comes first),
  // so that its frames carry that address and the frames fed to it are from its peer to it (port.ts fromPeer).
  return { clock, driver, dev, mtuBytes, pathMtu, peer: { dgid: v4 ? `::ffff:${peer.ip}` : peer.ip, dmac: peerMac, sgidIndex: 1 } };
}
