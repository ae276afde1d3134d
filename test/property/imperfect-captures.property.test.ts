/**
 * Issue 16: analysis and replay stay right when the capture is imperfect. For any capture the stack
 * made of itself (a seeded simulated pair, no loss on the wire, captured on the responder's host)
 * and any degradation a capture tool brings (frames lost by the capture, a capture that starts at
 * frame N, a snap length, ICRCs not preserved), `analyze` and responder `replay` report no
 * violation, and the capture gaps analysis flags are exactly requests that were dropped. Requester
 * replay (captured on host A) is checked for requests lost, a late start, a snaplen and ICRCs not
 * kept; answers lost as well are test/replay/capture-loss.test.ts's.
 */
import fc from 'fast-check';
import { analyzeCapture } from '../../analysis/analyzer';
import { OpFlag } from '../../packets/opcodes';
import { packetAddresses } from '../../packets/decode';
import { readCapture } from '../../packets/pcap';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { replayResponder } from '../../apps/replay/responder-replay';
import { replayRequester } from '../../apps/replay/requester-replay';
import { DiffClass } from '../../apps/replay/differences';
import { cutSnaplen, dropRecords, roceFrames, spoilIcrc, startAt } from '../support/degrade';
import { ownCapture } from '../support/own-capture';
import { psnDiff } from '../../base/psn';

const MTU = 1024;

/** A small seeded run (one QP pair) captured on host B's NIC (the responder), or on host A's. */
const smallCapture = (seed: number, where: 'host-a' | 'host-b' = 'host-b'): Uint8Array =>
  ownCapture(seed, where, { qps: 1, bytes: 12 * 1024, maxMessage: 3000 });

const captures = new Map<number, Uint8Array>();
const base = (seed: number): Uint8Array => {
  let c = captures.get(seed);
  if (c === undefined) captures.set(seed, (c = smallCapture(seed)));
  return c;
};

type Degradation = { kind: 'drop'; frames: number[] } | { kind: 'start'; at: number } | { kind: 'snaplen'; len: number } | { kind: 'icrc' };

const degradation: fc.Arbitrary<Degradation> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), frames: fc.uniqueArray(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 4 }) }),
  fc.record({ kind: fc.constant('start' as const), at: fc.integer({ min: 2, max: 20 }) }),
  fc.record({ kind: fc.constant('snaplen' as const), len: fc.integer({ min: 90, max: 300 }) }),
  fc.record({ kind: fc.constant('icrc' as const) }),
);

function degrade(file: Uint8Array, d: Degradation): Uint8Array {
  switch (d.kind) {
    case 'drop':
      return dropRecords(file, new Set(d.frames));
    case 'start':
      return startAt(file, d.at);
    case 'snaplen':
      return cutSnaplen(file, d.len);
    case 'icrc':
      return spoilIcrc(file);
  }
}

/** `${dst QPN}:${PSN}` of every PSN the requests among `frames` cover (a READ: its response PSNs too). */
function requestPsns(frames: ReturnType<typeof roceFrames>): Set<string> {
  const out = new Set<string>();
  for (const { p } of frames) {
    const b = p.bth;
    const f = p.info?.flags ?? 0;
    if (b === null || (f & OpFlag.REQ) === 0) continue;
    const n = (f & OpFlag.READ) !== 0 && p.reth !== null ? Math.max(1, Math.ceil(p.reth.dmaLength / MTU)) : 1;
    for (let i = 0; i < n; i++) out.add(`${b.destQp}:${(b.psn + i) & 0xffffff}`);
  }
  return out;
}

/**
 * `requestPsns` of the requests among `frames` that the capture shows the responder kept: a PSN whose
 * transmission an RNR NAK or a PSN sequence error NAK then turned away (for it or an earlier PSN) is
 * sent again, and a capture that loses that retransmission has a gap there.
 */
