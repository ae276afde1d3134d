/**
 * The SMB Direct decoder's fields (ulp/smbd/smbd-fields.ts) against tshark 4.0's dissectors
 * (packet-smb-direct.c, packet-smb2.c) on captures/smbd.pcap: every field both have, on every
 * frame, digit for digit. tshark finds the conversation with its `smb_direct_infiniband` heuristic
 * on `infiniband.payload`, enabled by default in 4.0 (`tshark -G heuristic-decodes`); the capture
 * has no CM, so both sides claim it from the negotiate request's shape. `roce decode` does not run
 * this decoder yet, so the fields are read from FieldFrames built here with `ulp` = the decoder's
 * frame. The second connection, whose CM REQ and REP were captured, is found by both from the negotiation too;
 * its two SMB2 compounds (CREATE QUERY_INFO CLOSE; CREATE CLOSE failing) give each smb2.* field once per command, as tshark does.
 *
 * One ruling, held to a count: a SMB Direct message in several SEND packets (FIRST, LAST). tshark
 * 4.0 does not put RC SEND packets together (packet-infiniband.c hands each packet's payload to the
 * heuristics), so it reads the FIRST packet's payload as a whole data transfer message (whose
 * DataLength then runs past it, so no SMB2 is dissected) and the LAST packet's as nothing. The
 * message is one: IBTA vol. 1 §9.4 (a SEND's packets carry one message, delivered whole to one
 * receive WQE), and MS-SMBD §3.1.5.4 bounds a data transfer message by MaxSendSize, not by a packet. So
 * roce decode shows the message and the SMB2 command it carries on the LAST packet: the test checks
 * that tshark's smb_direct.* values on the FIRST equal ours on the LAST, and that tshark shows no
 * smb2.* for that message.
 *
 * @group tshark
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { testUnless } from '../support/skip';
import { readCapture } from '../../packets/pcap';
import { decodeAt } from '../../packets/decode';
import { frameLayers } from '../../packets/frame-layers';
import type { FieldFrame } from '../../packets/frame-fields';
import { SMBD } from '../../ulp/smbd/smbd-protocol';
import { UlpName } from '../../ulp/ulp-decoder';
import { type SmbdUlpFrame, smbdFieldNames } from '../../ulp/smbd/smbd-fields';
import type { SmbdFrame } from '../../ulp/smbd/smbd-decoder';

const ROOT = path.resolve(__dirname, '..', '..');
const FILE = path.join(ROOT, 'captures', 'smbd.pcap');

function onPath(name: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir !== '' && fs.existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}
const TSHARK = onPath('tshark');
const it = testUnless(TSHARK === null ? 'tshark is not installed (scripts/setup-system.sh installs it)' : null);

/** Fields tshark 4.0 has (`tshark -G fields`), less the protocols themselves (FT_PROTOCOL: no -T fields text). */
const FIELDS = smbdFieldNames().filter((n) => n !== 'smb_direct' && n !== 'smb2');

function ourRows(): { rows: string[][]; frames: (SmbdFrame | null)[] } {
  const dec = SMBD.decoder({ ports: [...SMBD.defaultPorts], qpns: [] });
  const frames: (SmbdFrame | null)[] = [];
  const rows = readCapture(new Uint8Array(fs.readFileSync(FILE))).records.map((r, i) => {
    const view = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
    const d = decodeAt(view, r.data, 0, r.data.byteLength, r.linkType, {}, r.origLen);
    const f = d.roce ? dec.observe(d, view, 0) : null;
    frames.push(f);
    const ulp: SmbdUlpFrame | null = f === null ? null : { protocol: UlpName.Smbd, frame: f };
    const ff: FieldFrame = {
      number: i + 1,
      origLen: r.origLen,
      bytes: r.data,
      epochNs: 0n,
      relativeNs: 0n,
      deltaNs: 0n,
      deltaDisplayedNs: 0n,
      decoded: d,
      layers: frameLayers(r.data, r.linkType),
      ulp,
    };
    return FIELDS.map((name) => {
      const def = SMBD.text.field(name);
      if (def === undefined) throw new Error(`no field ${name}`);
      return def
        .values(ff)
        .map((v) => def.text(v))
        .join(',');
    });
  });
  return { rows, frames };
}

it('every SMB Direct and SMB2 field of every frame equals tshark 4.0, but for the SEND FIRST/LAST ruling', () => {
  const theirs = execFileSync(
    TSHARK ?? 'tshark',
    ['-n', '-r', FILE, '-T', 'fields', '-E', 'occurrence=a', '-E', 'aggregator=,', ...FIELDS.flatMap((f) => ['-e', f])],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  )
    .replace(/\n$/, '')
    .split('\n')
    .map((l) => l.split('\t'));
  const { rows: ours, frames } = ourRows();
  expect(ours).toHaveLength(theirs.length);
  const diffs: string[] = [];
  let compared = 0;
  let ruled = 0;
  for (let i = 0; i < theirs.length; i++) {
    const f = frames[i];
    const next = frames[i + 1];
    // The FIRST of a message in several SENDs: tshark's smb_direct.* here are ours on the LAST.
    const first = f?.kind === 'send-fragment' && f.error === null && next?.kind === 'data' && next.packets === 2;
    const last = f?.kind === 'data' && f.packets > 1;
    FIELDS.forEach((name, k) => {
      const a = theirs[i]?.[k] ?? '';
      let b = ours[i]?.[k] ?? '';
      if (first && name.startsWith('smb_direct.')) b = ours[i + 1]?.[k] ?? '';
      if (last && name.startsWith('smb_direct.')) b = '';
      if (last && name.startsWith('smb2.')) {
        // tshark never sees this SMB2 message; ours has it.
        if (a !== '') diffs.push(`frame ${i + 1} ${name}: tshark ${JSON.stringify(a)} on a SEND LAST`);
        return;
      }
      if (a !== '' || b !== '') compared++;
      if (a !== b) diffs.push(`frame ${i + 1} ${name}: tshark ${JSON.stringify(a)}, roce ${JSON.stringify(b)}`);
    });
    if (first) ruled++;
  }
  expect(diffs).toEqual([]);
  // One message in SEND FIRST + LAST (frames 5-6).
  expect(ruled).toBe(1);
  expect(compared).toBe(204);
});
