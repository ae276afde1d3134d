/**
 * Cross-check of `roce decode --json` against an independent dissector:
 * Wireshark's InfiniBand dissector, through tshark (written against 4.0.17).
 *
 * For every test capture (captures/*.pcap* and, when present, the public
 * captures in ../shared/captures/public except the ERF one, which is native
 * InfiniBand), the real CLI is run (`node bin/roce.js decode --json FILE`) and
 * so is tshark; for every RoCE frame every field of our JSON must equal
 * tshark's value, and every frame tshark does not dissect as InfiniBand must
 * be `roce: false` in ours.
 *
 * Field mapping (ours → tshark, values normalised as noted):
 *   version            2 when tshark has udp.*, 1 when it has infiniband.grh.* only
 *   src, dst           ip.src/ip.dst, ipv6.src/ipv6.dst, or infiniband.grh.sgid/dgid (v1)
 *   srcPort, dstPort   udp.srcport, udp.dstport
 *   srcMac, dstMac     eth.src, eth.dst (null without an Ethernet header: SLL, raw IP)
 *   vlan.id, priority  vlan.id, vlan.priority
 *   dscp, ecn, ttl     ip.dsfield (the TOS byte) and ip.ttl, ipv6.tclass and ipv6.hlim, or for RoCE v1
 *                      infiniband.grh.tclass and infiniband.grh.hoplmt
 *   opcode             infiniband.bth.opcode
 *   se, migReq         infiniband.bth.se, infiniband.bth.m        ("0"/"1")
 *   padCount, tver     infiniband.bth.padcnt, infiniband.bth.tver
 *   pkey               infiniband.bth.p_key
 *   fecn, becn         bits 7 and 6 of the first infiniband.reserved (tshark 4.0 shows BTH byte 4,
 *                      FECN/BECN/Resv6, as one "Reserved" byte string; it has no FECN/BECN fields)
 *   destQp, ackReq, psn infiniband.bth.destqp (hex), infiniband.bth.a, infiniband.bth.psn
 *   reth.*             infiniband.reth.va / r_key / dmalen (when infiniband.reth is present)
 *   atomicEth.*        infiniband.reth.va / r_key inside infiniband.atomiceth, atomiceth.swapdt / cmpdt
 *                      (decimal 64-bit → our 0x%016x strings)
 *   aeth.syndrome, msn infiniband.aeth.syndrome, infiniband.aeth.msn
 *   aeth.kind, value   infiniband.aeth.syndrome.opcode (0 ACK, 1 RNR NAK, 2 reserved, 3 NAK) and
 *                      whichever of .credit_count / .timer / .reserved_value / .error_code is present
 *   immDt, ieth        infiniband.immdt, infiniband.ieth (byte strings → 32-bit numbers)
 *   deth.qkey, srcQp   infiniband.deth.q_key (shown as 64 bits), infiniband.deth.srcqp (shown over 4
 *                      bytes including the reserved byte: compared on its low 24 bits)
 *   atomicAckEth       infiniband.atomicacketh.origremdt
 *   payloadLength      data.len (or the length of infiniband.payload, or of infiniband.mad for a datagram
 *                      to the GSI), 0 when absent: tshark's payload INCLUDES the pad bytes, so it is
 *                      compared with payloadLength + padCount
 *   mad.*, mad.cm.*    infiniband.mad.* and infiniband.cm.* (the CM section below, with its own field
 *                      mapping: CM_FIELD_MAP)
 *   icrc               infiniband.invariant.crc: tshark prints the four ICRC bytes in wire order as
 *                      one big-endian number; our JSON gives the CRC value, whose least-significant
 *                      byte is first on the wire (docs/decode.md), so the two are byte-swapped
 *                      images of the same four bytes and are compared as wire bytes.
 *
 * What tshark 4.0.17 cannot check (only the BTH fields are compared there):
 *   - CNP (0x81), XRC (0xA0-0xB7), RC FLUSH (0x1C) and RC ATOMIC WRITE (0x1D): "Unknown OpCode";
 *     tshark prints the rest of the packet, ICRC included, as infiniband.vendor bytes, so
 *     xrcEth, feth, reth, aeth, immDt, ieth, atomicEth, atomicAckEth, payloadLength and icrc
 *     go unchecked for them.
 *   - RD (0x40-0x55): tshark places the RD extension headers 8 bytes after the end of the BTH
 *     (and its RDETH_AETH case never calls parse_RDETH), so rdEth, deth, reth, aeth, atomicEth,
 *     atomicAckEth, immDt, payloadLength and icrc are not comparable; ours follow IBTA vol. 1
 *     §9.2 and rxe's opcode table (RDETH right after the BTH, then DETH).
 *   - rdEth / xrcEth / feth never have a tshark counterpart that we could trust (see above).
 * The ICRC status (icrcOk) is not a tshark field (Wireshark never verifies the ICRC): it is checked
 * separately below.
 *
 * @group tshark
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { noPublicCaptures, publicCapture, publicCapturesDir, testUnless } from '../support/skip';
import { ipv6FromString } from '../../packets/bytes';
import { readCapture } from '../../packets/pcap';
import { decodeMad } from '../../packets/mad-payload';
import { madToJson } from '../../packets/mad-json';

const ROOT = path.resolve(__dirname, '..', '..');
const CAPTURES = path.join(ROOT, 'captures');
const CLI = path.join(ROOT, 'bin', 'roce.js');

function findTshark(): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const p = path.join(dir, 'tshark');
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return null;
}

const TSHARK = findTshark();
const noTshark = TSHARK === null ? 'tshark is not installed (scripts/setup-system.sh installs it)' : null;
const noCli = fs.existsSync(path.join(ROOT, 'dist', 'cli', 'main.js')) ? null : 'the CLI is not built (npm run build)';
const skipOwn = noTshark ?? noCli;
const skipPublic = noTshark ?? noCli ?? noPublicCaptures;

/** ULP dissectors that would claim SEND payloads heuristically and hide data.len. */
const ULP_PROTOCOLS = ['smc', 'smb_direct', 'rpcordma', 'nvme-rdma', 'lnet', 'iser', 'infiniband.eoib', 'infiniband_sdp', 'fcoib'];

