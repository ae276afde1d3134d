/**
 * The target against a hand-made host on the in-memory link: malformed capsules are answered with
 * an NVMe status (or counted when too short to carry a command ID) and the target keeps serving;
 * a REQ with a bad NVMe private data is refused with the NVMe-oF status; a host whose REQ nobody
 * answers ends within the CM's bound and says why.
 */
import { createSimPair } from '../../apps/sim/sim-pair';
import { pumpVirtualClock, nextTurn } from '../../apps/host/clock-pump';
import { RdmaCm, type RdmaCmEvent } from '../../stack/cm/rdma-cm';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { WcOpcode } from '../../stack/work-completion';
import { emitNvmeCmReq, parseNvmeCmRej } from '../../ulp/nvme-rdma/cm-private-data';
import { emitCommandCapsule } from '../../ulp/nvme-rdma/capsule';
import { parseCqe, statusName } from '../../ulp/nvme-rdma/cqe';
import { SQE_FLAGS_SGL_METABUF } from '../../ulp/nvme-rdma/sqe';
import { runNvmfTarget } from '../../apps/nvmf/nvmf-target';
import { runNvmfHost } from '../../apps/nvmf/nvmf-host';
import { HostQueue } from '../../apps/nvmf/host-queue';
import { emitConnectData } from '../../ulp/nvme-rdma/fabrics-command';
import { FabricsType } from '../../ulp/nvme-rdma/opcode-names';
import { inCapsuleSgl } from '../../ulp/nvme-rdma/sgl';

async function until(cond: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`no ${what}`);
    await nextTurn();
  }
}

test('malformed capsules get an NVMe status or are counted; a bad REQ is refused with the NVMe-oF status', async () => {
  const sim = createSimPair({ seed: 7 });
  const pump = pumpVirtualClock(sim.clock);
  let stop = false;
  const target = runNvmfTarget(sim.b, { addr: '198.18.0.2', namespaceBytes: 1 << 16, stop: () => stop });
  try {
    const rcm = new RdmaCm(sim.a);
    // A REQ for an admin queue of 64 entries: refused, status 4 (invalid host SQ size).
    const pd = sim.a.allocPd();
    const cq = sim.a.createCq(64);
    const mk = () => sim.a.createQp(pd, { qpType: QpType.RC, sendCq: cq, recvCq: cq });
    const ev1: RdmaCmEvent[] = [];
    rcm.connect(
      { dst: '198.18.0.2', port: 4420, qp: mk(), param: { privateData: emitNvmeCmReq({ recfmt: 0, qid: 0, hrqsize: 64, hsqsize: 63, cntlid: 0xffff }) } },
      (e) => ev1.push(e),
    );
    await until(() => ev1.length > 0, 'answer to the REQ');
    const rej = ev1[0];
    expect(rej?.type).toBe('REJECTED');
    if (rej?.type === 'REJECTED')
      expect(
        parseNvmeCmRej(new DataView(rej.privateData.buffer, rej.privateData.byteOffset, rej.privateData.byteLength), 0, rej.privateData.byteLength).status,
      ).toBe(4);

    const qp = mk();
    const ev: RdmaCmEvent[] = [];
    rcm.connect(
      { dst: '198.18.0.2', port: 4420, qp, param: { privateData: emitNvmeCmReq({ recfmt: 0, qid: 0, hrqsize: 8, hsqsize: 7, cntlid: 0xffff }) } },
      (e) => ev.push(e),
    );
    const mr = sim.a.regMr(pd, new Uint8Array(4096), Access.LOCAL_WRITE);
    for (let i = 0; i < 6; i++) qp.postRecv({ wrId: BigInt(i), sgList: [mr.sge(2048 + i * 16, 16)] });
    await until(() => ev.some((e) => e.type === 'ESTABLISHED'), 'connection');
    let at = 0;
    const send = (bytes: Uint8Array): void => {
      mr.buffer.set(bytes, at);
      qp.postSend({ wrId: 99n, opcode: WrOpcode.SEND, sgList: [mr.sge(at, bytes.length)], sendFlags: SendFlags.SIGNALED });
      at += 128;
    };
    const cqes: ReturnType<typeof parseCqe>[] = [];
    const take = () => {
      for (const wc of cq.poll(8)) if (wc.opcode === WcOpcode.RECV) cqes.push(parseCqe(new DataView(mr.buffer.buffer), 2048 + Number(wc.wrId) * 16, 4096));
      return cqes.length;
    };
    // 20 bytes: no SQE, no command ID to answer.
    send(new Uint8Array(20).fill(0xee));
    // An SQE with an SGL segment descriptor (type 0x2): SGL Descriptor Type Invalid.
    send(
      emitCommandCapsule({
        opcode: 0x06,
        flags: SQE_FLAGS_SGL_METABUF,
        commandId: 5,
        nsid: 0,
        metadata: 0n,
        sgl: { type: 2, subtype: 0, address: 0n, length: 16, key: null },
        cdw10to15: new Uint8Array(24),
      }),
    );
    // An Identify before the Connect: Command Sequence Error.
    send(
      emitCommandCapsule({
        opcode: 0x06,
        flags: SQE_FLAGS_SGL_METABUF,
        commandId: 6,
        nsid: 0,
        metadata: 0n,
        sgl: { type: 4, subtype: 0, address: 0n, length: 0, key: 0 },
        cdw10to15: new Uint8Array(24),
      }),
    );
    // PSDT 10b (an SGL segment for the metadata) and a fused command: Invalid Field, as nvmet_req_init() answers.
    for (const [commandId, flags] of [
      [7, 0x80],
      [8, SQE_FLAGS_SGL_METABUF | 1],
    ] as const)
      send(
        emitCommandCapsule({
          opcode: 0x06,
          flags,
          commandId,
          nsid: 0,
          metadata: 0n,
          sgl: { type: 4, subtype: 0, address: 0n, length: 0, key: 0 },
          cdw10to15: new Uint8Array(24),
        }),
      );
    await until(() => take() >= 4, 'four CQEs');
    expect(cqes.map((c) => [c.commandId, statusName(c.status)])).toEqual([
      [5, 'SGL Descriptor Type Invalid'],
      [6, 'Command Sequence Error'],
      [7, 'Invalid Field in Command'],
      [8, 'Invalid Field in Command'],
    ]);
    ev.find((e) => e.type === 'ESTABLISHED')?.id.disconnect();
    await until(() => ev.some((e) => e.type === 'DISCONNECTED'), 'DREP');
    stop = true;
    const r = await target;
    expect(r.malformed).toBe(1);
    expect(r.rejected).toEqual([{ qid: 0, status: 4 }]);
    rcm.close();
  } finally {
    stop = true;
    await target.catch(() => undefined);
    pump.stop();
    sim.link.close();
  }
}, 60_000);

