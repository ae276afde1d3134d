/**
 * Pacing by wire time: a QP paced at the line rate (congestion control on, `paceUnlimited`) spaces
 * its request frames by the time each takes on the wire - its bytes padded to 60, plus preamble,
 * FCS and inter-frame gap (packets/wire-size.ts) - so it runs exactly at the wire's rate, measured
 * on the virtual clock:
 *   - on the memory link (no transmit backpressure: charged as built), the requester hands frames
 *     to the driver one wire time apart;
 *   - on the star switch (charged as frames start on the wire), frames start back to back, one
 *     wire time apart, and never wait in the host's transmit queue behind the wire.
 * A pacer that counted the frame's bytes alone would run 24 bytes a frame ahead of the wire (about
 * 0.6 % for 4 KB frames) and fill the transmit queue.
 *
 * @group unit
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { connectQp, endpointOf } from '../../stack/connect';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import type { Mtu } from '../../stack/mtu';
import type { CongestionConfig } from '../../stack/congestion/parameters';
import { wireBytes } from '../../packets/wire-size';
import { type TxBackpressure, hasTxBackpressure } from '../../nic-driver/driver';
import type { MemoryDriver } from '../../nic-driver/memory-link';
import { starHosts } from '../support/star-hosts';

const US = 1000;
const LINE_BPS = 10e9;
const NS_PER_BYTE = 8e9 / LINE_BPS;
const PACED: CongestionConfig = { np: true, rp: true, lineRateMbps: LINE_BPS / 1e6, paceUnlimited: true };
const MSG = 65536;

/** Gaps between consecutive frames at `times` (ns) that differ from the wire time of the frame before by more than 1 ns. */
function offWire(times: readonly number[], lens: readonly number[]): string[] {
  const off: string[] = [];
  for (let i = 1; i < times.length; i++) {
    const gap = times[i]! - times[i - 1]!;
    const wire = wireBytes(lens[i - 1]!) * NS_PER_BYTE;
    if (Math.abs(gap - wire) > 1) off.push(`frame ${i}: ${gap} ns after a ${lens[i - 1]}-byte frame (wire time ${wire} ns)`);
  }
  return off;
}

describe('a QP paced at the line rate takes the wire’s time per frame', () => {
  test('memory link (charged as built): request frames are handed over one wire time apart', () => {
    const times: number[] = [];
    const lens: number[] = [];
    const sim = createSimPair({
      seed: 1,
      bandwidthBps: LINE_BPS,
      congestion: PACED,
      tap: {
        where: 'sent',
        record(frame, t, direction) {
          // a→b carries a's WRITE requests only (b's ACKs go the other way).
          if (direction !== 'a->b') return;
          times.push(t);
          lens.push(frame.length);
        },
        close() {},
      },
    });
    expect(hasTxBackpressure(sim.link.a)).toBe(false);
    expect(sim.a.txGate).toBeNull();
    const pdA = sim.a.allocPd();
    const pdB = sim.b.allocPd();
    const mrA = sim.a.regMr(pdA, new Uint8Array(MSG), Access.LOCAL_WRITE);
    const mrB = sim.b.regMr(pdB, new Uint8Array(MSG), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
    const cq = sim.a.createCq(64);
    const qa = sim.a.createQp(pdA, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const qb = sim.b.createQp(pdB, { qpType: QpType.RC, sendCq: sim.b.createCq(8), recvCq: sim.b.createCq(8) });
    const opts = { pathMtu: 5 as Mtu, accessFlags: Access.REMOTE_WRITE };
    connectQp(qa, endpointOf(sim.a, qa, 1), endpointOf(sim.b, qb, 2), opts);
    connectQp(qb, endpointOf(sim.b, qb, 2), endpointOf(sim.a, qa, 1), opts);
    let posted = 0;
    const post = (): void =>
      qa.postSend({
        wrId: posted++,
        opcode: WrOpcode.RDMA_WRITE,
        sgList: [mrA.sge(0, MSG)],
        sendFlags: SendFlags.SIGNALED,
        rdma: { remoteAddr: mrB.addr(0), rkey: mrB.rkey },
      });
    for (let i = 0; i < 8; i++) post();
    for (let t = 10 * US; t <= 2000 * US; t += 10 * US) {
      sim.clock.runUntil(t);
      for (const wc of cq.poll(64)) {
        expect(wc.status).toBe(0);
        post();
      }
    }
    expect(times.length).toBeGreaterThan(500);
    expect(offWire(times, lens)).toEqual([]);
    // A WRITE's middle frames: 4154 bytes, 3342.4 ns on the wire at 10 Gb/s (3323.2 without preamble, FCS and gap).
    expect(lens.filter((l) => l === 4154).length).toBeGreaterThan(500);
  });

  test('star switch (charged on the wire): frames start back to back, one wire time apart, and never wait behind the wire', () => {
    // Host a sends WRITE requests only: when each is handed to a's driver and when it starts on a's
    // uplink (its driver's on-wire report, watched), and their lengths in the same order as they
    // leave the switch towards b.
    const starts: number[] = [];
    const handed: number[] = [];
    const lens: number[] = [];
    const s = starHosts({
      hosts: 2,
      flows: [[0, 1]],
      linkRateBps: LINE_BPS,
      ecn: null,
      pfc: null,
      congestion: PACED,
      outstanding: 8,
      beforeDevices(sw, clock) {
        const host = sw.hosts[0] as MemoryDriver & TxBackpressure;
        // When each frame is handed to the driver (the device commits what it built in the driver's memory).
        const commit = host.txCommit.bind(host);
        host.txCommit = () => {
          const before = host.stats.txFrames;
          const n = commit();
          for (let i = before; i < host.stats.txFrames; i++) handed.push(clock.now());
          return n;
        };
        const set = host.setTxEvents.bind(host);
        host.setTxEvents = (h) =>
          set(
            h === null
              ? null
              : {
                  started: (n) => {
                    for (let i = 0; i < n; i++) starts.push(clock.now());
                    h.started(n);
                  },
                  opened: () => h.opened(),
                },
          );
      },
      capture(frame) {
        if (frame.length > 1000) lens.push(frame.length); // b's ACKs to a are short
      },
    });
    expect(hasTxBackpressure(s.sw.hosts[0]!)).toBe(true);
    expect(s.devices[0]!.txGate).not.toBeNull();
    for (let t = 10 * US; t <= 7000 * US; t += 10 * US) s.runUntil(t);
    const q = s.sw.hostQueues[0]!;
    // ~2000 frames: a pacer 19.2 ns a frame ahead of the wire would have filled the 4-frame ring after ~700.
    expect(lens.length).toBeGreaterThan(2000);
    expect(starts.length).toBeGreaterThanOrEqual(lens.length);
    // Each frame waits for none: it is handed to an idle wire and starts at once (a pacer running
    // ahead of the wire would hand each over while the one before is still on it).
    expect(q.maxQueuedFrames).toBe(0);
    expect(handed.length).toBe(starts.length);
    expect(starts.filter((t, i) => t !== handed[i]).length).toBe(0);
    // Events fall on whole ns: a gap may be 1 ns off the exact wire time.
    expect(offWire(starts.slice(0, lens.length), lens)).toEqual([]);
  });
});