const FIELDS = [
  'frame.number',
  'frame.protocols',
  'ip.src',
  'ip.dst',
  'ipv6.src',
  'ipv6.dst',
  'udp.srcport',
  'udp.dstport',
  'eth.src',
  'eth.dst',
  'vlan.id',
  'vlan.priority',
  'ip.dsfield',
  'ip.ttl',
  'ipv6.tclass',
  'ipv6.hlim',
  'infiniband.grh.tclass',
  'infiniband.grh.hoplmt',
  'infiniband.grh.sgid',
  'infiniband.grh.dgid',
  'infiniband.bth.opcode',
  'infiniband.bth.se',
  'infiniband.bth.m',
  'infiniband.bth.padcnt',
  'infiniband.bth.tver',
  'infiniband.bth.p_key',
  'infiniband.reserved',
  'infiniband.bth.destqp',
  'infiniband.bth.a',
  'infiniband.bth.psn',
  'infiniband.reth',
  'infiniband.reth.va',
  'infiniband.reth.r_key',
  'infiniband.reth.dmalen',
  'infiniband.atomiceth',
  'infiniband.atomiceth.swapdt',
  'infiniband.atomiceth.cmpdt',
  'infiniband.aeth.syndrome',
  'infiniband.aeth.msn',
  'infiniband.aeth.syndrome.opcode',
  'infiniband.aeth.syndrome.credit_count',
  'infiniband.aeth.syndrome.timer',
  'infiniband.aeth.syndrome.reserved_value',
  'infiniband.aeth.syndrome.error_code',
  'infiniband.atomicacketh.origremdt',
  'infiniband.immdt',
  'infiniband.ieth',
  'infiniband.deth.q_key',
  'infiniband.deth.srcqp',
  'infiniband.payload',
  'infiniband.mad',
  'data.len',
  'infiniband.invariant.crc',
  'infiniband.vendor',
] as const;

type TsharkFrame = Partial<Record<(typeof FIELDS)[number], string[]>>;
type Json = Record<string, unknown>;

function runTshark(file: string): TsharkFrame[] {
  return runTsharkFields(file, FIELDS) as TsharkFrame[];
}

