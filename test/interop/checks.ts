/** Assertions shared by the interop tests. */
import { type CaptureCheck, type LabRun, type StepResult, GUEST_IP, HOST_IP, describe as describeStep, pingpongNumbers, perftestRow } from './lab';

export function hex(v: number, d: number): string {
  return v.toString(16).padStart(d, '0');
}

/** rc_pingpong's wire GID: the 16 bytes as four big-endian words, %08x each. */
export function wireGid(ipv4: string): string {
  const b = ipv4.split('.').map(Number);
  return `00000000000000000000ffff${b.map((x) => hex(x, 2)).join('')}`;
}

/** The whole capture of a boot: RoCE frames, every one decoded with a valid ICRC. */
export function expectCleanCapture(c: CaptureCheck): void {
  expect(c.firstProblems).toEqual([]);
  expect(c.roce).toBeGreaterThan(0);
  expect(c.malformed).toBe(0);
  expect(c.badIcrc).toBe(0);
}

export function stepOf(run: LabRun, id: number): StepResult {
  const s = run.steps.get(id);
  if (s === undefined) throw new Error(`step ${id} has no result`);
  return s;
}

/** Exit statuses of both ends (the message carries both outputs when it fails). */
export function expectExits(s: StepResult): void {
  const both = { guest: s.guestRc, host: s.hostRc };
  if (both.guest !== 0 || both.host !== 0) throw new Error(`step ${s.id} failed: ${describeStep(s)}`);
  expect(both).toEqual({ guest: 0, host: 0 });
}

export interface PingpongExpect {
  type: 'rc' | 'uc' | 'ud';
  size: number;
  iters: number;
  mtu: number;
  /** Who is the server: the guest (rdma-core tool) or the host (roce-ts). */
  guestRole: 'server' | 'client';
}

/**
 * A pingpong step: both exit 0, both count size x iters x 2 bytes, roce-ts checked every
 * message it received (-c), the tool found no invalid page, the exchange on the wire is
 * byte for byte what rc_pingpong sends, and RoCE frames went to both QPs.
 */
export function expectPingpong(run: LabRun, s: StepResult, e: PingpongExpect): void {
  expectExits(s);
  expect(s.guestOut).not.toMatch(/invalid data/);
  const g = pingpongNumbers(s.guestOut);
  expect(g).toEqual({ bytes: e.size * e.iters * 2, iters: e.iters });
  const j = s.hostJson;
  expect(j).not.toBeNull();
  if (j === null) return;
  expect(j).toMatchObject({ ok: true, test: `${e.type}_pingpong`, role: e.guestRole === 'server' ? 'client' : 'server', msgSize: e.size, iterations: e.iters, bytes: g?.bytes, messages: 2 * e.iters });
  if (e.type !== 'ud') expect(j['mtu']).toBe(e.mtu);
  expect(j['verify']).toEqual({ enabled: true, messagesChecked: e.iters, bytesChecked: e.iters * e.size, mismatches: 0 });
  const lat = j['latencyUs'] as Record<string, number> | null;
  expect(lat).not.toBeNull();
  for (const k of ['min', 'p50', 'p99', 'max']) expect(lat?.[k]).toBeGreaterThan(0);
  expect(j['gbps'] as number).toBeGreaterThan(0);
  // The guest's local-address line names the QPN and PSN the exchange must carry.
  const m = /local address: {2}LID 0x([0-9a-f]{4}), QPN 0x([0-9a-f]{6}), PSN 0x([0-9a-f]{6})[,:] GID (\S+)/.exec(s.guestOut);
  expect(m).not.toBeNull();
  const local = j['local'] as { qpn: number; psn: number };
  const remote = j['remote'] as { qpn: number; psn: number };
  expect(remote.qpn).toBe(parseInt(m?.[2] ?? '', 16));
  expect(remote.psn).toBe(parseInt(m?.[3] ?? '', 16));
  const guestMsg = `0000:${hex(remote.qpn, 6)}:${hex(remote.psn, 6)}:${wireGid(GUEST_IP)}\0`;
  const hostMsg = `0000:${hex(local.qpn, 6)}:${hex(local.psn, 6)}:${wireGid(HOST_IP)}\0`;
  const [clientMsg, serverMsg] = e.guestRole === 'server' ? [hostMsg, guestMsg] : [guestMsg, hostMsg];
  const conv = run.capture.tcp.find((t) => t.toServer.subarray(0, 52).toString('latin1') === clientMsg);
  expect(conv).toBeDefined();
  expect(conv?.toServer.toString('latin1')).toBe(`${clientMsg}done\0`);
  expect(conv?.toClient.toString('latin1')).toBe(serverMsg);
  expect(run.capture.toQp[`${GUEST_IP}/${remote.qpn}`] ?? 0).toBeGreaterThanOrEqual(e.iters);
  expect(run.capture.toQp[`${HOST_IP}/${local.qpn}`] ?? 0).toBeGreaterThanOrEqual(e.iters);
}

