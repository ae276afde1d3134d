/**
 * The guessability judge (analysis/guessability.ts) on value series of known make, and the capture
 * collector (analysis/guessability-capture.ts) on synthetic captures and on captures/ files:
 * sequential or strided names come out predictable, rxe's index << 8 | random byte weak, names from
 * a cryptographic generator unpredictable.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { GuessKind, GuessVerdict, judgeSeries, guessReport } from '../../analysis/guessability';
import { guessabilityOfCapture } from '../../analysis/guessability-capture';
import { guessReportText } from '../../analysis/guessability-text';
import { buildRoceV2Frame, type TransportSpec } from '../../packets/build';
import { PcapWriter } from '../../packets/pcap';
import { decodeFrame, packetAddresses } from '../../packets/decode';
import { iterateCapture } from '../../packets/pcap';
import { Opcode } from '../../packets/opcodes';

const CAPTURES = path.resolve(__dirname, '../../captures');
const big = (xs: readonly number[]): bigint[] => xs.map((x) => BigInt(x));
const u32 = (): number => randomBytes(4).readUInt32BE(0);
const judge = (kind: GuessKind, xs: readonly number[]) => judgeSeries({ host: 'h', kind, values: big(xs) });

describe('the judge', () => {
  test('R_Keys stepping by 0x100 (bnxt_re, mlx4): constant stride 0x100, 0 bits, predictable', () => {
    const j = judge(GuessKind.RKEY, [0x1200, 0x1300, 0x1400, 0x1500, 0x1600, 0x1700]);
    expect(j).toMatchObject({
      pattern: 'constant stride 0x100',
      stride: '0x100',
      entropyBits: 0,
      verdict: GuessVerdict.PREDICTABLE,
      lowByteDistinct: 1,
      count: 6,
    });
  });

  test('sequential QPNs: sequential, predictable', () => {
    expect(judge(GuessKind.QPN, [0x11, 0x12, 0x13, 0x14, 0x15, 0x16])).toMatchObject({
      pattern: 'sequential',
      stride: '0x1',
      verdict: GuessVerdict.PREDICTABLE,
    });
  });

  test('the same starting PSN every time (a series of values handed out more than once): constant, predictable', () => {
    expect(judgeSeries({ host: 'h', kind: GuessKind.START_PSN, values: [0n, 0n, 0n, 0n, 0n, 0n] })).toMatchObject({
      pattern: 'constant',
      verdict: GuessVerdict.PREDICTABLE,
    });
  });

  test("rxe's index << 8 | random byte: the index steps by 1, the low 8 bits are all that is left: weak", () => {
    const keys = Array.from({ length: 8 }, (_, i) => (((0x10 + i) << 8) | (u32() & 0xff)) >>> 0);
    const j = judge(GuessKind.RKEY, keys);
    expect(j.verdict).toBe(GuessVerdict.WEAK);
    expect(j.entropyBits).toBeLessThanOrEqual(8);
    expect(j.pattern).toBe('high bits stride 0x1, low 8 bits vary');
  });

  test("this stack's sequential order (index + 1, key byte + 0x25): predictable", () => {
    const keys = Array.from({ length: 8 }, (_, i) => (((1 + i) << 8) | ((0x11 + 0x25 * (i + 1)) & 0xff)) >>> 0);
    expect(judge(GuessKind.RKEY, keys)).toMatchObject({
      verdict: GuessVerdict.PREDICTABLE,
      entropyBits: 0,
      pattern: 'high bits stride 0x1, low 8 bits stride 0x25',
    });
  });

  test('cryptographically random keys, QPNs and PSNs: no pattern, unpredictable', () => {
    for (const [kind, mask] of [
      [GuessKind.RKEY, 0xffffffff],
      [GuessKind.QPN, 0xffffff],
      [GuessKind.START_PSN, 0xffffff],
    ] as const) {
      const j = judge(
        kind,
        Array.from({ length: 8 }, () => (u32() & mask) >>> 0),
      );
      expect(j.verdict).toBe(GuessVerdict.UNPREDICTABLE);
      expect(j.pattern).toBe('no pattern');
    }
  });

  test('small increasing steps (a counter with jitter): weak or predictable, never unpredictable', () => {
    const j = judge(GuessKind.QPN, [0x100, 0x103, 0x109, 0x10a, 0x111, 0x118]);
    expect(j.verdict).not.toBe(GuessVerdict.UNPREDICTABLE);
    expect(j.pattern).toBe('small steps');
  });

  test('random 24-bit series of 8 values: none of 2000 judged weak (the reason for the minimum of 6 values)', () => {
    let notUnpredictable = 0;
    for (let t = 0; t < 2000; t++)
      if (
        judge(
          GuessKind.QPN,
          Array.from({ length: 8 }, () => u32() & 0xffffff),
        ).verdict !== GuessVerdict.UNPREDICTABLE
      )
        notUnpredictable++;
    expect(notUnpredictable).toBe(0);
  });

  test('fewer than six values: no verdict', () => {
    expect(judge(GuessKind.RKEY, [0x1234, 0x5678, 0x9abc, 0xdef0, 0x1111])).toMatchObject({
      pattern: 'too few values',
      entropyBits: null,
      verdict: GuessVerdict.UNKNOWN,
    });
  });

  test('the report takes the worst verdict, and the text has one row per series', () => {
    const r = guessReport([
      { host: 'a', kind: GuessKind.QPN, values: big([0x11, 0x12, 0x13, 0x14, 0x15, 0x16]) },
      { host: 'a', kind: GuessKind.RKEY, values: big(Array.from({ length: 8 }, u32)) },
    ]);
    expect(r.verdict).toBe(GuessVerdict.PREDICTABLE);
    const text = guessReportText(r);
    expect(text).toMatch(/^ {2}a +QPN +6 +sequential +6\/6 +3 +0\.0 bits +predictable$/m);
    expect(text).toMatch(/overall: predictable\n$/);
  });
});

// ---------------------------------------------------------------- captures

const IP = { a: '198.18.0.1', b: '198.18.0.2' } as const;
const MAC = { a: 0x020000000001, b: 0x020000000002 } as const;

function frame(from: 'a' | 'b', t: TransportSpec): Uint8Array {
  const to = from === 'a' ? 'b' : 'a';
  return buildRoceV2Frame({ eth: { src: MAC[from], dst: MAC[to] }, ip: { version: 4, src: IP[from], dst: IP[to] }, udp: { srcPort: 49441 }, ...t });
}

/** n connections from a to b: a WRITE ONLY to QP qpns[i] at PSN psns[i] naming key keys[i] at vas[i] (and a second at an offset), its ACK. */
function capture(keys: readonly number[], vas: readonly bigint[], qpns: readonly number[], psns: readonly number[]): Uint8Array {
  const w = new PcapWriter({ nanosecond: true });
  let t = 1_700_000_000_000_000_000n;
  keys.forEach((rkey, i) => {
    const qp = qpns[i] as number;
    const psn = psns[i] as number;
    const va = vas[i] as bigint;
    for (const [k, off] of [
      [0, 64n],
      [1, 0n],
    ] as const) {
      w.add(
        frame('a', {
          bth: { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: qp, psn: (psn + k) & 0xffffff, ackReq: true },
          reth: { va: va + off, rkey, dmaLength: 8 },
          payload: new Uint8Array(8),
        }),
        (t += 1000n),
      );
      w.add(
        frame('b', { bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: 0x100 + i, psn: (psn + k) & 0xffffff }, aeth: { syndrome: 0, msn: k + 1 } }),
        (t += 1000n),
      );
    }
  });
  return w.toBytes();
}

