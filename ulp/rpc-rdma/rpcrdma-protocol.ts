/**
 * RPC-over-RDMA version 1 (RFC 8166) as the capture engine registers it: its decoder, its text and
 * its default IP CM port (20049, NFS over RDMA).
 */
import type { UlpProtocol } from '../ulp-decoder';
import { UlpName } from '../ulp-decoder';
import { RPC_RDMA_PORT, RpcRdmaDecoder, type RpcRdmaFrame } from './rpcrdma-decoder';
import { type RpcRdmaState, emptyRpcRdmaState, isEmptyRpcRdmaState } from './conversation-state';
import { rpcRdmaJsonMember, rpcRdmaTreeLines, rpcRdmaWords } from './rpcrdma-text';
import { rpcRdmaField } from './rpcrdma-fields';

export const RPC_RDMA: UlpProtocol<RpcRdmaFrame, RpcRdmaState> = {
  name: UlpName.RpcRdma,
  title: 'RPC-over-RDMA',
  defaultPorts: [RPC_RDMA_PORT],
  emptyState: emptyRpcRdmaState,
  isEmpty: isEmptyRpcRdmaState,
  decoder: (rules, state) => new RpcRdmaDecoder(rules, state),
  text: { words: rpcRdmaWords, treeLines: rpcRdmaTreeLines, jsonMember: rpcRdmaJsonMember, field: rpcRdmaField },
};
