/**
 * The QPNs of a decoder's QP ends (its `state.ends`, keyed `address/QPN`), as numbers: a frame to
 * any other QPN is no QP end of the decoder's, which it can tell before spelling out the frame's
 * keys (ulp/frame-keys.ts). RPC-over-RDMA and SMB Direct see every frame, and most frames of a
 * capture that is neither are to such QPNs. The set may hold QPNs of ends since forgotten (a
 * frame to one then takes the longer way); it is built again from the ends when it grows past
 * twice their bound.
 */
export class OwnedQpns {
  private readonly qpns = new Set<number>();

  constructor(
    private readonly ends: ReadonlyMap<string, unknown>,
    private readonly limit: number,
  ) {
    this.rebuild();
  }

  has(qpn: number): boolean {
    return this.qpns.has(qpn);
  }

  /** Call after an end to `qpn` was put in the ends. */
  add(qpn: number): void {
    this.qpns.add(qpn);
    if (this.qpns.size > 2 * this.limit) this.rebuild();
  }

  private rebuild(): void {
    this.qpns.clear();
    for (const k of this.ends.keys()) this.qpns.add(Number(k.slice(k.lastIndexOf('/') + 1)));
  }
}