/**
 * The layout of one direction of a perftest exchange: its length, where each key message
 * (%04x:%04x:%06x:%06x:%08x:%016llx: + 16 x %02x: + %08x: + NUL) starts, and whether it ends
 * with "done\0". Binary messages (system data, reports) differ in value per run and are
 * compared by length only.
 */
export function oobShape(b: Buffer): string {
  const text = b.toString('latin1');
  const re = /[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{6}:[0-9a-f]{6}:[0-9a-f]{8}:[0-9a-f]{16}:(?:[0-9a-f]{2}:){16}[0-9a-f]{8}:\0/g;
  const keys: number[] = [];
  for (let m = re.exec(text); m !== null; m = re.exec(text)) keys.push(m.index);
  return `${b.length} bytes; key messages at ${keys.join(',')}; ${text.endsWith('done\0') ? 'done' : 'no done'}`;
}

export interface PerftestExpect {
  verb: 'write' | 'read' | 'send' | 'atomic';
  lat: boolean;
  size: number;
  iters: number;
  guestRole: 'server' | 'client';
}

/** A perftest step: both exit 0, both reports agree on size and iterations (and bytes where roce-ts measures). */
export function expectPerftest(run: LabRun, s: StepResult, e: PerftestExpect): void {
  expectExits(s);
  const tool = `ib_${e.verb}_${e.lat ? 'lat' : 'bw'}`;
  const j = s.hostJson;
  expect(j).not.toBeNull();
  if (j === null) return;
  expect(j).toMatchObject({ ok: true, test: tool, role: e.guestRole === 'server' ? 'client' : 'server', msgSize: e.size, iterations: e.iters, peerVersion: expect.any(String) });
  expect((j['problems'] as unknown[]).length).toBe(0);
  const row = perftestRow(s.guestOut);
  // Every end prints its report but the ib_read_lat server, which only answers READs.
  if (!(e.lat && e.verb === 'read' && e.guestRole === 'server')) {
    expect(row).not.toBeNull();
    expect(row?.bytes).toBe(e.size);
    expect(row?.iters).toBe(e.iters);
  }
  if (!e.lat && e.guestRole === 'server' && e.verb !== 'send') {
    // The tool's server prints the bandwidth roce-ts's client reported to it (MB = 2^20 bytes).
    const avg = /^\s*\d+\s+\d+\s+[\d.]+\s+([\d.]+)/m.exec(s.guestOut.split('\n').slice(s.guestOut.split('\n').findIndex((l) => /#bytes/.test(l)) + 1).join('\n'));
    const mbps = ((j['gbps'] as number) * 1e9) / 8 / 1048576;
    expect(avg).not.toBeNull();
    expect(Math.abs(Number(avg?.[1]) - mbps)).toBeLessThanOrEqual(Math.max(0.02, mbps * 0.02));
  }
  if (!e.lat) {
    // Bytes moved: size x iterations on both sides (roce-ts's server of WRITE/READ/atomic takes the client's report).
    expect(j['bytes']).toBe(e.size * e.iters);
    expect(j['messages']).toBe(e.iters);
  } else if (j['measured'] === 'local') {
    const lat = j['latencyUs'] as Record<string, number>;
    for (const k of ['min', 'p50', 'p99', 'max']) expect(lat[k]).toBeGreaterThan(0);
  }
  const remote = j['remote'] as { qpn: number };
  const local = j['local'] as { qpn: number };
  expect(run.capture.toQp[`${GUEST_IP}/${remote.qpn}`] ?? 0).toBeGreaterThan(0);
  expect(run.capture.toQp[`${HOST_IP}/${local.qpn}`] ?? 0).toBeGreaterThan(0);
}