function runTsharkFields(file: string, fields: readonly string[]): Record<string, string[] | undefined>[] {
  const args = [
    '-r',
    file,
    '-n',
    '-T',
    'json',
    '-d',
    'udp.port==69,infiniband',
    '-d',
    'udp.port==72,infiniband',
    '-o',
    'infiniband.try_heuristic_first:FALSE',
    ...ULP_PROTOCOLS.flatMap((p) => ['--disable-protocol', p]),
    ...fields.flatMap((f) => ['-e', f]),
  ];
  const out = execFileSync(TSHARK ?? 'tshark', args, { encoding: 'utf8', timeout: 15_000, maxBuffer: 256 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
  const parsed = JSON.parse(out) as { _source: { layers: Record<string, string[] | undefined> } }[];
  return parsed.map((p) => p._source.layers);
}

function runCli(file: string): Json[] {
  let out: string;
  try {
    out = execFileSync(process.execPath, [CLI, 'decode', '--json', file], {
      encoding: 'utf8',
      timeout: 15_000,
      maxBuffer: 256 << 20,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    throw new Error(`roce decode --json ${path.relative(ROOT, file)} failed: ${String((e as { stderr?: unknown }).stderr ?? e)}`);
  }
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Json);
}

// ----------------------------------------------------------- normalisation

const one = (f: TsharkFrame, k: (typeof FIELDS)[number]): string | undefined => f[k]?.[0];
const int = (s: string): number => (/^0x/i.test(s) ? parseInt(s, 16) : parseInt(s, 10));
const bool = (s: string): boolean => s === '1' || s.toLowerCase() === 'true';
const hex64 = (s: string): string => `0x${BigInt(s).toString(16).padStart(16, '0')}`;
const bytesHex = (s: string): string => s.replace(/[:\s]/g, '').toLowerCase();
const u32FromBytes = (s: string): number => parseInt(bytesHex(s), 16) >>> 0;
/** Our JSON gives the ICRC as its four wire bytes read big-endian, as tshark does. */
const oursIcrcWire = (s: string): string => s.replace(/^0x/, '');
/** tshark's invariant CRC (the four bytes in wire order, read big-endian) as the wire bytes in hex. */
const tsharkIcrcWire = (s: string): string => (parseInt(s, 16) >>> 0).toString(16).padStart(8, '0');

const AETH_KINDS = ['ACK', 'RNR_NAK', 'RESERVED', 'NAK'] as const;

function isInfiniband(f: TsharkFrame): boolean {
  return (one(f, 'frame.protocols') ?? '').split(':').includes('infiniband');
}

function comparableLevel(opcode: number, f: TsharkFrame): 'full' | 'bth' {
  if (f['infiniband.vendor'] !== undefined) return 'bth'; // tshark does not know the opcode
  if (opcode >= 0x40 && opcode <= 0x5f) return 'bth'; // RD: tshark misplaces the RD headers
  return 'full';
}

/** tshark's view of the frame in the shape of our JSON (only the fields tshark gives). */
function tsharkAsOurs(f: TsharkFrame, level: 'full' | 'bth', ourPad: number | null): Json {
  const t: Json = {};
  const udp = one(f, 'udp.dstport') !== undefined;
  t['version'] = udp ? 2 : 1;
  const src = one(f, 'ip.src') ?? one(f, 'ipv6.src') ?? one(f, 'infiniband.grh.sgid');
  const dst = one(f, 'ip.dst') ?? one(f, 'ipv6.dst') ?? one(f, 'infiniband.grh.dgid');
  if (src !== undefined) t['src'] = src;
  if (dst !== undefined) t['dst'] = dst;
  t['srcPort'] = udp ? int(one(f, 'udp.srcport') ?? '') : null;
  t['dstPort'] = udp ? int(one(f, 'udp.dstport') ?? '') : null;
  t['srcMac'] = one(f, 'eth.src') ?? null;
  t['dstMac'] = one(f, 'eth.dst') ?? null;
  const vid = one(f, 'vlan.id');
  t['vlan'] = vid === undefined ? null : { id: int(vid), priority: int(one(f, 'vlan.priority') ?? '') };
  const tclass = one(f, 'ip.dsfield') ?? one(f, 'ipv6.tclass') ?? one(f, 'infiniband.grh.tclass');
  t['dscp'] = tclass === undefined ? null : int(tclass) >>> 2;
  t['ecn'] = tclass === undefined ? null : int(tclass) & 3;
  const ttl = one(f, 'ip.ttl') ?? one(f, 'ipv6.hlim') ?? one(f, 'infiniband.grh.hoplmt');
  t['ttl'] = ttl === undefined ? null : int(ttl);
  const op = one(f, 'infiniband.bth.opcode');
  if (op === undefined) return t; // tshark gave up before the BTH
  t['opcode'] = int(op);
  t['se'] = bool(one(f, 'infiniband.bth.se') ?? '');
  t['migReq'] = bool(one(f, 'infiniband.bth.m') ?? '');
  t['padCount'] = int(one(f, 'infiniband.bth.padcnt') ?? '');
  t['tver'] = int(one(f, 'infiniband.bth.tver') ?? '');
  t['pkey'] = int(one(f, 'infiniband.bth.p_key') ?? '');
  const b4 = one(f, 'infiniband.reserved');
  if (b4 !== undefined) {
    const byte = parseInt(bytesHex(b4).slice(0, 2), 16);
    t['fecn'] = (byte & 0x80) !== 0;
    t['becn'] = (byte & 0x40) !== 0;
  }
  const qp = one(f, 'infiniband.bth.destqp');
  if (qp !== undefined) t['destQp'] = int(qp);
  const a = one(f, 'infiniband.bth.a');
  if (a !== undefined) t['ackReq'] = bool(a);
  const psn = one(f, 'infiniband.bth.psn');
  if (psn !== undefined) t['psn'] = int(psn);
  if (level === 'bth') return t;

  const atomic = f['infiniband.atomiceth'] !== undefined;
  const va = one(f, 'infiniband.reth.va');
  const rkey = one(f, 'infiniband.reth.r_key');
  if (f['infiniband.reth'] !== undefined && va !== undefined && rkey !== undefined) {
    t['reth'] = { va: va.toLowerCase(), rkey: int(rkey), dmaLength: int(one(f, 'infiniband.reth.dmalen') ?? '') };
  } else t['reth'] = null;
  if (atomic && va !== undefined && rkey !== undefined) {
    t['atomicEth'] = {
      va: va.toLowerCase(),
      rkey: int(rkey),
      swapAdd: hex64(one(f, 'infiniband.atomiceth.swapdt') ?? ''),
      compare: hex64(one(f, 'infiniband.atomiceth.cmpdt') ?? ''),
    };
  } else t['atomicEth'] = null;
  const syn = one(f, 'infiniband.aeth.syndrome');
  if (syn !== undefined) {
    const kind = AETH_KINDS[int(one(f, 'infiniband.aeth.syndrome.opcode') ?? '')];
    const value =
      one(f, 'infiniband.aeth.syndrome.credit_count') ??
      one(f, 'infiniband.aeth.syndrome.timer') ??
      one(f, 'infiniband.aeth.syndrome.reserved_value') ??
      one(f, 'infiniband.aeth.syndrome.error_code') ??
      '';
    t['aeth'] = { syndrome: int(syn), msn: int(one(f, 'infiniband.aeth.msn') ?? ''), kind, value: int(value) };
  } else t['aeth'] = null;
  const orig = one(f, 'infiniband.atomicacketh.origremdt');
  t['atomicAckEth'] = orig === undefined ? null : { origData: hex64(orig) };
  const imm = one(f, 'infiniband.immdt');
  t['immDt'] = imm === undefined ? null : u32FromBytes(imm);
  const ieth = one(f, 'infiniband.ieth');
  t['ieth'] = ieth === undefined ? null : u32FromBytes(ieth);
  const qkey = one(f, 'infiniband.deth.q_key');
  const srcQp = one(f, 'infiniband.deth.srcqp');
  t['deth'] = qkey === undefined || srcQp === undefined ? null : { qkey: Number(BigInt(qkey)), srcQp: int(srcQp) & 0xffffff };
  const dataLen = one(f, 'data.len');
  const ibPayload = one(f, 'infiniband.payload') ?? one(f, 'infiniband.mad');
  const withPad = dataLen !== undefined ? int(dataLen) : ibPayload !== undefined ? bytesHex(ibPayload).length / 2 : 0;
  // tshark's payload includes the pad: bring it to ours (payload without pad).
  t['payloadLength'] = withPad - (ourPad ?? 0);
  const crc = one(f, 'infiniband.invariant.crc');
  t['icrc'] = crc === undefined ? null : tsharkIcrcWire(crc);
  return t;
}

/** The subset of our JSON that tshark is asked about, ICRC turned into wire bytes. */
function oursComparable(o: Json, level: 'full' | 'bth'): Json {
  const keys = [
    'version',
    'src',
    'dst',
    'srcPort',
    'dstPort',
    'srcMac',
    'dstMac',
    'vlan',
    'dscp',
    'ecn',
    'ttl',
    'opcode',
    'se',
    'migReq',
    'padCount',
    'tver',
    'pkey',
    'fecn',
    'becn',
    'destQp',
    'ackReq',
    'psn',
  ];
  if (level === 'full') keys.push('reth', 'atomicEth', 'aeth', 'atomicAckEth', 'immDt', 'ieth', 'deth', 'payloadLength', 'icrc');
  const out: Json = {};
  for (const k of keys) out[k] = k === 'icrc' && typeof o[k] === 'string' ? oursIcrcWire(o[k] as string) : o[k];
  return out;
}

/**
 * Known, explained differences on the frames of captures/malformed.pcap (frame → fields
 * not compared, and why). Everything else in that file must agree like any other frame.
 */
const MALFORMED_EXCEPTIONS: Readonly<Record<number, { skip: readonly string[]; why: string }>> = {
  // 8-byte UDP payload: neither side has a BTH; our payloadLength is a number (0) even then.
  3: { skip: ['payloadLength'], why: 'no BTH: tshark has no payload field, ours reports 0' },
  // tshark throws inside the RETH and prints no ICRC; we read the last 4 bytes as the ICRC.
  4: { skip: ['icrc'], why: 'tshark stops at the short RETH before the ICRC' },
  // We stop at the UDP header (its length runs past the IP packet: ROCE_ERR_BAD_LENGTH) and give no
  // BTH fields; tshark flags the UDP length and dissects the captured bytes anyway.
  6: {
    skip: ['opcode', 'se', 'migReq', 'padCount', 'tver', 'pkey', 'fecn', 'becn', 'destQp', 'ackReq', 'psn', 'payloadLength', 'icrc'],
    why: 'roce-ts does not decode past a UDP length beyond the IP packet; tshark does',
  },
  // Pad count 3 with 0 bytes before the ICRC: tshark shows no payload at all, we report 0 payload
  // bytes and a pad of 3 (so payloadLength + padCount is 3 on our side, 0 on tshark's).
  7: { skip: ['payloadLength'], why: 'pad larger than the payload' },
  // ACK with 8 payload bytes: tshark's ACKNOWLEDGE has no payload, so it prints neither the
  // 8 bytes nor the ICRC after them.
  8: { skip: ['payloadLength', 'icrc'], why: "tshark ignores bytes after an ACK's AETH, ICRC included" },
  // A datagram to the GSI with a 200-byte MAD: tshark shows neither the MAD nor the ICRC after it.
  9: { skip: ['payloadLength', 'icrc'], why: 'tshark gives up on a MAD shorter than 256 bytes' },
};

interface FileReport {
  frames: number;
  roceFrames: number;
  full: number;
  bthOnly: number;
  tsharkOnlyByPort: number;
  mismatches: string[];
  ours: Json[];
}

function crossCheck(file: string, exceptions: Readonly<Record<number, { skip: readonly string[] }>> = {}): FileReport {
  return compare(runCli(file), runTshark(file), exceptions);
}

function compare(ours: Json[], theirs: TsharkFrame[], exceptions: Readonly<Record<number, { skip: readonly string[] }>> = {}): FileReport {
  const rep: FileReport = { frames: ours.length, roceFrames: 0, full: 0, bthOnly: 0, tsharkOnlyByPort: 0, mismatches: [], ours };
  if (theirs.length !== ours.length) rep.mismatches.push(`frame count: ours ${ours.length}, tshark ${theirs.length}`);
  for (let i = 0; i < Math.min(ours.length, theirs.length); i++) {
    const o = ours[i]!;
    const f = theirs[i]!;
    const n = i + 1;
    const ib = isInfiniband(f);
    if (o['roce'] !== true) {
      if (!ib) continue;
      // An ICMP error quoting a RoCE datagram (rxe's peer had no UDP 4791 socket): tshark dissects the
      // quoted packet; for us the frame is ICMP.
      if ((one(f, 'frame.protocols') ?? '').includes(':icmp:')) continue;
      // tshark also dissects UDP *source* port 4791 and the -d ports (69, 72); our rule is
      // "UDP destination port 4791", so those frames may be RoCE to tshark only.
      if (one(f, 'udp.dstport') !== undefined && one(f, 'udp.dstport') !== '4791') {
        rep.tsharkOnlyByPort++;
        continue;
      }
      rep.mismatches.push(`frame ${n}: tshark dissects it as InfiniBand (${one(f, 'frame.protocols')}), ours says roce:false`);
      continue;
    }
    rep.roceFrames++;
    if (!ib) {
      rep.mismatches.push(`frame ${n}: ours says roce:true, tshark: ${one(f, 'frame.protocols')}`);
      continue;
    }
    const level = typeof o['opcode'] === 'number' ? comparableLevel(o['opcode'], f) : 'full';
    if (level === 'full') rep.full++;
    else rep.bthOnly++;
    const mine = oursComparable(o, level);
    const tsh = tsharkAsOurs(f, level, typeof o['padCount'] === 'number' ? o['padCount'] : null);
    const skip = new Set(exceptions[n]?.skip ?? []);
    // tshark's InfiniBand dissector may read the first two payload bytes as an EtherType and hand the
    // payload to that protocol (a 1-byte WRITE of 0x06 plus its pad becomes XNS IDP, "malformed"):
    // its payload length and ICRC fields are then missing, though the frame is fine.
    if ((one(f, 'frame.protocols') ?? '').includes(':infiniband:ethertype')) {
      skip.add('payloadLength');
      skip.add('icrc');
    }
    for (const k of Object.keys(mine)) {
      if (skip.has(k)) continue;
      // A field tshark does not give at all (it stopped early) must be null on our side too.
      const want = k in tsh ? tsh[k] : null;
      if (JSON.stringify(mine[k]) !== JSON.stringify(want)) {
        rep.mismatches.push(`frame ${n} ${String(o['opcodeName'])} ${k}: ours ${JSON.stringify(mine[k])}, tshark ${JSON.stringify(want)}`);
      }
    }
  }
  return rep;
}

// -------------------------------------------------------------------- tests

/** Capture files of `dir` (relative to captures/), sorted. */
const capturesIn = (dir: string): string[] =>
  fs.existsSync(path.join(CAPTURES, dir))
    ? fs
        .readdirSync(path.join(CAPTURES, dir))
        .filter((f) => /\.pcap(ng)?$/.test(f))
        .sort()
        .map((f) => path.posix.join(dir, f))
    : [];

/** The generated captures, then the real rdma_rxe ones of captures/rxe (see captures/README.md). */
const ownCaptures = [...capturesIn('.'), ...capturesIn('rxe')];

function publicCaptureFiles(): string[] {
  const dir = publicCapturesDir();
  if (dir === null) return [];
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.pcap(ng)?$/.test(e.name) && !p.includes('endace-ib-erf')) out.push(p);
    }
  };
  walk(dir);
  return out.sort();
}

