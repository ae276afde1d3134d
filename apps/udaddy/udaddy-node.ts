/**
 * One of udaddy's connections, `struct cmatest_node` (rdma-core librdmacm/examples/udaddy.c): an
 * rdma_cm ID of the UDP port space, its PD, CQ and UD QP, one buffer of message_size + 40 bytes
 * (the GRH area, sizeof(struct ibv_grh)) registered for local write, and once resolved the peer's
 * QPN, Q_Key and an address handle.
 *
 * As udaddy's init_node() and create_message(): the CQ holds message_count × 2 entries (2 with no
 * messages), the QP message_count send and receive WRs (1 with no messages), one SGE each, and
 * sends are unsignaled unless asked (sq_sig_all 0). As librdmacm's rdma_create_qp() on a UD ID
 * (ucma_init_ud_qp()), the QP goes straight to RTS with the port space's Q_Key (RDMA_UDP_QKEY, the
 * kernel's cma_set_qkey()) and send PSN 0.
 *
 * Every receive (post_recvs()) and every send (post_sends()) uses the same buffer from its start:
 * receives land GRH first, and a send carries the buffer's first message_size bytes, so the
 * server's replies echo the GRH and the start of the last datagram it received.
 */
import type { Device } from '../../stack/device';
import type { AddressHandle } from '../../stack/address';
import type { CompletionQueue } from '../../stack/completion-queue';
import type { MemoryRegion, ProtectionDomain } from '../../stack/memory-region';
import type { QueuePair } from '../../stack/queue-pair';
import { QpState, QpType } from '../../stack/qp-type-and-state';
import { Access } from '../../stack/access-flags';
import { SendFlags, WrOpcode } from '../../stack/work-request-codes';
import { RDMA_UDP_QKEY, type RdmaCmId } from '../../stack/cm/rdma-cm';
import { GRH_LEN } from './reply-ah';

export class UdaddyNode {
  readonly pd: ProtectionDomain;
  readonly cq: CompletionQueue;
  readonly qp: QueuePair;
  /** message_size + 40 bytes; null with no messages (create_message() allocates none). */
  readonly mr: MemoryRegion | null;
  id: RdmaCmId | null = null;
  ah: AddressHandle | null = null;
  remoteQpn = 0;
  remoteQkey = 0;
  connected = false;
  /** Sends posted and completions taken (udaddy counts both outcomes of a completion alike). */
  sent = 0;
  completions = 0;
  received = 0;
  /** Bytes of the receive completions (each message_size + 40: the GRH area counts, as in ibv_wc.byte_len). */
  receivedBytes = 0;

  constructor(
    readonly dev: Device,
    readonly index: number,
    readonly messageCount: number,
    readonly messageSize: number,
  ) {
    this.pd = dev.allocPd();
    this.cq = dev.createCq(messageCount > 0 ? messageCount * 2 : 2);
    const wrs = messageCount > 0 ? messageCount : 1;
    this.qp = dev.createQp(this.pd, {
      qpType: QpType.UD,
      sendCq: this.cq,
      recvCq: this.cq,
      sqSigAll: false,
      cap: { maxSendWr: wrs, maxRecvWr: wrs, maxSendSge: 1, maxRecvSge: 1 },
    });
    this.qp.modify({ qpState: QpState.INIT, pkeyIndex: 0, portNum: 1, qkey: RDMA_UDP_QKEY });
    this.qp.modify({ qpState: QpState.RTR });
    this.qp.modify({ qpState: QpState.RTS, sqPsn: 0 });
    this.mr = messageCount > 0 ? dev.regMr(this.pd, new Uint8Array(messageSize + GRH_LEN), Access.LOCAL_WRITE) : null;
  }

  /** post_recvs(): message_count receives of message_size + 40 bytes, all into the one buffer. */
  postRecvs(): void {
    const mr = this.mr;
    if (mr === null) return;
    for (let i = 0; i < this.messageCount; i++) this.qp.postRecv({ wrId: this.index, sgList: [mr.sge(0, this.messageSize + GRH_LEN)] });
  }

  /**
   * post_sends(): message_count SEND_WITH_IMM of message_size bytes from the buffer's start to the
   * peer's QPN and Q_Key, the immediate data our QPN (htobe32(qp_num): the server answers to it).
   */
  postSends(signaled: boolean): void {
    const mr = this.mr;
    if (!this.connected || mr === null || this.ah === null) return;
    for (let i = 0; i < this.messageCount; i++) {
      this.qp.postSend({
        wrId: this.index,
        opcode: WrOpcode.SEND_WITH_IMM,
        sgList: [mr.sge(0, this.messageSize)],
        sendFlags: signaled ? SendFlags.SIGNALED : 0,
        immData: this.qp.qpNum,
        ud: { ah: this.ah, remoteQpn: this.remoteQpn, remoteQkey: this.remoteQkey },
      });
      this.sent++;
    }
  }

  /** destroy_node(): the QP back to the device (the CM ID goes with the rdma_cm). */
  close(): void {
    try {
      if (this.qp.state !== QpState.RESET) this.qp.modify({ qpState: QpState.RESET });
      this.dev.destroyQp(this.qp);
    } catch {
      // the device may already be closing: nothing more to give back
    }
  }
}
