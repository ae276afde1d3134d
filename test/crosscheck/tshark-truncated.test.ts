/**
 * Cross-check of frames the capture cut short against tshark (written against 4.0.17): every
 * opcode tshark dissects, over IPv4 and IPv6, cut at every length from inside the UDP header to
 * past the extension headers and inside the ICRC, in records that admit the cut (captured length
 * < original length) and records that do not (captured = original length, the IP length larger).
 *
 * For each frame the real CLI's `roce decode --json` is compared with
 * `tshark -T json -e frame.len -e frame.cap_len -e ip.len -e udp.length -e infiniband.bth.opcode
 * -e infiniband.bth.psn ... -e _ws.expert.message -e _ws.malformed -e _ws.short`:
 *   - RoCE to us exactly when tshark hands the frame to InfiniBand (a cut inside the UDP header is
 *     neither's; one right after it is ours, cut before its BTH, as the UDP port says RoCE, while
 *     tshark calls no dissector for an empty UDP payload); a frame cut inside its BTH has no BTH
 *     field on either side;
 *   - the BTH fields and every extension header equal where tshark shows the header, and null on
 *     our side where it does not (a header the capture cut, and those after it);
 *   - the payload length is the wire's: ours plus the pad, the headers and the ICRC is tshark's UDP
 *     length (which tshark reads from the UDP header as we do);
 *   - truncated to us exactly when tshark shows the cut: captured length below the frame length
 *     (`frame.cap_len` < `frame.len`, "[Packet size limited during capture]"), or, for a record
 *     that does not admit it, tshark's expert "IPv4 total length exceeds packet length" / "IPv6
 *     payload length exceeds framing length". tshark marks such a record `_ws.malformed` (its IP
 *     and UDP lengths say more than the frame holds); we call it truncated, not malformed (no
 *     `error`): every frame tshark marks malformed here is one of those.
 * Not compared: the ICRC (we say "not captured"; for a record that does not admit the cut tshark
 * takes the last four bytes it has for the ICRC) and the captured payload bytes (tshark's payload
 * ends four bytes early, for the same reason).
 *
 * @group tshark
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildRoceV2Frame } from '../../packets/build';
import { PcapWriter } from '../../packets/pcap';
import { OPCODES, type OpcodeInfo } from '../../packets/opcodes';
import { transportSpecFor } from '../support/specs';
import { missingToolReason, testUnless } from '../support/skip';

const ROOT = path.resolve(__dirname, '..', '..');
const CLI = path.join(ROOT, 'bin', 'roce.js');
const noTshark = missingToolReason('tshark', 'tshark is not installed (scripts/setup-system.sh installs it)');
const noCli = fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js')) ? null : 'the CLI is not built (npm run build)';

/** ULP dissectors that would claim SEND payloads heuristically (as in tshark.test.ts). */
const ULP_PROTOCOLS = ['smc', 'smb_direct', 'rpcordma', 'nvme-rdma', 'lnet', 'iser', 'infiniband.eoib', 'infiniband_sdp', 'fcoib'];

const FIELDS = [
  'frame.number',
  'frame.protocols',
  'frame.len',
  'frame.cap_len',
  'ip.len',
  'ipv6.plen',
  'udp.length',
  'udp.srcport',
  'infiniband.bth.opcode',
  'infiniband.bth.padcnt',
  'infiniband.bth.destqp',
  'infiniband.bth.psn',
  'infiniband.bth.a',
  'infiniband.reth',
  'infiniband.reth.va',
  'infiniband.reth.r_key',
  'infiniband.reth.dmalen',
  'infiniband.atomiceth',
  'infiniband.atomiceth.swapdt',
  'infiniband.atomiceth.cmpdt',
  'infiniband.aeth.syndrome',
  'infiniband.aeth.msn',
  'infiniband.atomicacketh.origremdt',
  'infiniband.immdt',
  'infiniband.ieth',
  'infiniband.deth.q_key',
  'infiniband.deth.srcqp',
  '_ws.expert.message',
  '_ws.malformed',
  '_ws.short',
] as const;
type Field = (typeof FIELDS)[number];
type TsharkFrame = Partial<Record<Field, string[]>>;
type Json = Record<string, unknown>;

/**
 * Opcodes tshark 4.0.17 dissects with their extension headers (tshark.test.ts: not CNP, XRC,
 * FLUSH, ATOMIC WRITE, whose headers it does not know, nor RD, whose headers it misplaces).
 */
