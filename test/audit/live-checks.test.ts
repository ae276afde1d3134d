/**
 * `roce audit --live-checks` against this stack on the in-memory link: after the guessability
 * runs, one more perftest connection on which the peer gets a WRITE injected from another source
 * address and a WRITE with a wrong R_Key. The outcomes are what the peer does, measured from the
 * auditing QP; the link's capture must agree with them (the injected frame on the wire, and the
 * peer's ACK or NAK for what came after it). This stack's responder drops a request to a connected
 * QP from any address but its peer's (stack/port.ts, as rxe_recv.c check_addr()), so it rejects the
 * injection and the connection goes on to the wrong-R_Key check. A peer that checks no address is
 * stood in for by a driver in front of this stack that gives the injected frame the peer's source
 * address (its ICRC resealed): the audit then measures the injection as accepted. The CLI carries
 * both results in its JSON and text reports, and runs the checks only when asked.
 */
import { createSimPair, SIM_IP_A, SIM_IP_B, SIM_MAC_A, SIM_MAC_B } from '../../apps/sim/sim-pair';
import { pumpVirtualClock } from '../../apps/host/clock-pump';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { createMemoryLink } from '../../nic-driver/memory-link';
import { PassThroughDriver } from '../../nic-driver/pass-through-driver';
import type { NicDriver } from '../../nic-driver/driver';
import { VirtualClock } from '../../base/clock';
import { Device } from '../../stack/device';
import { TcpChannel } from '../../apps/oob/tcp-channel';
import { runPerftest } from '../../apps/perftest/run';
import { auditPeer, type PeerAuditResult } from '../../apps/audit/peer-audit';
import { CryptoRandom } from '../../base/crypto-random';
import { readCapture } from '../../packets/pcap';
import { decodeFrame } from '../../packets/decode';
import { AethKind, NakCode, decodeSyndrome } from '../../packets/aeth';
import { Opcode } from '../../packets/opcodes';
import { ipv4ToString } from '../../packets/bytes';
import { psnAdd } from '../../base/psn';
import { ipv4Checksum } from '../../packets/ipv4';
import { sealIcrcV2 } from '../../packets/icrc';
import { freePort } from '../oob/support';
import { roceWith } from '../support/cli';

const RUNS = 6;

/**
 * A peer blind to addresses: the receive path gives a RoCE frame from `spoofed` the source address
 * `peer` (IP checksum and ICRC made good again), so the device cannot tell the injected frame from
 * its peer's, as a responder that checks no address would not.
 */
class BlindToSource extends PassThroughDriver {
  rewritten = 0;
  constructor(
    inner: NicDriver,
    private readonly spoofed: string,
    private readonly peer: Uint8Array,
  ) {
    super(inner);
  }
  override rxBurst(max: number): Uint8Array[] {
    return this.inner.rxBurst(max).map((f) => {
      const d = decodeFrame(f, undefined, { verifyIcrc: false });
      if (!d.roce || d.ipv4 === null || ipv4ToString(d.ipv4.src) !== this.spoofed) return f;
      const out = f.slice();
      const view = new DataView(out.buffer);
      out.set(this.peer, d.l3Off + 12);
      view.setUint16(d.l3Off + 10, 0);
      view.setUint16(d.l3Off + 10, ipv4Checksum(view, d.l3Off, 20));
      sealIcrcV2(out, d.l3Off, d.icrcOff);
      this.rewritten++;
      return out;
    });
  }
}

interface Setup {
  a: Device;
  b: Device;
  clock: VirtualClock;
  tap: PcapTap;
  blind: BlindToSource | null;
}

