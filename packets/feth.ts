/**
 * FLUSH Extended Transport Header (IBTA vol. 1 annex A19.4.1), 32 bits:
 * selectivity level in bits 5:4, placement type in bits 3:0 (the layout rxe uses).
 */
import { need } from './errors';
import { checkUint } from './bytes';

export const FETH_LEN = 4;

export interface FethHeader {
  /** Selectivity level (2 bits): 0 = within the memory region given by the RETH, 1 = whole memory region. */
  selectivity: number;
  /** Placement type (4 bits): bit 0 global visibility, bit 1 persistence. */
  placementType: number;
}

export function parseFeth(view: DataView, off: number, end: number = view.byteLength): FethHeader {
  need(end, off, FETH_LEN, 'FETH');
  const bits = view.getUint32(off);
  return { selectivity: (bits >>> 4) & 3, placementType: bits & 0xf };
}

export function emitFeth(h: FethHeader, view: DataView, off: number): number {
  checkUint(h.selectivity, 3, 'selectivity');
  checkUint(h.placementType, 0xf, 'placementType');
  view.setUint32(off, (h.selectivity << 4) | h.placementType);
  return FETH_LEN;
}
