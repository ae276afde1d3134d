/**
 * `roce decode --decode-as RULE`: which frames belong to an upper-layer protocol (ulp/protocols.ts)
 * besides those of RDMA CM connections to its default IP CM ports. `qpn=Q=NAME` takes every frame to
 * QPN Q as protocol NAME's (Q in decimal or 0x hex); `port=N=NAME` adds IP CM port N (TCP port
 * space) to the ports whose CM connections are NAME's, as Wireshark's per-protocol port
 * preferences do (nvme-rdma's "subsystem_ports", for one).
 */
import { type OptionSpec, UsageError, intValue } from './args';
import type { UlpName, UlpRules } from '../ulp/ulp-decoder';
import { ULP_PROTOCOLS, type UlpRuleSet, defaultRuleSet, ulpProtocolNamed } from '../ulp/protocols';

const KNOWN = ULP_PROTOCOLS.map((p) => p.name).join('|');

/** --decode-as, as `roce decode`, `roce analyze` and `roce ladder` take it. */
export const DECODE_AS_SPEC: OptionSpec = {
  name: 'decode-as',
  kind: 'repeat',
  value: 'RULE',
  help: `qpn=Q=NAME: frames to QPN Q are protocol NAME's (no CM exchange needed); port=N=NAME: RDMA CM connections to IP CM port N are NAME's, as its default ports' are; NAME is ${KNOWN} (repeat for more; docs/decode.md, "Upper-layer protocols")`,
};

/** The rule set of these --decode-as values; a bad one is a UsageError that says what is expected. */
export function decodeAsRules(values: readonly string[], protocols = ULP_PROTOCOLS): UlpRuleSet {
  const names = protocols.map((p) => p.name).join(', ');
  const defaults = defaultRuleSet(protocols);
  const ports = new Map<UlpName, Set<number>>();
  const qpns = new Map<UlpName, Set<number>>();
  for (const p of protocols) {
    ports.set(p.name, new Set(defaults[p.name].ports));
    qpns.set(p.name, new Set());
  }
  for (const v of values) {
    const m = /^(qpn|port)=([^=]+)=([a-z0-9-]+)$/i.exec(v);
    if (m === null) throw new UsageError(`--decode-as ${v}: give qpn=Q=NAME or port=N=NAME, NAME one of ${names}`);
    const [, kind, num, proto] = m as unknown as [string, string, string, string];
    const p = ulpProtocolNamed(proto, protocols);
    if (p === undefined) throw new UsageError(`--decode-as ${v}: unknown protocol ${JSON.stringify(proto)}; known: ${names}`);
    if (kind.toLowerCase() === 'qpn') qpns.get(p.name)?.add(intValue(num, 'decode-as qpn', 0, 0xffffff));
    else ports.get(p.name)?.add(intValue(num, 'decode-as port', 0, 0xffff));
  }
  const set: Record<UlpName, UlpRules> = { ...defaults };
  for (const p of protocols) set[p.name] = { ports: [...(ports.get(p.name) ?? [])], qpns: [...(qpns.get(p.name) ?? [])] };
  return set;
}
