/**
 * Writes the seed corpora of the fuzz targets (test/fuzz/corpus/<target>/), cut from the test
 * captures in captures/ and from short simulated runs of the stack (with loss, so NAKs, go-back-N
 * and RNR waits are in them). Each entry is named by the SHA-1 of its bytes, as libFuzzer names
 * the inputs it keeps, so running this again adds nothing twice. Entries already there (inputs the
 * fuzzer found, crash regressions) are kept.
 *
 *   npm run build && node dist/fuzz/seed-corpus.js
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LinkType, readCapture, writePcap, writePcapng, type CaptureRecord } from '../packets/pcap';
import { decodeFrame } from '../packets/decode';
import { encodeDone, encodePingpongDest } from '../apps/oob/pingpong-messages';
import { bwReportLayout, encodeBwReportField, encodeInt32BE, encodeKeyMessage, encodeMtu, encodeVersion } from '../apps/oob/perftest-messages';
import { ipv6FromString } from '../packets/bytes';
import { createSimPair } from '../apps/sim/sim-pair';
import { runWorkload } from '../apps/sim/workload';
import { PcapTap } from '../nic-driver/pcap-tap';
import { FUZZ_TARGETS } from './targets';
import { type EdgeSpec, edgeConversation } from './edge-conversations';
import { Mtu } from '../stack/mtu';

const ROOT = path.resolve(__dirname, '..', '..');
const OUT = path.join(ROOT, 'test', 'fuzz', 'corpus');
const CAPTURES = path.join(ROOT, 'captures');
const LINKS: readonly number[] = [LinkType.Ethernet, LinkType.Raw, LinkType.LinuxSll, LinkType.LinuxSll2, LinkType.Ipv4, LinkType.Ipv6, LinkType.Null];

function put(target: string, bytes: Uint8Array, added: Map<string, number>): void {
  const max = FUZZ_TARGETS.find((t) => t.name === target)?.maxLen ?? 4096;
  if (bytes.length > max) return;
  const dir = path.join(OUT, target);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, crypto.createHash('sha1').update(bytes).digest('hex'));
  if (fs.existsSync(file)) return;
  fs.writeFileSync(file, bytes);
  added.set(target, (added.get(target) ?? 0) + 1);
}

/** The first records of a capture that fit in `max` bytes, as classic pcap and as pcapng. */
function smallCaptures(records: readonly CaptureRecord[], max: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let n = records.length;
  for (;;) {
    const recs = records.slice(0, n).map((r) => ({ data: r.data, timestampNs: r.timestampNs }));
    const pcap = writePcap(recs);
    if (pcap.length <= max || n <= 1) {
      out.push(pcap);
      const ng = writePcapng(recs);
      if (ng.length <= max) out.push(ng);
      return out;
    }
    n = Math.max(1, Math.floor(n * 0.7));
  }
}

function captureFiles(): string[] {
  const files: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory() && e.name !== 'interop') walk(p);
      else if (/\.pcap(ng)?$/.test(e.name)) files.push(p);
    }
  };
  walk(CAPTURES);
  return files.sort();
}

/** A short simulated run with loss, captured at host A: NAKs, go-back-N and RNR waits. */
function simulatedCapture(seed: number, loss: number): Uint8Array {
  const tap = new PcapTap({ where: 'host-a' });
  const sim = createSimPair({ seed, faults: { aToB: { drop: loss }, bToA: { drop: loss } }, tap });
  runWorkload(sim, { seed, qps: 2, bytes: 24 * 1024, maxMessage: 2048, initialRecvs: 1 });
  sim.clock.runUntilIdle(1_000_000);
  return tap.bytes();
}

/**
 * The stack's own conversations of legal edge cases, captured on both hosts (edge-conversations.ts):
 * zero-length WRITE, READ and SEND with VA 0 and R_Key 0, lengths at path MTU boundaries, PSNs that
 * wrap at 2^24, atomics, SEND with immediate and with invalidate.
 */
function edgeCaptures(): Uint8Array[] {
  const z = (kind: EdgeSpec['ops'][number]['kind'], length = 0, zeroKey = true): EdgeSpec['ops'][number] => ({ kind, length, zeroKey });
  const specs: EdgeSpec[] = [
    {
      seed: 1,
      mtu: Mtu.MTU_256,
      psn: 0xfffffe,
      ops: [
        z('write'),
        z('read'),
        z('send'),
        z('writeImm'),
        z('write', 3 * 256 + 1, false),
        z('read', 2 * 256, false),
        z('sendImm', 255),
        z('compareSwap'),
        z('fetchAdd'),
        z('sendInv', 1),
      ],
    },
    {
      seed: 2,
      mtu: Mtu.MTU_1024,
      psn: 0xffffff,
      ops: [z('write', 1024, false), z('read', 1025, false), z('sendImm'), z('write', 0, false), z('read', 0, false), z('send', 2047)],
    },
    { seed: 3, mtu: Mtu.MTU_4096, psn: 0, ops: [z('write', 4095, false), z('read', 4097, false), z('write'), z('read')] },
  ];
  return specs.flatMap((s) => {
    const r = edgeConversation(s);
    return [r.requesterSide, r.responderSide];
  });
}