const OPCODES_CHECKED = OPCODES.filter((e): e is OpcodeInfo => e !== undefined && !(e.opcode >= 0x40 && e.opcode <= 0x5f) && e.opcode < 0x1c);

const eth = { src: 0x020000000001, dst: 0x020000000002 };
const IPS = [
  { ip: { version: 4 as const, src: '198.18.0.1', dst: '198.18.0.2' }, bthOff: 42 },
  { ip: { version: 6 as const, src: 'fd00::1', dst: 'fd00::2' }, bthOff: 62 },
];

/** Every cut of every checked opcode: from inside the UDP header to 6 bytes past the headers, then inside the ICRC. */
function cutCapture(admitted: boolean): { bytes: Uint8Array; count: number } {
  const w = new PcapWriter();
  let t = 1_700_000_000_000_000_000n;
  let count = 0;
  for (const { ip, bthOff } of IPS) {
    for (const info of OPCODES_CHECKED) {
      const frame = buildRoceV2Frame({ ...transportSpecFor(info, info.opcode + 7), eth, ip });
      const lengths = new Set<number>();
      for (let n = bthOff - 4; n <= Math.min(bthOff + info.headerLen + 6, frame.length - 1); n += 2) lengths.add(n);
      lengths.add(frame.length - 2);
      for (const n of lengths) {
        w.add(frame.subarray(0, n), (t += 1000n), admitted ? frame.length : n);
        count++;
      }
    }
  }
  return { bytes: w.toBytes(), count };
}