function takenPsns(frames: ReturnType<typeof roceFrames>): Set<string> {
  const out = new Set<string>();
  for (const x of frames) {
    const b = x.p.bth;
    if (b === null) continue;
    if (((x.p.info?.flags ?? 0) & OpFlag.REQ) !== 0) {
      for (const k of requestPsns([x])) out.add(k);
      continue;
    }
    const s = x.p.aeth === null ? null : x.p.aeth.syndrome;
    const turnedAway = s !== null && ((s & 0x60) === 0x20 || s === 0x60); // RNR NAK, NAK PSN sequence error
    if (!turnedAway) continue;
    // The runs have one QP pair (qps: 1): every request kept so far at or after the PSN is turned away.
    for (const k of [...out]) {
      const psn = Number(k.split(':')[1]);
      if (psnDiff(psn, b.psn) >= 0) out.delete(k);
    }
  }
  return out;
}

test('analyze and replay of degraded own captures: no violation, and the capture gaps are the dropped requests', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 3 }), degradation, (seed, d) => {
      const whole = base(seed);
      const file = degrade(whole, d);
      const icrcIgnored = d.kind === 'icrc';
      const a = analyzeCapture(file, { decode: { verifyIcrc: !icrcIgnored } });
      expect(a.violations).toEqual([]);
      if (icrcIgnored) expect(analyzeCapture(file).captureQuality.icrc).toBe('notPreserved');
      if (d.kind === 'snaplen') expect(a.captureQuality.truncated).toBeGreaterThan(0);

      // Every PSN analysis calls a capture gap was carried by a request the degradation removed, and
      // by no request the capture holds before the frame that shows the gap.
      const degraded = roceFrames(file);
      const all = roceFrames(whole);
      const keptNumbers = d.kind === 'drop' ? new Set(all.map((x) => x.n).filter((n) => !d.frames.includes(n))) : null;
      const dropped =
        d.kind === 'drop'
          ? requestPsns(all.filter((x) => !(keptNumbers?.has(x.n) ?? true)))
          : d.kind === 'start'
            ? requestPsns(all.filter((x) => x.n < d.at))
            : new Set<string>();
      for (const g of a.captureGaps) {
        const kept = takenPsns(degraded.filter((x) => x.n < g.frame));
        const c = a.conversations.find((x) => x.id === g.conversation)!;
        const responder = (g.requester === 'a' ? c.b : c.a).qpn;
        for (let psn = g.firstPsn; ; psn = (psn + 1) & 0xffffff) {
          const k = `${responder}:${psn}`;
          expect({ gap: g, psn, dropped: dropped.has(k), kept: kept.has(k) }).toEqual({ gap: g, psn, dropped: true, kept: false });
          if (psn === g.lastPsn) break;
        }
      }
      if (d.kind !== 'drop' && d.kind !== 'start') expect(a.captureGaps).toEqual([]);

      // Replay as the responder: no violation (capture gaps resynchronised, not blamed on the stack).
      const { packets } = capturedPackets(readCapture(file), { ignoreIcrc: icrcIgnored });
      for (const conv of findRcConversations(packets, packetAddresses)) {
        const s = replayResponder(conv, { timing: 'fast' });
        expect(s.differences.filter((x) => x.class === DiffClass.VIOLATION)).toEqual([]);
      }
    }),
    { seed: 16, numRuns: 100 },
  );
});

const requesterCaptures = new Map<number, Uint8Array>();

test('requester replay of degraded own captures (requests lost, a late start, a snaplen, ICRCs not kept): no violation', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 3 }), degradation, (seed, d) => {
      let whole = requesterCaptures.get(seed);
      if (whole === undefined) requesterCaptures.set(seed, (whole = smallCapture(seed, 'host-a')));
      // The requester replay needs every READ response and atomic ACK it waits for: only requests are dropped.
      const requests = new Set(
        roceFrames(whole)
          .filter((x) => ((x.p.info?.flags ?? 0) & OpFlag.REQ) !== 0)
          .map((x) => x.n),
      );
      const dd: Degradation = d.kind === 'drop' ? { kind: 'drop', frames: d.frames.filter((n) => requests.has(n)) } : d;
      const file = dd.kind === 'drop' && dd.frames.length === 0 ? whole : degrade(whole, dd);
      const { packets } = capturedPackets(readCapture(file), { ignoreIcrc: d.kind === 'icrc' });
      for (const conv of findRcConversations(packets, packetAddresses)) {
        const s = replayRequester(conv, { timing: 'fast' });
        expect(s.differences.filter((x) => x.class === DiffClass.VIOLATION)).toEqual([]);
      }
    }),
    { seed: 16, numRuns: 80 },
  );
});
