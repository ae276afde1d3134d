/**
 * Fuzz target: rc_pingpong's out-of-band messages as they arrive from a peer: the 52-byte
 * address message and the closing "done". Anything wrong is an `OobError` naming the field.
 */
import { checkDone, decodePingpongDest } from '../../apps/oob/pingpong-messages';
import { typedErrorsOnly } from '../typed-errors';

export function fuzz(data: Uint8Array): void {
  typedErrorsOnly(() => void decodePingpongDest(data));
  typedErrorsOnly(() => checkDone(data));
}