describe('roce analyze --audit on synthetic captures', () => {
  test('sequential keys, addresses, QPNs and PSNs: each predictable', () => {
    const n = 8;
    const bytes = capture(
      Array.from({ length: n }, (_, i) => 0x1000 + 0x100 * i),
      Array.from({ length: n }, (_, i) => 0x7f0000000000n + 0x2000n * BigInt(i)),
      Array.from({ length: n }, (_, i) => 0x11 + i),
      Array.from({ length: n }, (_, i) => 1000 * i),
    );
    const r = guessabilityOfCapture(bytes);
    expect(r.captureError).toBeNull();
    const by = Object.fromEntries(r.report.judgements.map((j) => [`${j.host} ${j.kind}`, j]));
    expect(by[`${IP.b} rkey`]).toMatchObject({ count: n, pattern: 'constant stride 0x100', verdict: 'predictable' });
    // The region's address is the lowest VA its key was seen with (the second WRITE is at the start).
    expect(by[`${IP.b} va`]).toMatchObject({ count: n, pattern: 'constant stride 0x2000', verdict: 'predictable' });
    expect(by[`${IP.b} qpn`]).toMatchObject({ count: n, pattern: 'sequential', verdict: 'predictable' });
    expect(by[`${IP.a} qpn`]).toMatchObject({ count: n, pattern: 'sequential' });
    expect(by[`${IP.a} startPsn`]).toMatchObject({ count: n, pattern: 'constant stride 0x3e8', verdict: 'predictable' });
    expect(r.report.verdict).toBe('predictable');
  });

  test('random keys, addresses, QPNs and PSNs: each unpredictable', () => {
    const n = 8;
    const bytes = capture(
      Array.from({ length: n }, () => u32()),
      Array.from({ length: n }, () => (BigInt(u32() & 0x7fff) << 32n) | (BigInt(u32()) & ~0xfffn)),
      Array.from({ length: n }, () => 0x11 + (u32() % 0xffffe0)),
      Array.from({ length: n }, () => u32() & 0xffffff),
    );
    const r = guessabilityOfCapture(bytes);
    const b = r.report.judgements.filter((j) => j.host === IP.b);
    expect(b.map((j) => [j.kind, j.verdict])).toEqual([
      ['rkey', 'unpredictable'],
      ['va', 'unpredictable'],
      ['qpn', 'unpredictable'],
    ]);
    expect(r.report.judgements.find((j) => j.host === IP.a && j.kind === 'startPsn')?.verdict).toBe('unpredictable');
  });

  test('captures/rc-conversation.pcap: the keys, QPNs and first PSNs it holds, too few for a verdict', () => {
    const bytes = new Uint8Array(fs.readFileSync(path.join(CAPTURES, 'rc-conversation.pcap')));
    const r = guessabilityOfCapture(bytes);
    // What a decode of every frame shows, gathered here independently of the collector.
    const rkeys = new Set<string>();
    const qpns = new Set<string>();
    const it = iterateCapture(bytes);
    for (let s = it.next(); s.done !== true; s = it.next()) {
      const d = decodeFrame(s.value.data, s.value.linkType);
      if (!d.roce || d.bth === null) continue;
      const { dst } = packetAddresses(d);
      const m = d.reth !== null && d.reth.dmaLength > 0 ? d.reth : d.atomicEth;
      if (m !== null && (d.info?.flags ?? 0) & 1) rkeys.add(`${dst} 0x${(m.rkey >>> 0).toString(16)}`);
      if (d.bth.destQp >= 2) qpns.add(`${dst} 0x${d.bth.destQp.toString(16)}`);
    }
    const got = (kind: string): Set<string> =>
      new Set(r.report.judgements.filter((j) => j.kind === kind).flatMap((j) => j.sample.map((v) => `${j.host} ${v}`)));
    // The capture's WRITE with key 0xa1b00 is its one use, refused (NAK remote access error): not counted, counted apart.
    expect(rkeys.has(`${IP.b} 0xa1b00`)).toBe(true);
    expect(got('rkey')).toEqual(new Set([...rkeys].filter((k) => k !== `${IP.b} 0xa1b00`)));
    expect(r.refusedRkeys).toEqual([{ host: IP.b, count: 1 }]);
    expect(got('qpn')).toEqual(qpns);
    expect(rkeys.size).toBeGreaterThan(0);
    expect(r.report.judgements.every((j) => j.count >= 6 || j.verdict === 'unknown')).toBe(true);
  });

  test("captures/cm-exchanges.pcap: the QPNs and starting PSNs of the CM's REQ and REP, owned by their senders", () => {
    const r = guessabilityOfCapture(path.join(CAPTURES, 'cm-exchanges.pcap'));
    expect(r.captureError).toBeNull();
    const by = Object.fromEntries(r.report.judgements.map((j) => [`${j.host} ${j.kind}`, j.sample]));
    // README: REQ from 198.18.0.1 (QPN 0x11, PSN 0x2f1a00), REP from 198.18.0.2 (QPN 0x12, PSN 0x7a1b2c); SIDR_REP's QPN 0x13 is a UD QP's.
    expect(by['198.18.0.1 qpn']).toContain('0x11');
    expect(by['198.18.0.1 startPsn']).toContain('0x2f1a00');
    expect(by['198.18.0.2 qpn']).toContain('0x12');
    expect(by['198.18.0.2 startPsn']).toContain('0x7a1b2c');
  });
});