describe('tshark cross-check: captures/', () => {
  test('there are captures to check', () => {
    expect(ownCaptures.length).toBeGreaterThanOrEqual(9);
  });

  for (const name of ownCaptures) {
    testUnless(skipOwn)(`${name}: every field of every RoCE frame equals tshark's`, () => {
      const rep = crossCheck(path.join(CAPTURES, name), name === 'malformed.pcap' ? MALFORMED_EXCEPTIONS : {});
      expect(rep.mismatches).toEqual([]);
      expect(rep.roceFrames).toBeGreaterThan(0);
      if (name !== 'malformed.pcap') {
        // Every generated frame except malformed.pcap's is well formed with a valid ICRC.
        expect(rep.ours.filter((o) => o['roce'] === true && (o['icrcOk'] !== true || 'error' in o))).toEqual([]);
      }
      if (name === 'uc-ud-v6-vlan.pcap') expect(rep.frames - rep.roceFrames).toBe(4); // ARP ×2, TCP SYN, DNS
    });
  }

  testUnless(skipOwn)('the comparison is not vacuous: a changed field is reported', () => {
    const file = path.join(CAPTURES, 'rc-conversation.pcap');
    const ours = runCli(file);
    const theirs = runTshark(file);
    const clean = compare(ours, theirs);
    expect(clean.mismatches).toEqual([]);
    expect(clean.full).toBeGreaterThanOrEqual(44); // all but the CNP, FLUSH and ATOMIC WRITE frames
    const tampered = ours.map((o) => JSON.parse(JSON.stringify(o)) as Json);
    (tampered[0] as Json)['icrc'] = '0x00000000';
    ((tampered[3] as Json)['aeth'] as Json)['msn'] = 99;
    ((tampered[25] as Json)['atomicEth'] as Json)['swapAdd'] = '0x0000000000000002';
    (tampered[19] as Json)['becn'] = true;
    (tampered[4] as Json)['payloadLength'] = 31;
    expect(compare(tampered, theirs).mismatches.map((m) => m.replace(/:.*/, ''))).toEqual([
      'frame 1 RC_SEND_FIRST icrc',
      'frame 4 RC_ACKNOWLEDGE aeth',
      'frame 5 RC_SEND_ONLY_WITH_IMMEDIATE payloadLength',
      'frame 20 RC_RDMA_READ_REQUEST becn',
      'frame 26 RC_COMPARE_SWAP atomicEth',
    ]);
  });

  testUnless(noCli)('malformed.pcap: exactly the bad-ICRC frame has icrcOk false', () => {
    const ours = runCli(path.join(CAPTURES, 'malformed.pcap'));
    const bad = ours.filter((o) => o['icrcOk'] === false).map((o) => o['frame']);
    expect(bad).toEqual([2]);
    expect(ours.filter((o) => 'error' in o).map((o) => o['frame'])).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // 9 and 10 are GSI datagrams whose MAD is bad (length 200, base version 2): transport fine, no MAD.
    expect(ours.filter((o) => o['frame'] === 9 || o['frame'] === 10).map((o) => [o['icrcOk'], o['mad'], String(o['error']).slice(0, 24)])).toEqual([
      [true, null, 'a MAD is 256 bytes, this'],
      [true, null, 'MAD base version 2 (only'],
    ]);
  });
});

