/**
 * Fuzz target: a whole capture file (classic pcap in any byte order and resolution, pcapng with
 * its blocks and options) through the in-memory reader and the streaming record iterator. Both
 * report damage as a `WireError` in their result and never throw; they must also agree.
 */
import { iterateCapture, readCapture } from '../../packets/pcap';
import { FuzzFinding } from '../fuzz-finding';

export function fuzz(data: Uint8Array): void {
  const whole = readCapture(data);
  const it = iterateCapture(data);
  let n = 0;
  for (;;) {
    const r = it.next();
    if (r.done === true) {
      if ((r.value?.message ?? null) !== (whole.error?.message ?? null))
        throw new FuzzFinding(`the iterator ended with ${String(r.value?.message)}, readCapture with ${String(whole.error?.message)}`);
      break;
    }
    const rec = whole.records[n++];
    if (rec === undefined || rec.index !== r.value.index || rec.data.length !== r.value.data.length || rec.timestampNs !== r.value.timestampNs)
      throw new FuzzFinding(`record ${n} differs between readCapture and iterateCapture`);
  }
  if (n !== whole.records.length) throw new FuzzFinding(`readCapture has ${whole.records.length} records, the iterator ${n}`);
}
