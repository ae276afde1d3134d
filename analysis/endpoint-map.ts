/**
 * Values by endpoint (IP address text, QPN): what the conversation table finds a frame's
 * conversation by, on every frame. Two levels, by address and then by QPN, so a lookup builds no
 * key string: a `${ip}#${qpn}` key per frame cost a concatenation and the hashing of a fresh
 * string each time.
 */
export class EndpointMap<V> {
  private readonly byIp = new Map<string, Map<number, V>>();

  get(ip: string, qpn: number): V | undefined {
    return this.byIp.get(ip)?.get(qpn);
  }

  set(ip: string, qpn: number, v: V): void {
    let m = this.byIp.get(ip);
    if (m === undefined) this.byIp.set(ip, (m = new Map()));
    m.set(qpn, v);
  }

  /** Removes the entry of (ip, qpn) when it is `v`. */
  deleteIf(ip: string, qpn: number, v: V): void {
    const m = this.byIp.get(ip);
    if (m === undefined || m.get(qpn) !== v) return;
    m.delete(qpn);
    if (m.size === 0) this.byIp.delete(ip);
  }
}