function main(): void {
  const added = new Map<string, number>();
  const wholeFiles: Uint8Array[] = captureFiles().map((f) => fs.readFileSync(f));
  for (const [seed, loss] of [
    [1, 0],
    [2, 0.05],
    [3, 0.15],
  ] as const)
    wholeFiles.push(simulatedCapture(seed, loss));
  wholeFiles.push(...edgeCaptures());

  for (const bytes of wholeFiles) {
    const cap = readCapture(bytes);
    // Whole (small) captures for the file-level targets.
    for (const small of smallCaptures(cap.records, 16384)) for (const t of ['capture-file', 'analyzer', 'replay-front-end']) put(t, small, added);
    // Single frames, one per distinct (link type, opcode, length class), for the decoder.
    const seen = new Set<string>();
    for (const r of cap.records) {
      const d = decodeFrame(r.data, r.linkType);
      // MADs (UD payloads to QP 1) for the MAD parser and, as one-MAD dialogues, for the CM agent.
      if (d.roce && d.mad !== null && d.mad !== undefined) {
        const mad = r.data.subarray(d.payloadOff, d.payloadOff + d.payloadLength);
        put('mad-cm', Uint8Array.of(0, ...mad), added);
        for (const mode of [0, 2, 4, 8, 24]) put('cm-agent', Uint8Array.of(mode, ...mad), added);
      }
      const key = `${r.linkType}/${d.roce ? (d.bth?.opcode ?? 'x') : 'not'}/${Math.min(3, Math.floor(r.data.length / 512))}/${d.roce ? (d.error?.code ?? '') : ''}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const link = Math.max(0, LINKS.indexOf(r.linkType));
      const f = new Uint8Array(r.data.length + 1);
      f[0] = link;
      f.set(r.data, 1);
      put('decode-frame', f, added);
    }
    // Whole CM dialogues (every MAD of the capture, in order) for the CM agent.
    const mads = cap.records.flatMap((r) => {
      const d = decodeFrame(r.data, r.linkType);
      return d.roce && d.mad !== null && d.mad !== undefined ? [r.data.subarray(d.payloadOff, d.payloadOff + d.payloadLength)] : [];
    });
    if (mads.length > 0) {
      const all = new Uint8Array(1 + mads.reduce((s, m) => s + m.length, 0));
      let at = 1;
      for (const m of mads) {
        all.set(m, at);
        at += m.length;
      }
      for (const mode of [0, 4, 8]) put('cm-agent', Uint8Array.of(mode, ...all.subarray(1)), added);
    }
  }

  const gid = ipv6FromString('::ffff:198.18.0.2');
  for (const qpn of [0x11, 0xffffff, 2]) put('pingpong-exchange', encodePingpongDest({ lid: 0, qpn, psn: 0xabcdef & (qpn | 0xff), gid }), added);
  put('pingpong-exchange', encodeDone(), added);
  const P = (pick: number, b: Uint8Array): Uint8Array => Uint8Array.of(pick, ...b);
  put('perftest-exchange', P(0, encodeVersion()), added);
  put('perftest-exchange', P(0, encodeVersion('6.10')), added);
  put('perftest-exchange', P(1, encodeInt32BE(4096)), added);
  put('perftest-exchange', P(2, encodeMtu(3)), added);
  put('perftest-exchange', P(2, encodeMtu(5, 4)), added);
  const dest = { lid: 0, outReads: 16, qpn: 0x11, psn: 0x2f1a9c, rkey: 0x216, vaddr: 0x5586b2c1f000n, tailMarkersVaddr: 0x5586b2c2f000n, gid, srqn: 0 };
  for (const [k, f] of [
    [0, { gid: true, dataValidation: false }],
    [1, { gid: false, dataValidation: false }],
    [2, { gid: true, dataValidation: true }],
    [3, { gid: false, dataValidation: true }],
  ] as const) {
    // The target picks the key message when pick % 5 = 3, the format by (pick >> 3) % 4.
    put('perftest-exchange', P(3 + 40 * k, encodeKeyMessage(f.gid ? dest : { ...dest, gid: null }, f)), added);
  }
  for (const v of [5.33, 5.0]) {
    const parts = bwReportLayout(v).map((l) =>
      encodeBwReportField({ size: 65536n, iters: 1000n, bwPeak: 93.5, bwAvg: 92.1, msgRateAvg: 0.17 }, l.field, l.size),
    );
    const report = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    let at = 0;
    for (const p of parts) {
      report.set(p, at);
      at += p.length;
    }
    // The report when pick % 5 = 4; bit 3 says a 5.33 peer (8-byte iters).
    put('perftest-exchange', P(v >= 5.33 ? 9 : 4, report), added);
  }
  for (const t of FUZZ_TARGETS)
    process.stdout.write(
      `${t.name.padEnd(18)} +${added.get(t.name) ?? 0} (now ${fs.existsSync(path.join(OUT, t.name)) ? fs.readdirSync(path.join(OUT, t.name)).length : 0})\n`,
    );
}

if (require.main === module) main();