describe('tshark cross-check: public captures (real devices)', () => {
  const files = publicCaptureFiles();
  const dir = publicCapturesDir();
  if (files.length === 0) {
    testUnless(skipPublic ?? 'no public captures found')('public captures', () => undefined);
  }
  for (const file of files) {
    const rel = dir === null ? file : path.relative(dir, file);
    testUnless(skipPublic)(`${rel}: every field of every RoCE frame equals tshark's`, () => {
      const rep = crossCheck(file);
      expect(rep.mismatches).toEqual([]);
      expect(rep.roceFrames).toBeGreaterThan(0);
    });
  }

  // Not a tshark check (Wireshark never verifies the ICRC): every RoCE frame of a real device's
  // capture must carry a valid ICRC and decode without error.
  testUnless(noCli ?? noPublicCaptures)('every RoCE frame of every public capture has a valid ICRC', () => {
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const roce = runCli(file).filter((o) => o['roce'] === true);
      expect(roce.length).toBeGreaterThan(0);
      const bad = roce.filter((o) => o['icrcOk'] !== true || 'error' in o).map((o) => `${path.basename(file)} frame ${String(o['frame'])}`);
      expect(bad).toEqual([]);
    }
  });
});

// ------------------------------------------------------------- CM MADs

/**
 * The MADs of datagrams to the GSI (`mad` in our JSON) against tshark's infiniband.mad.* and
 * infiniband.cm.* fields. tshark 4.0.17 dissects the CM messages REQ, REP, RTU, REJ, DREQ and
 * DREP; of MRA, SIDR_REQ, SIDR_REP, LAP and APR (and ClassPortInfo) it shows the MAD header only,
 * so only that is compared for them (their layouts are pinned by byte fixtures in
 * test/packets/cm.test.ts instead).
 *
 * Field by field (ours → tshark; kinds: num = number, bool = 0/1, u64 = 64-bit hex, bytes = byte
 * string, gid = address):
 *   REQ flow labels and packet rates: tshark 4.0.17 reads the flow label from the three bytes at
 *   offset 88 (100 for the alternate path) with the mask of the 32-bit word, and the packet rate from
 *   byte 88 instead of 91 (packet-infiniband.c parse_CM_Req adds hf_cm_req_primary_packet_rate at
 *   the word's first byte). So it shows flowLabel >> 8 and (flowLabel >> 12) & 0x3f; those are the
 *   values compared. Our layout is the kernel's (CM_REQ_PRIMARY_FLOW_LABEL: Byte 88 bits 0-19,
 *   CM_REQ_PRIMARY_PACKET_RATE: Byte 91 bits 2-7).
 *   REQ GIDs: over IPv4 tshark gives only the last 4 bytes (prim_localgid_ipv4); over IPv6 and native
 *   IB the whole GID; alternate GIDs as bytes.
 *   REQ private data: tshark's `.private`, or `.ip_cm` (all 92 bytes) when the service ID is an RDMA IP
 *   CM one; then ipCm.* against `.ip_cm.*`.
 *   REQ sapSupported: no tshark field (it is one of the bits tshark calls alt_reserved2).
 */
