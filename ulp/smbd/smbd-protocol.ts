/**
 * SMB Direct as the capture engine registers it (ulp/ulp-decoder.ts): its decoder, its text, and
 * its IP CM port (445: SMB Direct over InfiniBand and RoCE uses the SMB port; 5445 is iWARP's).
 */
import type { UlpProtocol } from '../ulp-decoder';
import { UlpName } from '../ulp-decoder';
import { type SmbdState, emptySmbdState, isEmptySmbdState } from './conversation-state';
import { SMBD_PORT, SmbdDecoder, type SmbdFrame } from './smbd-decoder';
import { smbdJsonMember, smbdTreeLines, smbdWords } from './smbd-text';
import { smbdField } from './smbd-fields';

export const SMBD: UlpProtocol<SmbdFrame, SmbdState> = {
  name: UlpName.Smbd,
  title: 'SMB Direct',
  defaultPorts: [SMBD_PORT],
  emptyState: emptySmbdState,
  isEmpty: isEmptySmbdState,
  decoder: (rules, state) => new SmbdDecoder(rules, state),
  text: { words: smbdWords, treeLines: smbdTreeLines, jsonMember: smbdJsonMember, field: smbdField },
};