function runTshark(file: string): TsharkFrame[] {
  const args = [
    '-r',
    file,
    '-n',
    '-T',
    'json',
    '-o',
    'infiniband.try_heuristic_first:FALSE',
    ...ULP_PROTOCOLS.flatMap((p) => ['--disable-protocol', p]),
    ...FIELDS.flatMap((f) => ['-e', f]),
  ];
  const out = execFileSync('tshark', args, { encoding: 'utf8', timeout: 60_000, maxBuffer: 256 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
  return (JSON.parse(out) as { _source: { layers: TsharkFrame } }[]).map((p) => p._source.layers);
}

function runCli(file: string): Json[] {
  const out = execFileSync(process.execPath, [CLI, 'decode', '--json', file], { encoding: 'utf8', timeout: 60_000, maxBuffer: 256 << 20 });
  return out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Json);
}

const one = (f: TsharkFrame, k: Field): string | undefined => f[k]?.[0];
const int = (s: string): number => (/^0x/i.test(s) ? parseInt(s, 16) : parseInt(s, 10));
const hex64 = (s: string): string => `0x${BigInt(s).toString(16).padStart(16, '0')}`;
const u32 = (s: string): number => parseInt(s.replace(/[:\s]/g, ''), 16) >>> 0;

/** tshark's extension headers in the shape of our JSON (null where tshark shows none). */
function tsharkHeaders(f: TsharkFrame): Json {
  const va = one(f, 'infiniband.reth.va');
  const rkey = one(f, 'infiniband.reth.r_key');
  const atomic = f['infiniband.atomiceth'] !== undefined && va !== undefined && rkey !== undefined;
  const syn = one(f, 'infiniband.aeth.syndrome');
  const orig = one(f, 'infiniband.atomicacketh.origremdt');
  const imm = one(f, 'infiniband.immdt');
  const ieth = one(f, 'infiniband.ieth');
  const qkey = one(f, 'infiniband.deth.q_key');
  const srcQp = one(f, 'infiniband.deth.srcqp');
  return {
    reth:
      f['infiniband.reth'] !== undefined && va !== undefined && rkey !== undefined
        ? { va: va.toLowerCase(), rkey: int(rkey), dmaLength: int(one(f, 'infiniband.reth.dmalen') ?? '') }
        : null,
    atomicEth: atomic
      ? {
          va: va.toLowerCase(),
          rkey: int(rkey),
          swapAdd: hex64(one(f, 'infiniband.atomiceth.swapdt') ?? ''),
          compare: hex64(one(f, 'infiniband.atomiceth.cmpdt') ?? ''),
        }
      : null,
    aeth: syn === undefined ? null : { syndrome: int(syn), msn: int(one(f, 'infiniband.aeth.msn') ?? '') },
    atomicAckEth: orig === undefined ? null : { origData: hex64(orig) },
    immDt: imm === undefined ? null : u32(imm),
    ieth: ieth === undefined ? null : u32(ieth),
    deth: qkey === undefined || srcQp === undefined ? null : { qkey: Number(BigInt(qkey)), srcQp: int(srcQp) & 0xffffff },
  };
}

/** Our extension headers, as tshark can show them. */
function ourHeaders(o: Json): Json {
  const aeth = o['aeth'] as Json | null;
  return {
    reth: o['reth'],
    atomicEth: o['atomicEth'],
    aeth: aeth === null ? null : { syndrome: aeth['syndrome'], msn: aeth['msn'] },
    atomicAckEth: o['atomicAckEth'],
    immDt: o['immDt'],
    ieth: o['ieth'],
    deth: o['deth'],
  };
}

/** Where tshark shows that the capture holds less than the frame. */
function tsharkSaysCut(f: TsharkFrame): boolean {
  if (int(one(f, 'frame.cap_len') ?? '0') < int(one(f, 'frame.len') ?? '0')) return true;
  return (f['_ws.expert.message'] ?? []).some((m) => /(IPv4 total length exceeds packet length|IPv6 payload length exceeds framing length)/.test(m));
}

/** True when the frame's bytes end where its UDP header does. */
function udpEndsCapture(f: TsharkFrame): boolean {
  const cap = int(one(f, 'frame.cap_len') ?? '0');
  return cap === 14 + (one(f, 'ipv6.plen') !== undefined ? 40 : 20) + 8;
}

interface Report {
  mismatches: string[];
  /** Frames whose capture ends with the UDP header (RoCE to us, not to tshark). */
  emptyUdp: number;
  compared: number;
  bthCut: number;
  headerCut: number;
  tsharkMalformed: number;
}

function compare(ours: readonly Json[], theirs: readonly TsharkFrame[]): Report {
  const rep: Report = { mismatches: [], emptyUdp: 0, compared: 0, bthCut: 0, headerCut: 0, tsharkMalformed: 0 };
  if (ours.length !== theirs.length) rep.mismatches.push(`frame count: ours ${ours.length}, tshark ${theirs.length}`);
  for (let i = 0; i < Math.min(ours.length, theirs.length); i++) {
    const o = ours[i]!;
    const f = theirs[i]!;
    const n = `frame ${i + 1} (${String(o['opcodeName'] ?? '')}, ${one(f, 'frame.cap_len')} of ${one(f, 'frame.len')} bytes)`;
    const ib = (one(f, 'frame.protocols') ?? '').split(':').includes('infiniband');
    if (o['roce'] === true && !ib && o['truncatedIn'] === 'BTH' && o['srcPort'] === int(one(f, 'udp.srcport') ?? '-1') && udpEndsCapture(f)) {
      // The capture ends right after the UDP header: tshark calls no dissector for an empty UDP
      // payload; to us the UDP port says RoCE, cut before its BTH (explained; counted).
      rep.emptyUdp++;
      continue;
    }
    if ((o['roce'] === true) !== ib) {
      rep.mismatches.push(`${n}: ours roce ${String(o['roce'])}, tshark ${one(f, 'frame.protocols')}`);
      continue;
    }
    if (!ib) continue;
    rep.compared++;
    const cut = tsharkSaysCut(f);
    if (o['truncated'] !== cut) rep.mismatches.push(`${n}: ours truncated ${String(o['truncated'])}, tshark ${cut ? 'shows' : 'does not show'} a cut`);
    if ('error' in o) rep.mismatches.push(`${n}: ours has an error: ${String(o['error'])}`);
    if (f['_ws.malformed'] !== undefined) {
      rep.tsharkMalformed++;
      if (!cut) rep.mismatches.push(`${n}: tshark calls it malformed for another reason than the cut: ${(f['_ws.expert.message'] ?? []).join('; ')}`);
    }
    const op = one(f, 'infiniband.bth.opcode');
    if (op === undefined) {
      rep.bthCut++;
      if (o['opcode'] !== null || o['truncatedIn'] !== 'BTH')
        rep.mismatches.push(`${n}: tshark has no BTH, ours opcode ${String(o['opcode'])} cut in ${String(o['truncatedIn'])}`);
      continue;
    }
    const bth = {
      opcode: int(op),
      padCount: int(one(f, 'infiniband.bth.padcnt') ?? ''),
      destQp: int(one(f, 'infiniband.bth.destqp') ?? ''),
      psn: int(one(f, 'infiniband.bth.psn') ?? ''),
      ackReq: one(f, 'infiniband.bth.a') === '1' || one(f, 'infiniband.bth.a') === 'True',
    };
    const mineBth = { opcode: o['opcode'], padCount: o['padCount'], destQp: o['destQp'], psn: o['psn'], ackReq: o['ackReq'] };
    if (JSON.stringify(mineBth) !== JSON.stringify(bth)) rep.mismatches.push(`${n}: BTH ours ${JSON.stringify(mineBth)}, tshark ${JSON.stringify(bth)}`);
    const mine = ourHeaders(o);
    const them = tsharkHeaders(f);
    for (const k of Object.keys(mine)) {
      if (JSON.stringify(mine[k]) !== JSON.stringify(them[k]))
        rep.mismatches.push(`${n}: ${k} ours ${JSON.stringify(mine[k])}, tshark ${JSON.stringify(them[k])}`);
    }
    if (typeof o['truncatedIn'] === 'string' && !['payload', 'ICRC'].includes(o['truncatedIn'])) rep.headerCut++;
    // The wire's payload length, from the UDP length tshark reads.
    const info = OPCODES[int(op)];
    const udpLength = int(one(f, 'udp.length') ?? '');
    const fromUdp = udpLength - 8 - (info?.headerLen ?? 0) - 4 - Number(o['padCount']);
    if (o['payloadLength'] !== fromUdp) rep.mismatches.push(`${n}: payloadLength ours ${String(o['payloadLength'])}, from tshark's UDP length ${fromUdp}`);
  }
  return rep;
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-tshark-cut-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('tshark cross-check: frames the capture cut short', () => {
  for (const admitted of [true, false]) {
    const what = admitted ? 'records that admit the cut (snaplen)' : 'records that do not admit the cut (captured = original length)';
    testUnless(noTshark ?? noCli)(`${what}: every header, the payload length and the cut as tshark shows them`, () => {
      const { bytes, count } = cutCapture(admitted);
      const file = path.join(dir, `${admitted ? 'said' : 'unsaid'}.pcap`);
      fs.writeFileSync(file, bytes);
      const ours = runCli(file);
      const rep = compare(ours, runTshark(file));
      expect(rep.mismatches).toEqual([]);
      expect(ours).toHaveLength(count);
      // 23 opcodes, two IP versions: 600 frames tshark hands to InfiniBand, 230 of them cut inside the BTH, 172 inside an extension header.
      expect(rep.compared).toBeGreaterThanOrEqual(600);
      expect(rep.bthCut).toBeGreaterThanOrEqual(200);
      expect(rep.headerCut).toBeGreaterThanOrEqual(150);
      expect(rep.emptyUdp).toBe(2 * OPCODES_CHECKED.length);
      // tshark calls a record that does not admit the cut malformed; we do not.
      if (admitted) expect(rep.tsharkMalformed).toBe(0);
      else expect(rep.tsharkMalformed).toBe(rep.compared);
    });
  }

  testUnless(noTshark ?? noCli)('the comparison is not vacuous: a changed header, PSN or cut is reported', () => {
    const file = path.join(dir, 'said.pcap');
    if (!fs.existsSync(file)) fs.writeFileSync(file, cutCapture(true).bytes);
    const ours = runCli(file);
    const theirs = runTshark(file);
    expect(compare(ours, theirs).mismatches).toEqual([]);
    const tampered = ours.map((o) => JSON.parse(JSON.stringify(o)) as Json);
    const withReth = tampered.findIndex((o) => o['reth'] !== null && o['truncated'] === true);
    const cutInReth = tampered.findIndex((o) => o['truncatedIn'] === 'RETH');
    const withPsn = tampered.findIndex((o) => typeof o['psn'] === 'number');
    (tampered[withReth]!['reth'] as Json)['rkey'] = 1;
    tampered[cutInReth]!['reth'] = { va: '0x0000000000000000', rkey: 0, dmaLength: 0 };
    tampered[withPsn]!['psn'] = Number(tampered[withPsn]!['psn']) + 1;
    const notCut = tampered.findIndex((o) => o['truncated'] === true && o['opcode'] !== null);
    tampered[notCut]!['truncated'] = false;
    const found = compare(tampered, theirs).mismatches.map((m) => Number(/^frame (\d+)/.exec(m)?.[1]) - 1);
    expect(new Set(found)).toEqual(new Set([withReth, cutInReth, withPsn, notCut]));
  });
});
