/**
 * Replay of legal edge cases. For any conversation the stack itself runs of RDMA WRITEs and READs
 * of length 0 with VA 0 and R_Key 0 (C9-88: a zero-length RDMA operation names no memory),
 * zero-length SENDs, messages of k path MTUs and one byte either side (up to 16 packets, every path
 * MTU), atomics, SENDs with immediate or invalidate, from a start PSN that makes the PSNs wrap at
 * 2^24, replay in both roles, from the capture of the replayed side's host read as `roce replay`
 * reads a file (a Buffer), throws nothing, finds no violation, matches every captured answer and
 * request, and leaves the QP out of the error state; nothing is `unsupported` (a SEND with Invalidate
 * names a fast-registered key, which replay binds as the responder did: apps/replay/responder-replay.ts).
 *
 * The same conversations, and the bundled captures, with fields of their frames changed (PSN,
 * opcode, AckReq, DestQP, RETH VA, R_Key and length, AETH syndrome and MSN; the ICRC made valid
 * again), records dropped, repeated or swapped, and cut by a snap length, go through `roce replay`
 * in both roles without an internal error: the report may find anything, the command never throws.
 *
 * Before, a responder replay of a zero-length WRITE with R_Key 0 stopped with an internal error (the
 * key mapped to a stand-in key was written over the frame's IP header, in the file's Buffer), and the
 * replay fuzz target never saw a Buffer nor such frames.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { PcapWriter, readCapture } from '../../packets/pcap';
import { decodeFrame, packetAddresses } from '../../packets/decode';
import { icrcV1, sealIcrcV2, writeIcrc } from '../../packets/icrc';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { capturedPackets } from '../../apps/replay/captured-packets';
import { findRcConversations } from '../../apps/replay/conversation';
import { replayResponder } from '../../apps/replay/responder-replay';
import { replayRequester } from '../../apps/replay/requester-replay';
import type { ReplaySummary } from '../../apps/replay/differences';
import { EDGE_OP_KINDS, type EdgeOp, type EdgeSpec, edgeConversation, edgeLengths } from '../../fuzz/edge-conversations';
import { Mtu, mtuBytes } from '../../stack/mtu';

const mtus = [Mtu.MTU_256, Mtu.MTU_512, Mtu.MTU_1024, Mtu.MTU_2048, Mtu.MTU_4096] as const;

/** Runs per property (60), and a seed in place of each property's own: a longer campaign is `REPLAY_EDGE_RUNS=2000 REPLAY_EDGE_SEED=505 npx jest test/property/replay-edge-cases`. */
const RUNS = Number(process.env['REPLAY_EDGE_RUNS'] ?? 60);
const SEED = process.env['REPLAY_EDGE_SEED'] === undefined ? null : Number(process.env['REPLAY_EDGE_SEED']);
const budget = (perRunMs: number): number => Math.max(180_000, RUNS * perRunMs);

/** An edge-case spec: the MTU first, so that lengths are picked at its edges. */
export const edgeSpec: fc.Arbitrary<EdgeSpec> = fc.constantFrom(...mtus).chain((mtu) => {
  const lengths = edgeLengths(mtuBytes(mtu));
  const op: fc.Arbitrary<EdgeOp> = fc.record({
    kind: fc.constantFrom(...EDGE_OP_KINDS),
    length: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 5, arbitrary: fc.constantFrom(...lengths) }),
    zeroKey: fc.boolean(),
  });
  return fc.record({
    seed: fc.integer({ min: 1, max: 1000 }),
    mtu: fc.constant(mtu),
    // Near the wrap (0xffffff and just below it), at 0, or anywhere.
    psn: fc.oneof(fc.integer({ min: 0xffffff - 20, max: 0xffffff }), fc.constant(0), fc.integer({ min: 0, max: 0xffffff })),
    ops: fc.array(op, { minLength: 1, maxLength: 10 }),
  });
});

/** Replays `capture` (read from a Buffer, as the CLI reads a file) in `role`. */
function replayAs(capture: Uint8Array, role: 'responder' | 'requester', timing: 'fast' | 'captured'): ReplaySummary[] {
  const { packets } = capturedPackets(readCapture(Buffer.from(capture)));
  return findRcConversations(packets, packetAddresses).map((c) => (role === 'responder' ? replayResponder(c, { timing }) : replayRequester(c, { timing })));
}

