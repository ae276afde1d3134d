/**
 * Fuzz target: a MAD as the GSI QP receives it (the whole UD payload): the common header, the CM
 * message of its attribute, and the IP CM private-data header of a REQ or SIDR_REQ. Damage is a
 * `WireError`; nothing else may be thrown. One time in two the input is forced to look like a CM
 * MAD (base version 1, class 7, version 2), so the CM field tables get most of the inputs.
 */
import { decodeMad } from '../../packets/mad-payload';
import { MAD_LEN } from '../../packets/mad';
import { typedErrorsOnly } from '../typed-errors';

export function fuzz(data: Uint8Array): void {
  if (data.length === 0) return;
  let mad = data.subarray(1);
  if (((data[0] as number) & 1) === 1) {
    const whole = new Uint8Array(MAD_LEN);
    whole.set(mad.subarray(0, MAD_LEN));
    mad = whole;
    mad[0] = 1;
    mad[1] = 0x07;
    mad[2] = 2;
  }
  typedErrorsOnly(() => void decodeMad(new DataView(mad.buffer, mad.byteOffset, mad.length), 0, mad.length));
}
