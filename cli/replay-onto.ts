/**
 * `roce replay FILE --onto IFACE`: re-sends a capture onto a link through a
 * real driver, like tcpreplay for RoCE, rewriting MACs, IPs, QPNs and the PSN
 * base on the way and recomputing the IPv4 checksum and the ICRC. With the
 * captured timing, frames leave at their captured offsets (grouped per
 * millisecond); otherwise back to back in bursts.
 */
import { UsageError, intValue } from './args';
import type { Output } from './output';
import type { NicDriver } from '../nic-driver/driver';
import { AfPacketDriver } from '../nic-driver/af-packet-driver';
import { AfXdpDriver } from '../nic-driver/af-xdp-driver';
import type { CaptureRecord } from '../packets/pcap';
import { macFromString } from '../packets/bytes';
import { makeRewriter, type RewriteRules } from '../packets/rewrite';
import { CaptureDriver } from '../nic-driver/capture-driver';
import { udpDestinationPort } from '../nic-driver/udp-ports';
import { LiveCapture, type LiveCaptureOptions, wallClockNs } from '../nic-driver/live-capture';

export interface OntoOptions {
  ifname: string;
  driver: 'xdp' | 'packet';
  netns?: string;
  timing: 'captured' | 'fast';
  rules: RewriteRules;
  /** Only frames that are RoCE v2 (default: every frame of the capture). */
  roceOnly: boolean;
  /** --pcap: record the frames as sent (rewritten) and what the link sends back meanwhile. */
  capture?: LiveCaptureOptions | null;
}

function pairs(list: readonly string[] | undefined, what: string): [string, string][] {
  return (list ?? []).map((item) => {
    const eq = item.indexOf('=');
    if (eq <= 0 || eq === item.length - 1) throw new UsageError(`--${what} takes OLD=NEW, not ${JSON.stringify(item)}`);
    return [item.slice(0, eq), item.slice(eq + 1)];
  });
}

/** Rewrite rules from the --rewrite-* and --psn-offset flags. */
export function rulesFromFlags(lists: Map<string, string[]>): RewriteRules {
  const rules: RewriteRules = {};
  const mac = pairs(lists.get('rewrite-mac'), 'rewrite-mac');
  if (mac.length > 0) {
    rules.mac = new Map(
      mac.map(([a, b]) => {
        try {
          return [macFromString(a), macFromString(b)];
        } catch {
          throw new UsageError(`--rewrite-mac ${a}=${b}: both sides must be MAC addresses like 02:00:00:00:00:01`);
        }
      }),
    );
  }
  const ip = pairs(lists.get('rewrite-ip'), 'rewrite-ip');
  if (ip.length > 0) rules.ip = new Map(ip);
  const qpn = pairs(lists.get('rewrite-qpn'), 'rewrite-qpn');
  if (qpn.length > 0) rules.qpn = new Map(qpn.map(([a, b]) => [intValue(a, 'rewrite-qpn', 0, 0xffffff), intValue(b, 'rewrite-qpn', 0, 0xffffff)]));
  const psn = lists.get('psn-offset') ?? [];
  if (psn.length > 0) {
    rules.psnOffset = new Map(
      psn.map((item) => {
        const eq = item.indexOf('=');
        return eq < 0
          ? [-1, intValue(item, 'psn-offset', 0, 0xffffff)]
          : [intValue(item.slice(0, eq), 'psn-offset', 0, 0xffffff), intValue(item.slice(eq + 1), 'psn-offset', 0, 0xffffff)];
      }),
    );
  }
  return rules;
}

function openDriver(o: OntoOptions): NicDriver {
  const common = { ifname: o.ifname, ...(o.netns !== undefined ? { netns: o.netns } : {}) };
  return o.driver === 'xdp' ? AfXdpDriver.open(common) : AfPacketDriver.open({ ...common, udpGuard: false });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** How long (ms, in 1 ms steps) a replay with --pcap keeps reading the link after its last frame. */
const REPLY_DRAIN_MS = 50;

/** Sends the records; returns the exit status. */
export async function replayOnto(records: readonly CaptureRecord[], o: OntoOptions, out: Output): Promise<number> {
  const rewrite = makeRewriter(o.rules);
  let capture: LiveCapture | null = null;
  try {
    if (o.capture != null) capture = new LiveCapture(o.capture, wallClockNs());
  } catch (e) {
    out.stderr(`roce replay: ${(e as Error).message}\n`);
    return 1;
  }
  let driver: NicDriver;
  try {
    const nic = openDriver(o);
    driver = capture === null ? nic : new CaptureDriver(nic, capture);
  } catch (e) {
    capture?.close();
    out.stderr(`roce replay: cannot open ${o.ifname} with the ${o.driver} driver: ${(e as Error).message}\n`);
    return 2;
  }
  // With a capture, what the link sends back (ACKs, NAKs of a live peer) is read after each burst,
  // and for a moment after the last, so that it lands in the file.
  const drain = (): void => {
    if (capture !== null) while (driver.rxBurst(256).length > 0);
  };
  const t0 = process.hrtime.bigint();
  const first = records[0]?.timestampNs ?? 0n;
  let sent = 0;
  let rewritten = 0;
  let refused = 0;
  try {
    let batch: Uint8Array[] = [];
    let batchAt = 0n;
    const push = async (): Promise<void> => {
      if (batch.length === 0) return;
      if (o.timing === 'captured') {
        const wait = Number(batchAt - (process.hrtime.bigint() - t0)) / 1e6;
        if (wait > 0) await sleep(wait);
      }
      const n = driver.txBurst(batch);
      sent += n;
      refused += batch.length - n;
      batch = [];
      drain();
    };
    for (const rec of records) {
      const r = rewrite(rec.data);
      if (o.roceOnly && !isRoceV2(r.frame)) continue;
      if (r.changed) rewritten++;
      const at = rec.timestampNs - first;
      // Frames within a millisecond of the batch's first go together; a burst never exceeds 64 frames.
      if (batch.length > 0 && (batch.length >= 64 || (o.timing === 'captured' && at - batchAt > 1_000_000n))) await push();
      if (batch.length === 0) batchAt = at;
      batch.push(r.frame);
    }
    await push();
    if (capture !== null) {
      for (let i = 0; i < REPLY_DRAIN_MS; i++) {
        await sleep(1);
        drain();
      }
    }
  } finally {
    driver.close();
    capture?.close();
  }
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const cs = capture?.stats;
  const capText = cs === undefined ? '' : `; capture: ${cs.frames} frames to ${cs.file}${cs.dropped > 0 ? ` (${cs.dropped} not kept)` : ''}`;
  out.stdout(
    `replayed ${sent} frames onto ${o.ifname} (${o.driver}) in ${secs.toFixed(3)} s, ${rewritten} rewritten${refused > 0 ? `, ${refused} refused by the driver` : ''}${capText}\n`,
  );
  return refused > 0 ? 1 : 0;
}

function isRoceV2(f: Uint8Array): boolean {
  return udpDestinationPort(f) === 4791;
}