/** What must hold of a replay of an edge-case conversation. */
function judged(s: ReplaySummary): { violations: string[]; matched: number; unsupported: string[]; qpError: unknown } {
  return {
    violations: s.differences.filter((d) => d.class === 'violation').map((d) => `${d.kind} PSN ${d.psn}: expected ${d.expected}, got ${d.got}`),
    matched: s.expected - s.matched,
    unsupported: s.differences.filter((d) => d.class === 'unsupported').map((d) => d.kind),
    qpError: s.qpError,
  };
}

const clean = { violations: [], matched: 0, unsupported: [], qpError: null };

test(
  'edge-case conversations the stack runs replay in both roles: no throw, no violation, all matched, no QP error',
  () => {
    fc.assert(
      fc.property(edgeSpec, fc.constantFrom('fast' as const, 'captured' as const), (spec, timing) => {
        const run = edgeConversation(spec);
        expect(run.failure).toBeNull();
        const resp = replayAs(run.responderSide, 'responder', timing);
        const req = replayAs(run.requesterSide, 'requester', timing);
        expect(resp).toHaveLength(1);
        expect(req).toHaveLength(1);
        for (const s of [...resp, ...req]) expect(judged(s)).toEqual(clean);
        // A SEND with Invalidate of a fast-registered key is judged as any request: nothing unsupported.
        expect(resp[0]?.differences.filter((d) => d.class === 'unsupported')).toEqual([]);
      }),
      { seed: SEED ?? 24, numRuns: RUNS },
    );
  },
  budget(400),
);

test('the legal frames that crashed replay: a zero-length WRITE, READ and SEND at the PSN wrap, VA 0 and R_Key 0', () => {
  const spec: EdgeSpec = {
    seed: 7,
    mtu: Mtu.MTU_1024,
    psn: 0xfffffe,
    ops: [
      { kind: 'write', length: 0, zeroKey: true },
      { kind: 'read', length: 0, zeroKey: true },
      { kind: 'send', length: 0, zeroKey: true },
      { kind: 'writeImm', length: 0, zeroKey: true },
      { kind: 'write', length: 4096 * 4, zeroKey: false },
    ],
  };
  const run = edgeConversation(spec);
  expect(run.failure).toBeNull();
  for (const timing of ['fast', 'captured'] as const) {
    for (const s of [...replayAs(run.responderSide, 'responder', timing), ...replayAs(run.requesterSide, 'requester', timing)])
      expect(judged(s)).toEqual(clean);
  }
});

/** A change to one record of a capture (its 0-based index taken modulo the record count). */
type Mutation =
  | { kind: 'field'; at: number; field: 'psn' | 'opcode' | 'ackReq' | 'destQp' | 'va' | 'rkey' | 'length' | 'syndrome' | 'msn'; value: number }
  | { kind: 'drop' | 'repeat' | 'swap'; at: number }
  | { kind: 'snaplen'; len: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant('field' as const),
    at: fc.nat(),
    field: fc.constantFrom(
      'psn' as const,
      'opcode' as const,
      'ackReq' as const,
      'destQp' as const,
      'va' as const,
      'rkey' as const,
      'length' as const,
      'syndrome' as const,
      'msn' as const,
    ),
    // Zero, one, the largest 24- and 32-bit values, or anything.
    value: fc.oneof(fc.constantFrom(0, 1, 0xffffff, 0xffffffff), fc.nat({ max: 0xffffffff })),
  }),
  fc.record({ kind: fc.constantFrom('drop' as const, 'repeat' as const, 'swap' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('snaplen' as const), len: fc.integer({ min: 40, max: 400 }) }),
);

