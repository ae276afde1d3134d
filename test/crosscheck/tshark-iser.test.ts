/**
 * The iSER decoder's fields (ulp/iser/iser-fields.ts) against tshark 4.0's iSER and iSCSI
 * dissectors (packet-iser.c, packet-iscsi.c) on captures/iser.pcap: every field both know, on every
 * frame, digit for digit. tshark needs no option for the CM-owned connection: packet-iser.c's
 * heuristic on the InfiniBand payload accepts a conversation whose CM REQ named the IP CM service
 * of TCP port 3260. Frames tshark 4.0 sees otherwise are left out, and each rule is held to a count:
 *   - a message that came in several SEND packets: tshark 4.0 does not reassemble SENDs, so it
 *     dissects the FIRST packet alone as a (malformed) iSER message and the LAST as no iSER at
 *     all; here the LAST carries the whole message (IBTA vol. 1 §9.4.1: a message is the payloads
 *     of its FIRST..LAST packets together), so both frames are left out;
 *   - the connection whose CM is not captured: tshark shows it as iSER only with the iSER
 *     preference "manual_en" and both ends' GIDs and QPNs; the decoder takes it with --decode-as
 *     qpn, which the test does not pass, so neither side shows it.
 * `roce decode` does not run this decoder yet, so the fields are read from FieldFrames built from
 * the decoder's frames (the iSER fields read nothing but `FieldFrame.ulp`).
 *
 * @group tshark
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { testUnless } from '../support/skip';
import { readCapture } from '../../packets/pcap';
import { decodeAt } from '../../packets/decode';
import type { FieldFrame } from '../../packets/frame-fields';
import { ISER } from '../../ulp/iser/iser-protocol';
import { iserFieldNames } from '../../ulp/iser/iser-fields';
import type { IserFrame } from '../../ulp/iser/iser-decoder';

const ROOT = path.resolve(__dirname, '..', '..');
const FILE = path.join(ROOT, 'captures', 'iser.pcap');

function onPath(name: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir !== '' && fs.existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}
const TSHARK = onPath('tshark');
const it = testUnless(TSHARK === null ? 'tshark is not installed (scripts/setup-system.sh installs it)' : null);

/** The fields both sides have (the proto entries only say a layer is there). */
const FIELDS = iserFieldNames().filter((n) => n !== 'iser' && n !== 'iscsi');

it('every iSER and iSCSI field of every frame equals tshark 4.0', () => {
  const args = ['-n', '-r', FILE, '-T', 'fields', '-E', 'occurrence=a', '-E', 'aggregator=,', '-e', 'frame.number', ...FIELDS.flatMap((f) => ['-e', f])];
  const theirs = execFileSync(TSHARK ?? 'tshark', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    .trimEnd()
    .split('\n')
    .map((l) => l.split('\t'));
  const records = readCapture(new Uint8Array(fs.readFileSync(FILE))).records;
  const dec = ISER.decoder({ ports: ISER.defaultPorts, qpns: [] });
  const ours: (IserFrame | null)[] = records.map((r) => {
    const view = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
    const d = decodeAt(view, r.data, 0, r.data.byteLength, r.linkType, {}, r.origLen);
    return d.roce ? dec.observe(d, view, 0) : null;
  });
  expect(theirs).toHaveLength(ours.length);
  const diffs: string[] = [];
  let compared = 0;
  let multiPacket = 0;
  ours.forEach((f, i) => {
    // A message in SEND FIRST..LAST: its FIRST (a fragment here) and its LAST (the whole message here).
    if (f !== null && (f.kind === 'fragment' || f.packets > 1)) {
      multiPacket++;
      return;
    }
    const ff = { number: i + 1, ulp: f === null ? null : { protocol: 'iser', frame: f } } as unknown as FieldFrame;
    FIELDS.forEach((name, k) => {
      const def = ISER.text.field(name);
      if (def === undefined) throw new Error(`no field ${name}`);
      const b = def
        .values(ff)
        .map((v) => def.text(v))
        .join(',');
      const a = theirs[i]?.[k + 1] ?? '';
      if (a !== '' || b !== '') compared++;
      if (a !== b) diffs.push(`frame ${i + 1} ${name}: tshark ${JSON.stringify(a)}, roce ${JSON.stringify(b)}`);
    });
  });
  expect(diffs).toEqual([]);
  expect(multiPacket).toBe(2);
  expect(compared).toBeGreaterThan(500);
});
