// Decode a capture and keep the frames you care about: here the RDMA WRITE packets and any frame
// whose ICRC does not check, printed as `roce decode` prints them.
//   node decode-filter.mjs [capture.pcap]      (default: the sample capture shipped with roce-ts)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { decodeFrame, describeCaptureError, opcodeName, readCapture, summaryLine } from 'roce-ts/packets';

const file = process.argv[2] ?? createRequire(import.meta.url).resolve('roce-ts/captures/rc-conversation.pcap');
const capture = readCapture(readFileSync(file));
if (capture.error !== null) {
  console.error(describeCaptureError(capture));
  process.exit(1);
}

let writes = 0;
let badIcrc = 0;
for (const record of capture.records) {
  const p = decodeFrame(record.data, record.linkType);
  if (!p.roce || p.bth === null) continue;
  const isWrite = opcodeName(p.bth.opcode).includes('RDMA_WRITE');
  if (p.icrcOk === false) badIcrc++;
  if (!isWrite && p.icrcOk !== false) continue;
  if (isWrite) writes++;
  console.log(summaryLine(record.index, { sec: record.sec, nsec: record.nsec, digits: record.timeDigits }, p));
}
console.log(`${capture.records.length} frames, ${writes} RDMA WRITE packets, ${badIcrc} bad ICRCs`);
if (writes === 0) process.exit(1);