function pair(blind: boolean): Setup {
  const tap = new PcapTap();
  if (!blind) {
    const sim = createSimPair({ seed: 5, tap, random: new CryptoRandom() });
    return { a: sim.a, b: sim.b, clock: sim.clock, tap, blind: null };
  }
  const clock = new VirtualClock();
  const link = createMemoryLink({ clock, mtu: 4200, macA: SIM_MAC_A, macB: SIM_MAC_B, faults: { aToB: { delayNs: 2000 }, bToA: { delayNs: 2000 } }, tap });
  const peerIp = Uint8Array.from(SIM_IP_A.split('.').map(Number));
  const check = new BlindToSource(link.b, '198.18.0.3', peerIp);
  const random = new CryptoRandom();
  const a = new Device({ driver: link.a, clock, ipv4: [SIM_IP_A], neighbors: { [SIM_IP_B]: SIM_MAC_B }, name: 'sim-a', random });
  const b = new Device({ driver: check, clock, ipv4: [SIM_IP_B], neighbors: { [SIM_IP_A]: SIM_MAC_A }, name: 'sim-b', random });
  return { a, b, clock, tap, blind: check };
}

/** The audit with the live checks against a perftest server on `b` run again after each run (the live-check run included). */
async function audit(s: Setup): Promise<PeerAuditResult> {
  const pump = pumpVirtualClock(s.clock);
  const l = await TcpChannel.listen(0, '127.0.0.1');
  try {
    const served: string[] = [];
    const serve = (async () => {
      for (let i = 0; i <= RUNS; i++)
        served.push(
          await runPerftest(s.b, { verb: 'write', lat: false, role: 'server', listener: l, iters: 5, size: 64, connectTimeoutMs: 10_000 }).then(
            () => 'ok',
            (e: Error) => e.message,
          ),
        );
    })();
    const r = await auditPeer(s.a, { server: '127.0.0.1', port: l.port, runs: RUNS, restartWaitMs: 5000, liveChecks: true });
    await serve;
    // The guessability runs were ordinary; the live-check run's server saw its QP go to the error state.
    expect(served.slice(0, RUNS)).toEqual(Array(RUNS).fill('ok'));
    expect(served[RUNS]).toMatch(/error state/);
    return r;
  } finally {
    l.close();
    pump.stop();
  }
}

/** Frames on the link: source, opcode, destination QP, PSN, NAK code. */
function wire(tap: PcapTap): { src: string; opcode: number; destQp: number; psn: number; nak: number | null }[] {
  return readCapture(tap.bytes()).records.flatMap((rec) => {
    const f = decodeFrame(rec.data, rec.linkType);
    if (!f.roce || f.bth === null || f.ipv4 === null) return [];
    const syn = f.aeth !== null ? decodeSyndrome(f.aeth.syndrome) : null;
    return [{ src: ipv4ToString(f.ipv4.src), opcode: f.bth.opcode, destQp: f.bth.destQp, psn: f.bth.psn, nak: syn?.kind === AethKind.NAK ? syn.value : null }];
  });
}

test('this stack drops a WRITE injected from another source address (check_addr()); the connection goes on, and a wrong R_Key moves its QP to the error state; the wire agrees', async () => {
  const s = pair(false);
  const r = await audit(s);
  expect(r.ok).toBe(true);
  const live = r.live;
  const c = live?.connection;
  if (live === null || live === undefined || c === null || c === undefined) throw new Error('no live-check result');
  expect(live.stopped).toBeNull();
  expect(live.injection).toMatchObject({ outcome: 'rejected', psn: c.psn, spoofedIp: '198.18.0.3' });
  expect(live.wrongRkey).toMatchObject({ outcome: 'qp-error', answer: 'REM_ACCESS_ERR', peerQp: 'error', psn: psnAdd(c.psn, 2) });
  expect(s.b.counters.rcvd_wrong_address).toBe(1);
  const frames = wire(s.tap);
  expect(frames.filter((f) => f.src === '198.18.0.3')).toEqual([
    { src: '198.18.0.3', opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: c.qpn, psn: c.psn, nak: null },
  ]);
  // On the wire: the peer's sequence NAK names the injected PSN as still expected, once; then the remote access NAK.
  const naks = frames.filter((f) => f.src === SIM_IP_B && f.destQp === c.localQpn && f.nak !== null);
  expect(naks.map((f) => [f.nak, f.psn])).toEqual([
    [NakCode.PSN_SEQUENCE_ERROR, c.psn],
    [NakCode.REMOTE_ACCESS_ERROR, psnAdd(c.psn, 2)],
  ]);
}, 60_000);

