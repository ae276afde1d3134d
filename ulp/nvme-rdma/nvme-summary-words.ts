/**
 * An NVMe-oF frame's summary words written straight into the output (`UlpText.writeWords`):
 * exactly `nvmeWords(f)`'s text. A data transfer's words (`NVMe data cid 4 (Read) 1024 B`, most of
 * a storage capture's frames) are written piece by piece: built as a string and then copied, they
 * cost about a tenth of the frame's decoding and printing. Other frames take `nvmeWords`.
 */
import type { TextBytes } from '../../base/text-bytes';
import { utf8 } from '../../base/text-bytes';
import type { NvmeFrame } from './nvme-decoder';
import { commandName, nvmeWords } from './nvme-text';

const DATA = utf8('NVMe data');
const CID = utf8(' cid ');
const BYTES = utf8(' B');
const SPACE = 0x20;
const OPEN = 0x28;
const CLOSE = 0x29;

export function writeNvmeWords(t: TextBytes, f: NvmeFrame): void {
  if (f.kind !== 'data' || f.error !== null) {
    t.text(nvmeWords(f));
    return;
  }
  t.bytes(DATA);
  const of = f.of;
  if (of !== null) {
    t.bytes(CID);
    t.uint(of.commandId);
    t.byte(SPACE);
    t.byte(OPEN);
    t.text(commandName(of.opcode, of.fctype, f.qid));
    t.byte(CLOSE);
  }
  if (f.length > 0) {
    t.byte(SPACE);
    t.uint(f.length);
    t.bytes(BYTES);
  }
}
