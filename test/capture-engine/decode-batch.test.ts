/**
 * `roce decode`'s batches (capture-engine/decode-batch.ts): a batch printed with its ICRCs computed in one
 * burst reads exactly as the same records printed one ICRC at a time, for frames whose offsets the
 * burst guesses right and for frames it guesses wrong (VLAN, Ethernet padding, RoCE v1, cut by
 * the capture, not IP), and with a burst that refuses the batch.
 */
import { BatchPrinter, RecordBatch } from '../../capture-engine/decode-batch';
import type { BatchResult } from '../../capture-engine/decode-batch-layout';
import type { IcrcBurst } from '../../capture-engine/batch-icrc';
import { DEFAULT_PRINT_SETTINGS, type PrintSettings } from '../../capture-engine/decode-printer';
import { buildRoceV1Frame, buildRoceV2Frame, type RoceV2Spec } from '../../packets/build';
import { icrcV2, jsIcrcBatch } from '../../packets/icrc';
import { LinkType } from '../../packets/pcap';
import { Opcode } from '../../packets/opcodes';

const eth = { src: 0x020000000001, dst: 0x020000000002 };
const v4 = { version: 4 as const, src: '198.18.0.1', dst: '198.18.0.2' };
const v6 = { version: 6 as const, src: 'fd00::1', dst: 'fd00::2' };

const SETTINGS: PrintSettings = DEFAULT_PRINT_SETTINGS;

interface Rec {
  data: Uint8Array;
  origLen?: number;
  /** Whether the burst's guess of its offsets is right. */
  guessed: boolean;
}

function records(): Rec[] {
  const send = (psn: number, ip: RoceV2Spec['ip'] = v4): RoceV2Spec => ({
    eth,
    ip,
    bth: { opcode: Opcode.RC_SEND_ONLY, destQp: 0x12, psn },
    payload: new Uint8Array(300).fill(psn & 0xff),
  });
  const ack = (psn: number): RoceV2Spec => ({ eth, ip: v4, bth: { opcode: Opcode.RC_ACKNOWLEDGE, destQp: 0x11, psn }, aeth: { syndrome: 0x1f, msn: psn } });
  const badIcrc = buildRoceV2Frame({ ...send(3), icrc: 0x12345678 });
  const padded = new Uint8Array(buildRoceV2Frame(ack(4)).length + 6);
  padded.set(buildRoceV2Frame(ack(4)));
  const cut = buildRoceV2Frame(send(5));
  const arp = new Uint8Array(42);
  arp.set([0x08, 0x06], 12);
  const notIp = buildRoceV2Frame(send(6));
  notIp[14] = 0x75; // IP version 7
  return [
    { data: buildRoceV2Frame(send(1)), guessed: true },
    { data: buildRoceV2Frame(ack(1)), guessed: true },
    { data: buildRoceV2Frame(send(2, v6)), guessed: true },
    { data: badIcrc, guessed: true },
    { data: buildRoceV2Frame({ ...send(7), eth: { ...eth, vlan: { pcp: 3, dei: 0, vid: 7, tpid: 0x8100 } } }), guessed: false },
    { data: padded, guessed: false },
    { data: cut.subarray(0, cut.length - 40), origLen: cut.length, guessed: false },
    { data: arp, guessed: false },
    { data: notIp, guessed: false },
    {
      data: buildRoceV1Frame({
        eth,
        grh: { sgid: 'fe80::1', dgid: 'fe80::2' },
        bth: { opcode: Opcode.RC_SEND_ONLY, destQp: 0x12, psn: 9 },
        payload: new Uint8Array(16),
      }),
      guessed: false,
    },
  ];
}

function batchOf(recs: Rec[]): RecordBatch {
  const b = RecordBatch.fresh(0);
  recs.forEach((r, i) => b.add(i + 1, 1_700_000_000, LinkType.Ethernet, r.origLen ?? r.data.length, r.data, i * 1184, 9));
  return b;
}

function printed(p: BatchPrinter, recs: Rec[]): { text: string; counts: BatchResult['counts'] } {
  const b = batchOf(recs);
  const r = p.print({ seq: 0, count: b.count, first: b.timeAt(0), prev: null, data: b.data, meta: b.meta, spare: [] });
  return { text: r.out.map((c) => Buffer.from(c).toString('utf8')).join(''), counts: r.counts };
}

describe('BatchPrinter', () => {
  test('with a burst: the same lines and counts as one ICRC at a time, the guessed frames from the burst', () => {
    const recs = records();
    let single = 0;
    const counting = (frame: Uint8Array, ipOff: number, end: number): number => {
      single++;
      return icrcV2(frame, ipOff, end);
    };
    let burstFrames = 0;
    const burst: IcrcBurst = (buf, desc, count, out) => {
      burstFrames += count;
      jsIcrcBatch.compute(buf, desc, count, out);
    };
    const reference = printed(new BatchPrinter(SETTINGS, counting, null), recs);
    const referenceCalls = single;
    single = 0;
    const withBurst = printed(new BatchPrinter(SETTINGS, counting, burst), recs);
    expect(withBurst).toEqual(reference);
    expect(reference.counts).toMatchObject({ roce: 8, badIcrc: 1, truncated: 1, printed: 8 });
    // The ICRC of every guessed frame came from the burst; only the others were computed alone.
    const guessed = recs.filter((r) => r.guessed).length;
    expect(single).toBe(referenceCalls - guessed);
    expect(burstFrames).toBeGreaterThanOrEqual(guessed);
    expect(withBurst.text).toMatch(/ICRC BAD/);
  });

  test('a burst that refuses the batch changes nothing: each frame is checked alone', () => {
    const recs = records();
    const refusing: IcrcBurst = () => {
      throw new RangeError('refused');
    };
    expect(printed(new BatchPrinter(SETTINGS, undefined, refusing), recs)).toEqual(printed(new BatchPrinter(SETTINGS, undefined, null), recs));
  });

  test('--no-icrc never calls the burst, and JSON and field trees print the same either way', () => {
    const recs = records();
    const never: IcrcBurst = () => {
      throw new Error('the burst ran with the ICRC check off');
    };
    const off = { ...SETTINGS, verifyIcrc: false };
    expect(printed(new BatchPrinter(off, undefined, never), recs)).toEqual(printed(new BatchPrinter(off, undefined, null), recs));
    for (const s of [
      { ...SETTINGS, json: true },
      { ...SETTINGS, verbose: true },
    ]) {
      expect(printed(new BatchPrinter(s, undefined, jsIcrcBatch.compute), recs)).toEqual(printed(new BatchPrinter(s, undefined, null), recs));
    }
  });

  test('batches reuse their buffers and hold a record larger than a batch', () => {
    const b = RecordBatch.fresh(0);
    const frame = buildRoceV2Frame({ eth, ip: v4, bth: { opcode: Opcode.RC_SEND_ONLY, destQp: 1, psn: 1 }, payload: new Uint8Array(1000) });
    let n = 0;
    while (b.fits(frame.length)) {
      b.add(++n, n, LinkType.Ethernet, frame.length, frame, 0, 6);
    }
    expect(n).toBeGreaterThan(100);
    const big = RecordBatch.fresh(600_000);
    expect(big.fits(600_000)).toBe(true);
    expect(big.data.byteLength).toBeGreaterThanOrEqual(600_000);
  });
});
