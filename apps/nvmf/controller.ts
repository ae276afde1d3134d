/**
 * A controller of the target and the subsystem it belongs to (NVMe over Fabrics 1.1, "Controller
 * Model": dynamic controllers, one per host association, made by the admin queue's Connect). The
 * controller holds its properties (CAP, VS, CC, CSTS: CC.EN set → CSTS.RDY set; CC.SHN → CSTS.SHST
 * complete), the I/O queues granted by Set Features Number of Queues, its keep-alive timeout and the
 * Asynchronous Event Requests it holds. A discovery controller (the well-known discovery NQN) has no
 * namespace and no I/O queues.
 */
import type { RamNamespace } from './ram-namespace';

/** The well-known discovery subsystem NQN (NVMe over Fabrics 1.1, "Discovery Service"). */
export const DISCOVERY_NQN = 'nqn.2014-08.org.nvmexpress.discovery';

/** The largest queue a host may open (CAP.MQES + 1, as nvmet's NVMET_QUEUE_SIZE). */
export const MAX_QUEUE_SIZE = 128;
/** Bytes of in-capsule data the target takes on an I/O queue (IOCCSZ = (64 + this) / 16; nvmet's default inline_data_size, one page). */
export const INLINE_DATA_SIZE = 4096;
/** Largest transfer of one command, 2^MDTS pages of 4 KiB: 128 KiB. */
export const MDTS = 5;
export const MAX_TRANSFER = 4096 << MDTS;
/** Outstanding Asynchronous Event Requests the controller holds (AERL 3: four, 0-based). */
export const AERL = 3;
/** CAP.TO: the host waits up to 7.5 s (units of 500 ms) for CSTS.RDY. */
const CAP_TO = 15;

/** CAP: MQES (0-based), CQR (contiguous queues required), TO, CSS bit 37 (NVM command set); MPSMIN 0 (4 KiB). */
export const CAP = BigInt(MAX_QUEUE_SIZE - 1) | (1n << 16n) | (BigInt(CAP_TO) << 24n) | (1n << 37n);
/** VS: NVMe 1.3. */
export const VS = 0x0001_0300;

/** Property offsets (NVMe Base 2.0, "Property Definition"). */
export const Prop = { CAP: 0x00, VS: 0x08, CC: 0x14, CSTS: 0x1c } as const;

export interface SubsystemConfig {
  nqn: string;
  /** Model and serial number Identify Controller reports. */
  serial: string;
  model: string;
  /** I/O queues a host may have (Set Features Number of Queues grants at most this many). */
  maxIoQueues: number;
  /** The address and port the discovery log names. */
  traddr: string;
  trsvcid: string;
}

export class Controller {
  cc = 0;
  csts = 0;
  /** I/O queues granted (0 until Set Features Number of Queues). */
  ioQueues = 0;
  /** Held Asynchronous Event Requests: their command IDs. */
  readonly aers: number[] = [];
  /** Milliseconds (wall clock) of the last command on any of its queues; the keep-alive timer counts from it. */
  lastCommandMs: number;

  constructor(
    readonly cntlid: number,
    readonly discovery: boolean,
    readonly hostnqn: string,
    /** Keep-alive timeout in ms (0: none). */
    readonly kato: number,
    nowMs: number,
  ) {
    this.lastCommandMs = nowMs;
  }

  get ready(): boolean {
    return (this.csts & 1) === 1;
  }

  /** Property Set of CC: EN 0 → 1 makes the controller ready, 1 → 0 resets it; a shutdown notification completes at once. */
  setCc(value: number): void {
    const wasEn = (this.cc & 1) === 1;
    this.cc = value >>> 0;
    const en = (this.cc & 1) === 1;
    if (en && !wasEn) this.csts |= 1;
    if (!en && wasEn) {
      this.csts = 0;
      this.ioQueues = 0;
    }
    // CC.SHN (bits 15:14) → CSTS.SHST (bits 3:2) = 2, shutdown processing complete: a RAM disk has nothing to write back.
    if (((this.cc >>> 14) & 3) !== 0) this.csts = (this.csts & ~0xc) | (2 << 2);
  }
}

/** The subsystem: its namespace, its configuration and the controllers of the hosts connected to it (and to discovery). */
export class Subsystem {
  readonly controllers = new Map<number, Controller>();
  private nextCntlid = 1;

  constructor(
    readonly config: SubsystemConfig,
    readonly namespace: RamNamespace,
  ) {}

  /** A new controller for an admin queue's Connect, or null when all 0xFFEF controller IDs are taken. */
  allocate(discovery: boolean, hostnqn: string, kato: number, nowMs: number): Controller | null {
    // Controller IDs 1..0xFFEF are dynamic ones; 0xFFF0 and above are reserved (NVMe over Fabrics 1.1, Connect data).
    for (let tries = 0; tries < 0xffef; tries++) {
      const id = this.nextCntlid;
      this.nextCntlid = id >= 0xffef ? 1 : id + 1;
      if (!this.controllers.has(id)) {
        const c = new Controller(id, discovery, hostnqn, kato, nowMs);
        this.controllers.set(id, c);
        return c;
      }
    }
    return null;
  }

  release(c: Controller): void {
    this.controllers.delete(c.cntlid);
  }
}
