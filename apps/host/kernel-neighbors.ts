/**
 * The neighbour table of a host device: a Map of IP address text to MAC that, on a miss, asks the
 * kernel's neighbour table for the address in the background (nic-driver/interface-info.ts
 * resolveNeighbor: `ip neigh`, making the kernel resolve it when needed), as rxe takes its
 * destination MACs from the kernel. The miss itself still answers "unknown"; the entry is there
 * for the next try. That is what a CM needs when it answers a peer it has never addressed: a REJ
 * or REP to a new client fails once, and the REQ the client resends (after its CM response
 * timeout) is answered, the client's ARP having filled the kernel's table meanwhile.
 */
import { isIP } from 'node:net';
import { nextHop, resolveNeighbor } from '../../nic-driver/interface-info';

export class KernelNeighborTable extends Map<string, number> {
  private readonly inflight = new Set<string>();
  private closed = false;

  constructor(
    private readonly ifname: string,
    // The next hop's MAC: the gateway's for a peer the route table reaches through one (routed RoCE v2).
    private readonly resolve: (ifname: string, ip: string) => Promise<number> = async (i, ip) => resolveNeighbor(i, await nextHop(i, ip), 3000),
  ) {
    super();
  }

  override get(ip: string): number | undefined {
    const mac = super.get(ip);
    if (mac === undefined) this.lookUp(ip);
    return mac;
  }

  /** Stops background lookups (the device is closing). */
  close(): void {
    this.closed = true;
  }

  private lookUp(ip: string): void {
    if (this.closed || this.inflight.has(ip) || isIP(ip) === 0) return;
    this.inflight.add(ip);
    this.resolve(this.ifname, ip).then(
      (mac) => {
        this.inflight.delete(ip);
        if (!this.closed && !super.has(ip)) super.set(ip, mac);
      },
      () => this.inflight.delete(ip),
    );
  }
}