test("a peer that cannot tell the injected frame from its peer's takes it: measured as accepted, and the wrong R_Key still moves its QP to the error state", async () => {
  const s = pair(true);
  const r = await audit(s);
  expect(r.ok).toBe(true);
  const live = r.live;
  const c = live?.connection;
  if (live === null || live === undefined || c === null || c === undefined) throw new Error('no live-check result');
  expect(live.injection).toMatchObject({ outcome: 'accepted', psn: c.psn });
  expect(s.blind?.rewritten).toBe(1);
  expect(s.b.counters.rcvd_wrong_address).toBe(0);
  expect(live.wrongRkey).toMatchObject({ outcome: 'qp-error', answer: 'REM_ACCESS_ERR', peerQp: 'error' });
  // The peer's answers: an ACK for the auditor's PSN P+1 (so it had taken P), no sequence NAK, then the remote access NAK.
  const answers = wire(s.tap).filter((f) => f.src === SIM_IP_B && f.destQp === c.localQpn);
  expect(answers.some((f) => f.nak === null && f.psn === psnAdd(c.psn, 1))).toBe(true);
  expect(answers.filter((f) => f.nak !== null).map((f) => [f.nak, f.psn])).toEqual([[NakCode.REMOTE_ACCESS_ERROR, psnAdd(c.psn, 2)]]);
}, 60_000);

describe('roce audit --live-checks on the memory test mode', () => {
  async function cli(extra: string[]): Promise<{ code: number; out: string; err: string }> {
    const roce = roceWith(process.env);
    const port = String(await freePort());
    const serves = RUNS + (extra.includes('--live-checks') ? 1 : 0);
    const serve = (async () => {
      for (let i = 0; i < serves; i++) await roce('perftest', 'write', '--dev', 'sim-b', '--driver', 'memory', '-p', port, '-s', '64', '-n', '5', '--json');
    })();
    const r = await roce('audit', '127.0.0.1', '--dev', 'sim-a', '--driver', 'memory', '-p', port, '--runs', String(RUNS), ...extra);
    await serve;
    return r;
  }

  test('JSON: both results with --live-checks, none without', async () => {
    const on = await cli(['--live-checks', '--json']);
    expect(on.code).toBe(0);
    const j = JSON.parse(on.out);
    expect(j).toMatchObject({ ok: true, live: { stopped: null, injection: { outcome: 'rejected' }, wrongRkey: { outcome: 'qp-error', peerQp: 'error' } } });
    const off = await cli(['--json']);
    expect(off.code).toBe(0);
    expect(JSON.parse(off.out).live).toBeNull();
  }, 60_000);

  test('text: the table, then each check with what was measured and what IBTA and ReDMArk say', async () => {
    const r = await cli(['--live-checks']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/overall: unpredictable/);
    expect(r.out).toMatch(/injection \(ReDMArk A1\) from 198\.18\.0\.3 \(02:00:00:00:00:03\) at PSN \d+: rejected/);
    expect(r.out).toMatch(/wrong R_Key \(ReDMArk A2\) 0x[0-9a-f]{8} at PSN \d+: qp-error \(the peer's QP: error\)/);
    expect(r.out).toMatch(/expected: .*C9-88/);
  }, 60_000);

  test('usage error: --live-checks with -R', async () => {
    const r = await roceWith(process.env)('audit', '127.0.0.1', '--dev', 'sim-a', '--driver', 'memory', '-R', '--live-checks');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--live-checks with -R/);
  });
});
