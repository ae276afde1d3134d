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
 *   payloadLength      data.len (or the length of infiniband.payload), 0 when absent: tshark's payload
 *                      INCLUDES the pad bytes, so it is compared with payloadLength + padCount
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
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { noPublicCaptures, publicCapturesDir, testUnless } from '../support/skip';

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
  'data.len',
  'infiniband.invariant.crc',
  'infiniband.vendor',
] as const;

type TsharkFrame = Partial<Record<(typeof FIELDS)[number], string[]>>;
type Json = Record<string, unknown>;

function runTshark(file: string): TsharkFrame[] {
  const args = [
    '-r', file,
    '-n',
    '-T', 'json',
    '-d', 'udp.port==69,infiniband',
    '-d', 'udp.port==72,infiniband',
    '-o', 'infiniband.try_heuristic_first:FALSE',
    ...ULP_PROTOCOLS.flatMap((p) => ['--disable-protocol', p]),
    ...FIELDS.flatMap((f) => ['-e', f]),
  ];
  const out = execFileSync(TSHARK ?? 'tshark', args, { encoding: 'utf8', timeout: 15_000, maxBuffer: 256 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
  const parsed = JSON.parse(out) as { _source: { layers: TsharkFrame } }[];
  return parsed.map((p) => p._source.layers);
}

function runCli(file: string): Json[] {
  let out: string;
  try {
    out = execFileSync(process.execPath, [CLI, 'decode', '--json', file], { encoding: 'utf8', timeout: 15_000, maxBuffer: 256 << 20, stdio: ['ignore', 'pipe', 'pipe'] });
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
  const ibPayload = one(f, 'infiniband.payload');
  const withPad = dataLen !== undefined ? int(dataLen) : ibPayload !== undefined ? bytesHex(ibPayload).length / 2 : 0;
  // tshark's payload includes the pad: bring it to ours (payload without pad).
  t['payloadLength'] = withPad - (ourPad ?? 0);
  const crc = one(f, 'infiniband.invariant.crc');
  t['icrc'] = crc === undefined ? null : tsharkIcrcWire(crc);
  return t;
}

/** The subset of our JSON that tshark is asked about, ICRC turned into wire bytes. */
function oursComparable(o: Json, level: 'full' | 'bth'): Json {
  const keys = ['version', 'src', 'dst', 'srcPort', 'dstPort', 'opcode', 'se', 'migReq', 'padCount', 'tver', 'pkey', 'fecn', 'becn', 'destQp', 'ackReq', 'psn'];
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
  8: { skip: ['payloadLength', 'icrc'], why: 'tshark ignores bytes after an ACK\'s AETH, ICRC included' },
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

const ownCaptures = fs.existsSync(CAPTURES)
  ? fs
      .readdirSync(CAPTURES)
      .filter((f) => /\.pcap(ng)?$/.test(f))
      .sort()
  : [];

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
    expect(ours.filter((o) => 'error' in o).map((o) => o['frame'])).toEqual([2, 3, 4, 5, 6, 7, 8]);
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
