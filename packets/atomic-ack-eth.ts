/** Atomic Acknowledge Extended Transport Header (IBTA vol. 1 §9.3.6): the original remote data, 64 bits. */
import { need } from './errors';
import { checkU64 } from './bytes';

export const ATOMIC_ACK_ETH_LEN = 8;
export const OFF = Object.freeze({ ORIG_DATA: 0 });

export interface AtomicAckEthHeader {
  origData: bigint;
}

export function parseAtomicAckEth(view: DataView, off: number, end: number = view.byteLength): AtomicAckEthHeader {
  need(end, off, ATOMIC_ACK_ETH_LEN, 'AtomicAckETH');
  return { origData: view.getBigUint64(off + OFF.ORIG_DATA) };
}

export function emitAtomicAckEth(h: AtomicAckEthHeader, view: DataView, off: number): number {
  checkU64(h.origData, 'origData');
  view.setBigUint64(off + OFF.ORIG_DATA, h.origData);
  return ATOMIC_ACK_ETH_LEN;
}