type CmKind = 'num' | 'bool' | 'u64' | 'bytes' | 'gid' | 'flowLabel>>8' | 'packetRateFromFlowLabel';
type CmMap = readonly (readonly [ours: string, tshark: string, kind: CmKind])[];

const MAD_MAP: CmMap = [
  ['baseVersion', 'infiniband.mad.baseversion', 'num'],
  ['mgmtClass', 'infiniband.mad.mgmtclass', 'num'],
  ['classVersion', 'infiniband.mad.classversion', 'num'],
  ['method', 'infiniband.mad.method', 'num'],
  ['status', 'infiniband.mad.status', 'num'],
  ['classSpecific', 'infiniband.mad.classspecific', 'num'],
  ['transactionId', 'infiniband.mad.transactionid', 'u64'],
  ['attributeId', 'infiniband.mad.attributeid', 'num'],
  ['attributeModifier', 'infiniband.mad.attributemodifier', 'num'],
];

const R = 'infiniband.cm.req.';
const CM_FIELD_MAP: Readonly<Record<string, CmMap>> = {
  REQ: [
    ['localCommId', 'infiniband.cm.req', 'num'],
    ['serviceId', `${R}serviceid`, 'u64'],
    ['localCaGuid', `${R}localcaguid`, 'u64'],
    ['localQkey', `${R}localqkey`, 'num'],
    ['localQpn', `${R}localqpn`, 'num'],
    ['responderResources', `${R}responderres`, 'num'],
    ['localEecn', `${R}localeecn`, 'num'],
    ['initiatorDepth', `${R}initdepth`, 'num'],
    ['remoteEecn', `${R}remoteeecn`, 'num'],
    ['remoteCmResponseTimeout', `${R}remoteresptout`, 'num'],
    ['transportServiceType', `${R}transpsvctype`, 'num'],
    ['endToEndFlowControl', `${R}e2eflowctrl`, 'bool'],
    ['startingPsn', `${R}startpsn`, 'num'],
    ['localCmResponseTimeout', `${R}localresptout`, 'num'],
    ['retryCount', `${R}retrcount`, 'num'],
    ['pkey', `${R}pkey`, 'num'],
    ['pathMtu', `${R}pppmtu`, 'num'],
    ['rdcExists', `${R}rdcexist`, 'bool'],
    ['rnrRetryCount', `${R}rnrretrcount`, 'num'],
    ['maxCmRetries', `${R}maxcmretr`, 'num'],
    ['srq', `${R}srq`, 'bool'],
    ['extendedTransportType', `${R}ext_transport`, 'num'],
    ['primaryLocalLid', `${R}prim_locallid`, 'num'],
    ['primaryRemoteLid', `${R}prim_remotelid`, 'num'],
    ['primaryLocalGid', `${R}prim_localgid`, 'gid'],
    ['primaryRemoteGid', `${R}prim_remotegid`, 'gid'],
    ['primaryFlowLabel', `${R}prim_flowlabel`, 'flowLabel>>8'],
    ['primaryFlowLabel', `${R}prim_pktrate`, 'packetRateFromFlowLabel'],
    ['primaryTrafficClass', `${R}prim_tfcclass`, 'num'],
    ['primaryHopLimit', `${R}prim_hoplim`, 'num'],
    ['primarySl', `${R}prim_sl`, 'num'],
    ['primarySubnetLocal', `${R}prim_subnetlocal`, 'bool'],
    ['primaryLocalAckTimeout', `${R}prim_localacktout`, 'num'],
    ['alternateLocalLid', `${R}alt_locallid`, 'num'],
    ['alternateRemoteLid', `${R}alt_remotelid`, 'num'],
    ['alternateLocalGid', `${R}alt_localgid`, 'gid'],
    ['alternateRemoteGid', `${R}alt_remotegid`, 'gid'],
    ['alternateFlowLabel', `${R}alt_flowlabel`, 'flowLabel>>8'],
    ['alternateFlowLabel', `${R}alt_pktrate`, 'packetRateFromFlowLabel'],
    ['alternateTrafficClass', `${R}alt_tfcclass`, 'num'],
    ['alternateHopLimit', `${R}alt_hoplim`, 'num'],
    ['alternateSl', `${R}alt_sl`, 'num'],
    ['alternateSubnetLocal', `${R}alt_subnetlocal`, 'bool'],
    ['alternateLocalAckTimeout', `${R}alt_localacktout`, 'num'],
    ['privateData', `${R}private|${R}ip_cm`, 'bytes'],
    ['ipCm.majorVersion', `${R}ip_cm.majv`, 'num'],
    ['ipCm.minorVersion', `${R}ip_cm.minv`, 'num'],
    ['ipCm.ipVersion', `${R}ip_cm.ipv`, 'num'],
    ['ipCm.reserved', `${R}ip_cm.reserved`, 'num'],
    ['ipCm.srcPort', `${R}ip_cm.sport`, 'num'],
    ['ipCm.src', `${R}ip_cm.sip4|${R}ip_cm.sip6`, 'gid'],
    ['ipCm.dst', `${R}ip_cm.dip4|${R}ip_cm.dip6`, 'gid'],
    ['ipCm.privateData', `${R}ip_cm.private`, 'bytes'],
  ],
  REP: [
    ['localCommId', 'infiniband.cm.rep', 'num'],
    ['remoteCommId', 'infiniband.cm.rep.remotecommid', 'num'],
    ['localQkey', 'infiniband.cm.rep.localqkey', 'num'],
    ['localQpn', 'infiniband.cm.rep.localqpn', 'num'],
    ['localEecn', 'infiniband.cm.rep.localeecn', 'num'],
    ['startingPsn', 'infiniband.cm.rep.startpsn', 'num'],
    ['responderResources', 'infiniband.cm.rep.respres', 'num'],
    ['initiatorDepth', 'infiniband.cm.rep.initdepth', 'num'],
    ['targetAckDelay', 'infiniband.cm.rep.tgtackdelay', 'num'],
    ['failoverAccepted', 'infiniband.cm.rep.failoveracc', 'num'],
    ['endToEndFlowControl', 'infiniband.cm.rep.e2eflowctrl', 'bool'],
    ['rnrRetryCount', 'infiniband.cm.rep.rnrretrcount', 'num'],
    ['srq', 'infiniband.cm.rep.srq', 'bool'],
    ['localCaGuid', 'infiniband.cm.rep.localcaguid', 'u64'],
    ['privateData', 'infiniband.cm.rep.private', 'bytes'],
  ],
  RTU: [
    ['localCommId', 'infiniband.cm.rtu.localcommid', 'num'],
    ['remoteCommId', 'infiniband.cm.rtu.remotecommid', 'num'],
    ['privateData', 'infiniband.cm.rtu.private', 'bytes'],
  ],
  REJ: [
    ['localCommId', 'infiniband.cm.rej.localcommid', 'num'],
    ['remoteCommId', 'infiniband.cm.rej.remotecommid', 'num'],
    ['messageRejected', 'infiniband.cm.rej.msgrej', 'num'],
    ['rejectedInfoLength', 'infiniband.cm.rej.rejinfolen', 'num'],
    ['reason', 'infiniband.cm.rej.reason', 'num'],
    ['ari', 'infiniband.cm.rej.ari', 'bytes'],
    ['privateData', 'infiniband.cm.rej.private', 'bytes'],
  ],
  DREQ: [
    ['localCommId', 'infiniband.cm.dreq.localcommid', 'num'],
    ['remoteCommId', 'infiniband.cm.dreq.remotecommid', 'num'],
    // tshark registers the DREQ's QPN/EECN under the REQ's prefix.
    ['remoteQpnEecn', 'infiniband.cm.req.remoteqpneecn', 'num'],
    ['privateData', 'infiniband.cm.dreq.private', 'bytes'],
  ],
  DREP: [
    ['localCommId', 'infiniband.cm.drsp.localcommid', 'num'],
    ['remoteCommId', 'infiniband.cm.drsp.remotecommid', 'num'],
    ['privateData', 'infiniband.cm.drsp.private', 'bytes'],
  ],
};