/** `file` with `muts` applied, each RoCE frame changed sealed with a valid ICRC again. */
function mutate(file: Uint8Array, muts: readonly Mutation[]): Uint8Array {
  const cap = readCapture(file);
  const recs = cap.records.map((r) => ({ data: new Uint8Array(r.data), timestampNs: r.timestampNs }));
  let snaplen: number | undefined;
  for (const m of muts) {
    if (recs.length === 0) break;
    if (m.kind === 'snaplen') {
      snaplen = m.len;
      continue;
    }
    const i = m.at % recs.length;
    const r = recs[i] as (typeof recs)[number];
    if (m.kind === 'drop') recs.splice(i, 1);
    else if (m.kind === 'repeat') recs.splice(i, 0, { data: new Uint8Array(r.data), timestampNs: r.timestampNs });
    else if (m.kind === 'swap' && i + 1 < recs.length) [recs[i], recs[i + 1]] = [recs[i + 1] as typeof r, r];
    else if (m.kind === 'field') {
      const d = decodeFrame(r.data);
      if (!d.roce || d.bth === null || d.info === undefined) continue;
      const v = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
      const b = d.bthOff;
      const reth = d.info.offsets['RETH'];
      const aeth = d.info.offsets['AETH'];
      switch (m.field) {
        case 'psn':
          v.setUint32(b + 8, (v.getUint32(b + 8) & 0xff000000) | (m.value & 0xffffff));
          break;
        case 'opcode':
          v.setUint8(b, m.value & 0xff);
          break;
        case 'ackReq':
          v.setUint8(b + 8, v.getUint8(b + 8) ^ 0x80);
          break;
        case 'destQp':
          v.setUint32(b + 4, (v.getUint32(b + 4) & 0xff000000) | (m.value & 0xffffff));
          break;
        case 'va':
          if (reth !== undefined) v.setBigUint64(b + reth, BigInt(m.value) << BigInt(m.value % 33));
          break;
        case 'rkey':
          if (reth !== undefined) v.setUint32(b + reth + 8, m.value >>> 0);
          break;
        case 'length':
          if (reth !== undefined) v.setUint32(b + reth + 12, m.value >>> 0);
          break;
        case 'syndrome':
          if (aeth !== undefined) v.setUint8(b + aeth, m.value & 0xff);
          break;
        case 'msn':
          if (aeth !== undefined) v.setUint32(b + aeth, (v.getUint32(b + aeth) & 0xff000000) | (m.value & 0xffffff));
          break;
      }
      if (d.icrcOff < 0 || d.icrcOff + 4 > r.data.length) continue;
      if (d.version === 1) writeIcrc(r.data, d.icrcOff, icrcV1(r.data, d.l3Off, d.icrcOff));
      else sealIcrcV2(r.data, d.l3Off, d.icrcOff);
    }
  }
  const w = new PcapWriter(snaplen !== undefined ? { snaplen } : {});
  for (const r of recs) w.add(r.data, r.timestampNs, r.data.length);
  return w.toBytes();
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-replay-edge-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The bundled captures of RC traffic (captures/README.md), each replayed in both roles. */
const BUNDLED = ['rc-conversation.pcap', 'rc-conversation-sll.pcap', 'xrc-rd-v1.pcap'].map((f) =>
  fs.readFileSync(path.resolve(__dirname, '..', '..', 'captures', f)),
);

/** A capture to mutate, per role: an edge-case conversation's (each role from its host) or a bundled one. */
const base: fc.Arbitrary<{ responder: Uint8Array; requester: Uint8Array }> = fc.oneof(
  { weight: 3, arbitrary: edgeSpec.map((spec) => edgeConversation(spec)).map((r) => ({ responder: r.responderSide, requester: r.requesterSide })) },
  { weight: 1, arbitrary: fc.constantFrom(...BUNDLED).map((b) => ({ responder: b, requester: b })) },
);

test(
  'mutated edge-case and bundled captures go through roce replay in both roles without an internal error',
  async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(base, fc.array(mutation, { minLength: 1, maxLength: 4 }), async (sides, muts) => {
        for (const [side, role] of [
          [sides.responder, 'responder'],
          [sides.requester, 'requester'],
        ] as const) {
          const file = path.join(dir, `m${n++}.pcap`);
          fs.writeFileSync(file, mutate(side, muts));
          for (const ignore of [[], ['--ignore-icrc']]) {
            const o = memoryOutput();
            const code = await run(['replay', file, '--role', role, '--timing', 'fast', '--json', ...ignore], o);
            expect({ code: code === 0 || code === 1 ? 'reported' : code, err: o.err.match(/internal error.*/)?.[0] ?? null }).toEqual({
              code: 'reported',
              err: null,
            });
          }
          fs.rmSync(file);
        }
      }),
      { seed: SEED ?? 31, numRuns: RUNS },
    );
  },
  budget(600),
);
