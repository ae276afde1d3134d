/**
 * `roce decode --decode-as RULE`: which frames are NVMe-oF besides those of RDMA CM connections to
 * port 4420 (ulp/nvme-rdma/nvme-decoder.ts). `qpn=Q=nvme` takes every frame to QPN Q as NVMe-oF
 * (Q in decimal or 0x hex); `port=N=nvme` adds IP CM port N (TCP port space) to the ports whose CM
 * connections are NVMe-oF, as Wireshark's nvme-rdma "subsystem_ports" preference does.
 */
import { UsageError, intValue } from './args';
import { DEFAULT_NVME_RULES, type NvmeRules } from '../ulp/nvme-rdma/nvme-decoder';

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
