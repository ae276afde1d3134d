/**
 * iSER as the capture engine registers it: its decoder, its text, and its CM port (3260).
 */
import type { UlpProtocol } from '../ulp-decoder';
import { UlpName } from '../ulp-decoder';
import { ISER_PORT, IserDecoder, type IserFrame } from './iser-decoder';
import { type IserState, emptyIserState, isEmptyIserState } from './iser-state';
import { iserJsonMember, iserTreeLines, iserWords } from './iser-text';
import { iserField } from './iser-fields';

export const ISER: UlpProtocol<IserFrame, IserState> = {
  name: UlpName.Iser,
  title: 'iSER',
  defaultPorts: [ISER_PORT],
  emptyState: emptyIserState,
  isEmpty: isEmptyIserState,
  decoder: (rules, state) => new IserDecoder(rules, state ?? emptyIserState()),
  text: { words: iserWords, treeLines: iserTreeLines, jsonMember: iserJsonMember, field: iserField },
};