test('a host whose REQ is never answered ends within the CM bound, naming it', async () => {
  const sim = createSimPair({ seed: 9, faults: { aToB: { drop: 1 } } });
  const pump = pumpVirtualClock(sim.clock);
  try {
    await expect(runNvmfHost(sim.a, { addr: '198.18.0.2', cm: { responseTimeout: 8, maxCmRetries: 1 } })).rejects.toThrow(/queue 0's connection/);
  } finally {
    pump.stop();
    sim.link.close();
  }
}, 60_000);

test('a host that goes quiet past its keep-alive timeout loses its controller: the target disconnects it and says why', async () => {
  const sim = createSimPair({ seed: 11 });
  const pump = pumpVirtualClock(sim.clock);
  const target = runNvmfTarget(sim.b, { addr: '198.18.0.2', namespaceBytes: 1 << 16, sessions: 1, keepAliveGraceMs: 0 });
  const rcm = new RdmaCm(sim.a);
  const q = new HostQueue(sim.a, { dst: '198.18.0.2', port: 4420, qid: 0, size: 8, cntlid: 0xffff, idle: nextTurn, cmBound: { ms: 10_000, why: 'test' } });
  try {
    await q.connect(rcm);
    const data = emitConnectData({
      hostId: new Uint8Array(16),
      cntlid: 0xffff,
      subnqn: 'nqn.2024-01.io.roce-ts:ram',
      hostnqn: 'nqn.2014-08.org.nvmexpress:uuid:quiet',
    });
    const r = await q.submit(
      { opcode: 0x7f, flags: SQE_FLAGS_SGL_METABUF, nsid: 0, metadata: 0n, sgl: inCapsuleSgl(1024), cdw10to15: new Uint8Array(24) },
      { fctype: FabricsType.CONNECT, connect: { recfmt: 0, qid: 0, sqsize: 7, cattr: 0, kato: 200 }, property: null },
      data,
      'Connect',
    );
    expect(r.cqe.status).toBe(0);
    // Nothing more: after 200 ms (and no grace) the target drops the controller with a DREQ.
    const t = await target;
    expect(t.associations[0]?.ended).toBe('keep-alive timeout (no command for 200 ms and 0 ms of grace)');
    expect(t.ok).toBe(false);
  } finally {
    q.close();
    rcm.close();
    pump.stop();
    sim.link.close();
  }
}, 60_000);