const CM_TSHARK_FIELDS = [
  'frame.number',
  'frame.protocols',
  ...new Set([...MAD_MAP, ...Object.values(CM_FIELD_MAP).flat()].flatMap(([, t]) => t.split('|'))),
  `${R}prim_localgid_ipv4`,
  `${R}prim_remotegid_ipv4`,
];

/** A JSON value at a dotted path ("ipCm.src"). */
function at(o: Json, dotted: string): unknown {
  return dotted.split('.').reduce<unknown>((v, k) => (v !== null && typeof v === 'object' ? (v as Json)[k] : undefined), o);
}

/** The 16 bytes of an address text (IPv4 text → IPv4-mapped). */
function addrBytes(text: string): Uint8Array {
  return ipv6FromString(text.includes(':') ? text : `::ffff:${text}`);
}

/** Our value in tshark's terms, as a comparable string. */
function oursForTshark(v: unknown, kind: CmKind, tsharkField: string): string {
  switch (kind) {
    case 'num':
      return String(v);
    case 'bool':
      return v === true ? '1' : '0';
    case 'u64':
      return BigInt(String(v)).toString(16);
    case 'bytes':
      return String(v);
    case 'flowLabel>>8':
      return String((v as number) >>> 8);
    case 'packetRateFromFlowLabel':
      return String(((v as number) >>> 12) & 0x3f);
    case 'gid': {
      const b = addrBytes(String(v));
      // tshark's IPv4 fields (…_ipv4, ip_cm.sip4/dip4) show the last 4 bytes only; its alternate GIDs are bytes.
      if (/_ipv4$|ip4$/.test(tsharkField)) return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
      return Buffer.from(b).toString('hex');
    }
  }
}

/** tshark's value as a comparable string. */
function tsharkValue(s: string, kind: CmKind, tsharkField: string): string {
  switch (kind) {
    case 'u64':
      return BigInt(s).toString(16);
    case 'bytes':
      return bytesHex(s);
    case 'gid':
      if (/_ipv4$|ip4$/.test(tsharkField)) return s;
      return s.includes(':') && !/^([0-9a-f]{2}:){15}[0-9a-f]{2}$/i.test(s) ? Buffer.from(addrBytes(s)).toString('hex') : bytesHex(s);
    default:
      return String(int(s));
  }
}

interface CmReport {
  mismatches: string[];
  /** Messages compared field by field, by name; and MADs compared by header only. */
  compared: Record<string, number>;
  headerOnly: number;
}