describe('roce analyze --audit: keys the responder refused', () => {
  /** NAK remote access error (IBTA vol. 1 §9.7.5.1: syndrome kind 11, code 2). */
  const NAK_REMOTE_ACCESS = 0x60 | 2;

  /** Eight WRITEs from a to b naming keys stepping by 0x100, each ACKed, then `more` (to QP 0x200 on): each WRITE, and its NAK when refused. */
  function withRefusals(more: readonly { rkey: number; refused: boolean }[]): Uint8Array {
    const w = new PcapWriter({ nanosecond: true });
    let t = 1_700_000_000_000_000_000n;
    const write = (qp: number, psn: number, rkey: number, answer: number): void => {
      w.add(
        frame('a', {
          bth: { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: qp, psn, ackReq: true },
          reth: { va: 0x7f0000000000n + BigInt(qp) * 0x1000n, rkey, dmaLength: 8 },
          payload: new Uint8Array(8),
        }),
        (t += 1000n),
      );
      w.add(frame('b', { bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: 0x300 + qp, psn }, aeth: { syndrome: answer, msn: 1 } }), (t += 1000n));
    };
    for (let i = 0; i < 8; i++) write(0x100 + i, 1000 * i, 0x1000 + 0x100 * i, 0);
    more.forEach((m, i) => write(0x200 + i, 50_000 + i, m.rkey, m.refused ? NAK_REMOTE_ACCESS : 0));
    return w.toBytes();
  }

  test("a key refused at its every use is not the responder's: left out of the R_Keys and VAs, counted apart", () => {
    const clean = guessabilityOfCapture(withRefusals([]));
    const r = guessabilityOfCapture(
      withRefusals([
        { rkey: 0xdead00ff, refused: true },
        { rkey: 0xdead00ff, refused: true },
      ]),
    );
    const rkey = r.report.judgements.find((j) => j.host === IP.b && j.kind === 'rkey');
    expect(rkey).toMatchObject({ count: 8, pattern: 'constant stride 0x100', verdict: 'predictable' });
    expect(rkey?.sample).not.toContain('0xdead00ff');
    expect(r.report.judgements.find((j) => j.host === IP.b && j.kind === 'va')?.count).toBe(8);
    expect(r.refusedRkeys).toEqual([{ host: IP.b, count: 1 }]);
    // Apart from the refused key the report is the one of the capture without it (QPNs and PSNs aside: the refused WRITEs are on QPs of their own).
    const rk = (x: typeof r): unknown => x.report.judgements.filter((j) => j.kind === 'rkey' || j.kind === 'va');
    expect(rk(r)).toEqual(rk(clean));
    expect(clean.refusedRkeys).toEqual([]);
  });

  test('a key accepted once is counted, though refused elsewhere', () => {
    const r = guessabilityOfCapture(
      withRefusals([
        { rkey: 0x1800, refused: true },
        { rkey: 0x1800, refused: false },
      ]),
    );
    expect(r.report.judgements.find((j) => j.host === IP.b && j.kind === 'rkey')).toMatchObject({ count: 9, pattern: 'constant stride 0x100' });
    expect(r.refusedRkeys).toEqual([]);
  });

  test('the text table leaves the refused key out', () => {
    const r = guessabilityOfCapture(withRefusals([{ rkey: 0xdead00ff, refused: true }]));
    expect(guessReportText(r.report)).not.toMatch(/dead00ff/);
  });
});
