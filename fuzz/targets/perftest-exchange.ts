/**
 * Fuzz target: perftest's out-of-band messages as they arrive from a peer: the version text, the
 * system data, the MTU, the key message in each of its four formats, and the bandwidth report
 * fields, followed by the check a server runs on a client's report. The first byte picks the
 * message; the rest is the message. Anything wrong is an `OobError` naming the field.
 */
import {
  bwReportLayout,
  checkBwReport,
  checkPeerVersion,
  decodeBwReportField,
  decodeInt32BE,
  decodeKeyMessage,
  decodeMtu,
  decodeVersion,
  emptyBwReport,
} from '../../apps/oob/perftest-messages';
import { typedErrorsOnly } from '../typed-errors';

const KEY_FORMATS = [
  { gid: true, dataValidation: false },
  { gid: false, dataValidation: false },
  { gid: true, dataValidation: true },
  { gid: false, dataValidation: true },
] as const;

export function fuzz(data: Uint8Array): void {
  if (data.length === 0) return;
  const pick = data[0] as number;
  const msg = data.subarray(1);
  switch (pick % 5) {
    case 0:
      typedErrorsOnly(() => checkPeerVersion(decodeVersion(msg)));
      break;
    case 1:
      typedErrorsOnly(() => void decodeInt32BE(msg, 'cycle_buffer'));
      break;
    case 2:
      typedErrorsOnly(() => void decodeMtu(msg));
      break;
    case 3:
      typedErrorsOnly(() => void decodeKeyMessage(msg, KEY_FORMATS[(pick >> 3) % KEY_FORMATS.length] as (typeof KEY_FORMATS)[number]));
      break;
    default: {
      // A whole report, field after field as xchg_bw_reports reads them, for a peer of 5.33 or later.
      const r = emptyBwReport();
      typedErrorsOnly(() => {
        let at = 0;
        for (const f of bwReportLayout(pick & 8 ? 5.33 : 5.0)) {
          decodeBwReportField(r, f.field, msg.subarray(at, at + f.size));
          at += f.size;
        }
        checkBwReport(r, pick & 16 ? { size: 65536 } : { size: 65536, iters: 1000 });
      });
    }
  }
}