/** Compares the MADs of `ours` (our JSON per frame, or null) with tshark's fields of the same frames. */
function compareCm(ours: readonly (Json | null)[], theirs: readonly Record<string, string[] | undefined>[], label: string): CmReport {
  const rep: CmReport = { mismatches: [], compared: {}, headerOnly: 0 };
  for (let i = 0; i < Math.min(ours.length, theirs.length); i++) {
    const o = ours[i] ?? null;
    const t = theirs[i]!;
    const n = i + 1;
    const has = (f: string): string | undefined => t[f]?.[0];
    if ((has('frame.protocols') ?? '').includes(':icmp:')) continue; // a datagram quoted by an ICMP error
    const tsharkHasMad = has('infiniband.mad.baseversion') !== undefined;
    const mad = o === null ? null : ((o['mad'] as Json | null | undefined) ?? null);
    if (mad === null) {
      // A MAD tshark shows must be one we decoded, or one we reported as malformed.
      if (tsharkHasMad && !(o !== null && 'error' in o)) rep.mismatches.push(`${label} frame ${n}: tshark shows a MAD, ours has none and no error`);
      continue;
    }
    if (!tsharkHasMad) {
      rep.mismatches.push(`${label} frame ${n}: ours has a MAD, tshark shows none`);
      continue;
    }
    const check = (map: CmMap, obj: Json, what: string): void => {
      for (const [key, tfields, kind] of map) {
        const v = at(obj, key);
        if (v === undefined || (key.startsWith('ipCm.') && at(obj, 'ipCm') === null)) continue;
        const tf = tfields.split('|').find((f) => has(f) !== undefined) ?? (kind === 'gid' ? [`${tfields}_ipv4`].find((f) => has(f) !== undefined) : undefined);
        if (tf === undefined) {
          rep.mismatches.push(`${label} frame ${n} ${what}.${key}: ours ${JSON.stringify(v)}, tshark has no ${tfields}`);
          continue;
        }
        const mine = oursForTshark(v, kind, tf);
        const theirsV = tsharkValue(has(tf) ?? '', kind, tf);
        if (mine !== theirsV) rep.mismatches.push(`${label} frame ${n} ${what}.${key}: ours ${mine}, tshark ${theirsV} (${tf})`);
      }
    };
    check(MAD_MAP, mad, 'mad');
    const cm = mad['cm'] as Json | null;
    const map = cm === null ? undefined : CM_FIELD_MAP[String(cm['message'])];
    if (cm === null || map === undefined) {
      rep.headerOnly++;
      continue;
    }
    check(map, cm, `cm(${String(cm['message'])})`);
    rep.compared[String(cm['message'])] = (rep.compared[String(cm['message'])] ?? 0) + 1;
  }
  return rep;
}

/** Every capture of ours with at least one datagram to the GSI. */
const cmCaptures = ownCaptures.filter((name) => /^(cm-|malformed|rxe\/)/.test(name));

describe('tshark cross-check: CM MADs', () => {
  const totals: Record<string, number> = {};
  for (const name of cmCaptures) {
    testUnless(skipOwn)(`${name}: every MAD header and CM field equals tshark's`, () => {
      const file = path.join(CAPTURES, name);
      const ours = runCli(file).map((o) => (o['roce'] === true ? o : null));
      const rep = compareCm(ours, runTsharkFields(file, CM_TSHARK_FIELDS), name);
      expect(rep.mismatches).toEqual([]);
      for (const [k, v] of Object.entries(rep.compared)) totals[k] = (totals[k] ?? 0) + v;
      totals['header only'] = (totals['header only'] ?? 0) + rep.headerOnly;
    });
  }

  testUnless(skipOwn)('every message tshark dissects was compared field by field, and the rest by header', () => {
    expect(Object.keys(totals).sort()).toEqual(['DREP', 'DREQ', 'REJ', 'REP', 'REQ', 'RTU', 'header only']);
    expect(totals['REQ']).toBeGreaterThanOrEqual(7); // 2 generated, 5 from rdma_rxe
    expect(totals['header only']).toBeGreaterThanOrEqual(8); // MRA, SIDR_REQ ×7, SIDR_REP, LAP, APR, ClassPortInfo ×2
  });

  testUnless(skipOwn)('the CM comparison is not vacuous: a changed field is reported', () => {
    const file = path.join(CAPTURES, 'cm-exchanges.pcap');
    const ours = runCli(file);
    const theirs = runTsharkFields(file, CM_TSHARK_FIELDS);
    expect(compareCm(ours, theirs, 'cm').mismatches).toEqual([]);
    const tampered = ours.map((o) => JSON.parse(JSON.stringify(o)) as Json);
    const cmOf = (i: number): Json => ((tampered[i] as Json)['mad'] as Json)['cm'] as Json;
    cmOf(0)['primaryFlowLabel'] = 0x4590d; // tshark 4.0.17 shows only its top 12 bits (see above)
    (cmOf(0)['ipCm'] as Json)['dst'] = '198.18.0.3';
    cmOf(2)['targetAckDelay'] = 16;
    cmOf(7)['reason'] = 27;
    ((tampered[12] as Json)['mad'] as Json)['method'] = 0x81;
    expect(compareCm(tampered, theirs, 'cm').mismatches.map((m) => m.replace(/:.*/, ''))).toEqual([
      'cm frame 1 cm(REQ).primaryFlowLabel',
      'cm frame 1 cm(REQ).ipCm.dst',
      'cm frame 3 cm(REP).targetAckDelay',
      'cm frame 8 cm(REJ).reason',
      'cm frame 13 mad.method',
    ]);
  });
});

/**
 * Native InfiniBand CM MADs from a real fabric: the Endace capture in the shared public captures
 * (ERF, link type 197, which roce decode does not read). The MAD of each CM frame is cut out of the
 * record (16-byte ERF header, LRH, GRH when the LRH says so, BTH, DETH) and decoded by
 * packets/mad-payload.ts; the result must equal tshark's fields for that frame.
 */
describe('tshark cross-check: native InfiniBand CM MADs (Endace capture)', () => {
  testUnless(noTshark ?? noPublicCaptures)("every CM MAD of endace-ib-erf/infiniband.pcap equals tshark's fields", () => {
    const file = publicCapture('endace-ib-erf/infiniband.pcap');
    const cap = readCapture(new Uint8Array(fs.readFileSync(file)));
    const ours = cap.records.map((r) => {
      const ib = r.data.subarray(16);
      const lnh = (ib[1] ?? 0) & 3;
      const bth = 8 + (lnh === 3 ? 40 : 0);
      if (ib.length < bth + 20 + 256 || ib[bth] !== 0x64) return null; // UD SEND ONLY only
      const off = bth + 20;
      try {
        return { mad: madToJson(decodeMad(new DataView(ib.buffer, ib.byteOffset), off, 256)) } as Json;
      } catch {
        return null;
      }
    });
    const theirs = runTsharkFields(file, CM_TSHARK_FIELDS);
    const rep = compareCm(ours, theirs, 'endace');
    expect(rep.mismatches).toEqual([]);
    expect(rep.compared).toEqual({ REQ: 3, REP: 3, RTU: 3 });
  });
});
