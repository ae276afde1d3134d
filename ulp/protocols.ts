/**
 * The upper-layer protocols the capture engine runs over every capture, in this order: each frame
 * goes to every protocol's decoder (ulp-decoder.ts), and where two make something of the same frame
 * the one listed first is shown. A protocol is added to the engine by adding it here.
 */
import { UlpName, type UlpProtocol, type UlpRules } from './ulp-decoder';
import { NVME } from './nvme-rdma/nvme-protocol';
import { ISER } from './iser/iser-protocol';
import { RPC_RDMA } from './rpc-rdma/rpcrdma-protocol';
import { SMBD } from './smbd/smbd-protocol';

/** NVMe-oF and iSER own conversations through the CM (or --decode-as); RPC-over-RDMA and SMB Direct may also claim one from a SEND's shape, so they come last. */
export const ULP_PROTOCOLS: readonly UlpProtocol<unknown, unknown>[] = Object.freeze([NVME, ISER, RPC_RDMA, SMBD] as UlpProtocol<unknown, unknown>[]);

/** Each protocol's rules (its IP CM ports and its QPNs), by name: plain data, as it crosses to a worker thread. */
export type UlpRuleSet = Readonly<Record<UlpName, UlpRules>>;

/** What a frame of a protocol's conversation carries, with the protocol's name (`FieldFrame.ulp`, read by the protocol's fields). */
export interface UlpFrameOf {
  readonly protocol: UlpName;
  readonly frame: unknown;
}

const NO_RULES: UlpRules = Object.freeze({ ports: Object.freeze([]), qpns: Object.freeze([]) });

/**
 * The rules before any `--decode-as`: each registered protocol's default IP CM ports, and no QPN; a
 * name not registered has none (its frames are never decoded).
 */
export function defaultRuleSet(protocols: readonly UlpProtocol<unknown, unknown>[] = ULP_PROTOCOLS): UlpRuleSet {
  const set = {} as Record<UlpName, UlpRules>;
  for (const name of Object.values(UlpName)) set[name] = NO_RULES;
  for (const p of protocols) set[p.name] = Object.freeze({ ports: Object.freeze([...p.defaultPorts]), qpns: Object.freeze([]) });
  return Object.freeze(set);
}

/** The registered protocol called `name` (as `--decode-as` spells it, any case), or undefined. */
export function ulpProtocolNamed(name: string, protocols: readonly UlpProtocol<unknown, unknown>[] = ULP_PROTOCOLS): UlpProtocol<unknown, unknown> | undefined {
  const n = name.toLowerCase();
  return protocols.find((p) => p.name === n);
}
