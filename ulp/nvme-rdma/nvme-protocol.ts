/**
 * NVMe-oF over RDMA as the capture engine registers it (ulp/protocols.ts): its decoder
 * (nvme-decoder.ts), its words, `-V` lines and JSON (nvme-text.ts), and its Wireshark fields
 * (nvme-fields.ts). Its connections are the RDMA CM ones to IP CM port 4420, IANA's "nvme" port
 * (NVMe over Fabrics 1.1, RDMA transport binding).
 */
import { UlpName, type UlpProtocol } from '../ulp-decoder';
import { NVME_RDMA_PORT, NvmeDecoder, type NvmeFrame } from './nvme-decoder';
import { type NvmeConversationState, emptyState, isEmptyState } from './conversation-state';
import { nvmeJsonMember, nvmeTreeLines, nvmeWords, writeNvmeJsonMember } from './nvme-text';
import { nvmeField } from './nvme-fields';
import { writeNvmeWords } from './nvme-summary-words';
import { nvmeLadderNote } from './command-text';

export const NVME: UlpProtocol<NvmeFrame, NvmeConversationState> = Object.freeze<UlpProtocol<NvmeFrame, NvmeConversationState>>({
  name: UlpName.Nvme,
  title: 'NVMe-oF',
  defaultPorts: Object.freeze([NVME_RDMA_PORT]),
  emptyState,
  isEmpty: isEmptyState,
  decoder: (rules, state) => (state === undefined ? new NvmeDecoder(rules) : new NvmeDecoder(rules, state)),
  text: Object.freeze({
    words: nvmeWords,
    writeWords: writeNvmeWords,
    treeLines: nvmeTreeLines,
    jsonMember: nvmeJsonMember,
    writeJsonMember: writeNvmeJsonMember,
    field: nvmeField,
    note: nvmeLadderNote,
  }),
});
