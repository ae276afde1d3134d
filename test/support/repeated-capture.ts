/**
 * A bundled capture made long: its records repeated until there are at least `min`, the later
 * rounds with every 7th record cut short by the capture and every 11th with a byte of its ICRC
 * flipped. For the tests that check a command on several threads against one.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readCapture, PcapWriter } from '../../packets/pcap';

/** Writes the long capture into `dir` and returns its path. */
export function repeatedCapture(source: string, min: number, dir: string): string {
  const cap = readCapture(fs.readFileSync(source));
  expect(cap.error).toBeNull();
  const first = cap.records[0];
  if (first === undefined) throw new Error(`${source} holds no record`);
  const w = new PcapWriter({ linkType: first.linkType });
  let n = 0;
  for (let round = 0; n < min; round++) {
    for (const r of cap.records) {
      const t = r.timestampNs + BigInt(round) * 1_000_000_000n;
      n++;
      if (round > 0 && n % 7 === 0 && r.data.length > 40) w.add(r.data.subarray(0, r.data.length - 20), t, r.origLen);
      else if (round > 0 && n % 11 === 0) {
        const bad = r.data.slice();
        bad[bad.length - 1] = (bad[bad.length - 1] as number) ^ 0x5a;
        w.add(bad, t, r.origLen);
      } else w.add(r.data, t, r.origLen);
    }
  }
  const file = path.join(dir, `${path.basename(source)}.x${n}.pcap`);
  fs.writeFileSync(file, w.toBytes());
  return file;
}
