/**
 * Fuzz target: the stack's GSI agent and CM state machine, stateful. Device B listens on an RDMA
 * CM port (TCP and UDP port spaces) and accepts, rejects or disconnects as the input says; device
 * A also connects to B, so both the passive and the active side have connections in progress.
 * The input is then cut into 256-byte MADs that a third party injects, from A's address, as UD
 * SENDs to QP 1 with the GSI Q_Key, with virtual time passing between them (retries, timeouts,
 * TimeWait run). A MAD may be forced to look like CM (base version 1, class 7, version 2) and may
 * carry, as its communication IDs, the ones of a connection in progress, so the fuzzer reaches
 * every state. Whatever arrives, the stack must not throw.
 */
import { createSimPair, SIM_IP_A, SIM_IP_B, SIM_MAC_A, SIM_MAC_B } from '../../apps/sim/sim-pair';
import { RdmaCm, type RdmaCmEvent } from '../../stack/cm/rdma-cm';
import { CmState } from '../../stack/cm/cm-state';
import { PortSpace } from '../../packets/cm/service-id';
import { buildRoceV2Frame } from '../../packets/build';
import { Opcode } from '../../packets/opcodes';
import { GSI_QKEY, GSI_QPN, MAD_LEN } from '../../packets/mad';
import { QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { typedErrorsOnly } from '../typed-errors';

const PORT = 7174;
/** Virtual time between injected MADs: a CM response timeout is milliseconds to seconds. */
const STEP_NS = [0, 50_000, 5_000_000, 600_000_000, 5_000_000_000] as const;

export function fuzz(data: Uint8Array): void {
  if (data.length < 2) return;
  const mode = data[0] as number;
  const sim = createSimPair({ seed: 1 });
  const cmA = new RdmaCm(sim.a, { seed: 2 });
  const cmB = new RdmaCm(sim.b, { seed: 3 });
  const qpOf = (dev: typeof sim.a, type: QpType) => {
    const pd = dev.allocPd();
    const cq = dev.createCq(64);
    const qp = dev.createQp(pd, { qpType: type, sendCq: cq, recvCq: cq });
    dev.regMr(pd, new Uint8Array(4096), Access.LOCAL_WRITE | Access.REMOTE_WRITE);
    return qp;
  };
  /** Communication IDs of connections in progress: A's own (active side) and those B gave A's requests. */
  const idsA: number[] = [];
  const idsB: number[] = [];
  const onB = (e: RdmaCmEvent): void => {
    typedErrorsOnly(() => {
      if (e.type === 'CONNECT_REQUEST') idsB.push(e.id.cmId.localId);
      if (e.type !== 'CONNECT_REQUEST') {
        if (e.type === 'ESTABLISHED' && (mode & 4) !== 0) e.id.disconnect();
        return;
      }
      if ((mode & 2) !== 0) e.id.reject(new Uint8Array([mode]));
      else e.id.accept(qpOf(sim.b, e.id.cmState === CmState.SIDR_REQ_RCVD ? QpType.UD : QpType.RC));
    });
  };
  typedErrorsOnly(() => void cmB.listen(PORT, onB));
  typedErrorsOnly(() => void cmB.listen(PORT, onB, PortSpace.UDP));
  if ((mode & 8) !== 0)
    typedErrorsOnly(() => void idsA.push(cmA.connect({ dst: SIM_IP_B, port: PORT, qp: qpOf(sim.a, QpType.RC), param: {} }, () => undefined).cmId.localId));
  if ((mode & 16) !== 0) typedErrorsOnly(() => void idsA.push(cmA.resolveUd({ dst: SIM_IP_B, port: PORT }, () => undefined).cmId.localId));
  const wait = (ns: number): void => void sim.clock.runUntil(sim.clock.now() + ns, 100_000);
  wait(STEP_NS[mode % STEP_NS.length] as number);
  let psn = 0;
  for (let at = 1; at < data.length; at += MAD_LEN) {
    const mad = new Uint8Array(MAD_LEN);
    mad.set(data.subarray(at, at + MAD_LEN));
    if (((mad[3] as number) & 0x40) === 0) {
      mad[0] = 1;
      mad[1] = 0x07;
      mad[2] = 2;
    }
    // The CM data starts with the sender's and the receiver's communication IDs (REQ has only the first).
    const view = new DataView(mad.buffer);
    const a = idsA[(mad[5] as number) % Math.max(1, idsA.length)];
    const b = idsB[(mad[6] as number) % Math.max(1, idsB.length)];
    if (((mad[3] as number) & 0x20) !== 0 && a !== undefined) view.setUint32(24, a);
    if (((mad[3] as number) & 0x10) !== 0 && b !== undefined) view.setUint32(28, b);
    sim.link.a.txBurst([
      buildRoceV2Frame({
        eth: { src: SIM_MAC_A, dst: SIM_MAC_B },
        ip: { version: 4, src: SIM_IP_A, dst: SIM_IP_B },
        bth: { opcode: Opcode.UD_SEND_ONLY, destQp: GSI_QPN, psn: psn++ & 0xffffff },
        deth: { qkey: GSI_QKEY, srcQp: GSI_QPN },
        payload: mad,
      }),
    ]);
    wait(STEP_NS[(mad[7] as number) % STEP_NS.length] as number);
  }
  sim.clock.runUntilIdle(100_000);
  sim.link.close();
}
