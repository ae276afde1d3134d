/**
 * Issue 15 finding 2: "ok: true after an error". The server of a one-sided bandwidth test posts
 * nothing and polls nothing, so a hostile frame that moves its QP to the error state went unnoticed
 * and the server reported `ok: true, problems: []`. Here a third party on the link sends, after the
 * client's last WRITE, one RDMA WRITE with a bad R_Key at the server QP's expected PSN (class C:
 * NAK remote access error, QP to ERR, IBTA vol. 1 §9.9.3). The client's report reaches the server
 * only after that (a TCP relay holds it), so the order is fixed, not a race. The server watches
 * its QP while it waits for the client (bounded failure): it fails at once, naming the
 * QP's error.
 */
import * as net from 'node:net';
import { OobError, TcpChannel } from '../../apps/oob/tcp-channel';
import { runPerftest } from '../../apps/perftest/run';
import { PerftestError, PerftestErrorCode } from '../../apps/perftest/perftest-error';
import { buildRoceV2Frame } from '../../packets/build';
import { Opcode } from '../../packets/opcodes';
import { SIM_IP_A, SIM_IP_B, SIM_MAC_A, SIM_MAC_B } from '../../apps/sim/sim-pair';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { AllocationOrder } from '../../stack/allocation-order';
import type { QueuePair } from '../../stack/queue-pair';
import type { Device } from '../../stack/device';
import { pumpedPair } from '../oob/support';

const ITERS = 50;

/** The device's RC QP: the pair numbers its QPs in rxe's sequential order (from 0x11). */
function rcQpOf(dev: Device): QueuePair | undefined {
  for (let n = 2; n < 0x400; n++) {
    const qp = dev.qp(n);
    if (qp !== undefined && qp.type === QpType.RC) return qp;
  }
  return undefined;
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

test("a hostile frame that moves the bandwidth server's QP to ERR after the run: the server fails at once and names it", async () => {
  const p = pumpedPair(11, AllocationOrder.SEQUENTIAL);
  const listener = await TcpChannel.listen(0, '127.0.0.1');
  // The relay: client -> relay -> server's listener. Once the server has taken every WRITE, what the
  // client sends next (its report) is held until the attack has hit the server's QP.
  const relay = net.createServer((c) => {
    const s = net.connect({ host: '127.0.0.1', port: listener.port });
    let attacked: Promise<void> | null = null;
    const held: Buffer[] = [];
    s.on('data', (d) => c.write(d));
    c.on('data', (d: Buffer) => {
      const qp = rcQpOf(p.sim.b);
      if (attacked === null && qp !== undefined && qp.counters.rcvd_pkts >= ITERS) {
        attacked = (async () => {
          p.sim.link.a.txBurst([
            buildRoceV2Frame({
              eth: { src: SIM_MAC_A, dst: SIM_MAC_B },
              ip: { version: 4, src: SIM_IP_A, dst: SIM_IP_B },
              bth: { opcode: Opcode.RC_RDMA_WRITE_ONLY, destQp: qp.qpNum, psn: qp.resp.psn, ackReq: true },
              reth: { va: 0x1000n, rkey: 0xdead00, dmaLength: 8 },
              payload: new Uint8Array(8),
            }),
          ]);
          for (let i = 0; i < 1000 && qp.state !== QpState.ERR; i++) await turn();
          expect(qp.state).toBe(QpState.ERR);
        })();
      }
      if (attacked === null) s.write(d);
      else {
        held.push(d);
        void attacked.then(() => {
          for (const b of held.splice(0)) s.write(b);
        });
      }
    });
    c.on('close', () => s.end());
    s.on('close', () => c.end());
    c.on('error', () => undefined);
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  const relayPort = (relay.address() as net.AddressInfo).port;
  try {
    const base = { verb: 'write', lat: false, iters: ITERS, size: 1000, stepTimeoutMs: 5000, runTimeoutMs: 10_000, connectTimeoutMs: 5000 } as const;
    const [s, c] = await Promise.allSettled([
      runPerftest(p.sim.b, { ...base, role: 'server', listener }),
      runPerftest(p.sim.a, { ...base, role: 'client', server: '127.0.0.1', port: relayPort }),
    ]);
    // The client's WRITEs all completed; its closing exchange then finds the server gone (exit 1 too).
    expect(c.status).toBe('rejected');
    expect((c as PromiseRejectedResult).reason).toBeInstanceOf(OobError);
    // The server watches its QP while it waits for the client's closing messages: it fails at once,
    // naming the QP's error (not a timed-out read), instead of reporting after the fact.
    expect(s.status).toBe('rejected');
    const e = (s as PromiseRejectedResult).reason as PerftestError;
    expect(e).toBeInstanceOf(PerftestError);
    expect(e.code).toBe(PerftestErrorCode.COMPLETION);
    expect(e.message).toMatch(/QP 0x[0-9a-f]+ (went to|is in) the error state.*(R_Key|rkey|access)/i);
  } finally {
    relay.close();
    listener.close();
    p.stop();
  }
}, 30_000);
