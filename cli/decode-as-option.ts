/**
 * `roce decode --decode-as RULE`: which frames are NVMe-oF besides those of RDMA CM connections to
 * port 4420 (ulp/nvme-rdma/nvme-decoder.ts). `qpn=Q=nvme` takes every frame to QPN Q as NVMe-oF
 * (Q in decimal or 0x hex); `port=N=nvme` adds IP CM port N (TCP port space) to the ports whose CM
 * connections are NVMe-oF, as Wireshark's nvme-rdma "subsystem_ports" preference does.
 */
import { type OptionSpec, UsageError, intValue } from './args';
import { DEFAULT_NVME_RULES, type NvmeRules } from '../ulp/nvme-rdma/nvme-decoder';

/** --decode-as, as `roce decode` and `roce analyze` take it. */
export const DECODE_AS_SPEC: OptionSpec = {
  name: 'decode-as',
  kind: 'repeat',
  value: 'RULE',
  help: 'qpn=Q=nvme: frames to QPN Q are NVMe-oF (no CM exchange needed); port=N=nvme: RDMA CM connections to IP CM port N are NVMe-oF, as 4420 is (repeat for more; docs/decode.md, "NVMe over Fabrics")',
};

/** The rules of these --decode-as values; a bad one is a UsageError that says what is expected. */
export function decodeAsRules(values: readonly string[]): NvmeRules {
  const ports = new Set(DEFAULT_NVME_RULES.ports);
  const qpns = new Set<number>();
  for (const v of values) {
    const m = /^(qpn|port)=([^=]+)=([a-z-]+)$/i.exec(v);
    if (m === null) throw new UsageError(`--decode-as ${v}: give qpn=Q=nvme or port=N=nvme`);
    const [, kind, num, proto] = m as unknown as [string, string, string, string];
    if (proto.toLowerCase() !== 'nvme') throw new UsageError(`--decode-as ${v}: the only protocol is nvme (NVMe over Fabrics over RDMA)`);
    if (kind.toLowerCase() === 'qpn') qpns.add(intValue(num, 'decode-as qpn', 0, 0xffffff));
    else ports.add(intValue(num, 'decode-as port', 0, 0xffff));
  }
  return { ports: [...ports], qpns: [...qpns] };
}
