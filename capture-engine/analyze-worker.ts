/**
 * The worker thread of `roce analyze` (capture-engine/analyze-workers.ts starts it): it reads the capture (a
 * file in blocks, capture-engine/pcap-block-reader.ts and capture-engine/pcapng-block-reader.ts),
 * checks the ICRCs of each batch of records in one native call (capture-engine/batch-icrc.ts), decodes the
 * frames and sends their views in batches (analysis/view-batch.ts) to the command's thread, which
 * analyses them. At most `VIEW_BATCHES_OUT` batches exist; the command's thread hands each back
 * once read, so memory stays flat whatever the file's size.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ProgrammingError, ProgrammingErrorCode } from '../base/programming-error';
import { disableNative, nativeIcrcV2 } from '../nic-driver/native-binding';
import { nativeIcrcBatch } from '../nic-driver/native-icrc';
import { streamCaptureFile } from '../analysis/capture-stream';
import { type ViewBatch, ViewBatchWriter, newViewBatch } from '../analysis/view-batch';
import { icrcV2 as icrcV2Js } from '../packets/icrc';
import { WireError, wireErrorParts } from '../packets/errors';
import { BatchIcrc } from './batch-icrc';
import { RecordBatch } from './decode-batch';
import { recordSource } from './batch-source';
import { PcapBlockReader } from './pcap-block-reader';
import { PcapngBlockReader } from './pcapng-block-reader';
import { META_FIELDS } from './decode-batch-layout';
import { type ExactTime, exactTime } from '../base/exact-time';
import { type AnalyzeWorkerData, type FromAnalyzeWorker, VIEW_BATCHES_OUT } from './analyze-worker-messages';

const port = parentPort;
if (port === null) throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'capture-engine/analyze-worker.ts runs only as a worker thread of roce analyze');
const data = workerData as AnalyzeWorkerData;
// The command's thread left the addon alone (ROCE_NO_NATIVE=1, or it did not load): so does this one.
if (!data.native) disableNative('not used by the command that started this worker');
const one = nativeIcrcV2() ?? icrcV2Js;
const burst = data.verifyIcrc ? (nativeIcrcBatch()?.compute ?? null) : null;
const icrc = burst === null ? null : new BatchIcrc(burst, one);
const writer = new ViewBatchWriter({ rocePort: data.rocePort, verifyIcrc: data.verifyIcrc, icrcV2: icrc === null ? one : icrc.icrcV2 });

const spares: ViewBatch[] = [];
let made = 0;
let wake: (() => void) | null = null;
port.on('message', (b: ViewBatch) => {
  spares.push(b);
  const w = wake;
  wake = null;
  w?.();
});

function post(m: FromAnalyzeWorker, transfer: ArrayBuffer[] = []): void {
  (port as NonNullable<typeof port>).postMessage(m, transfer);
}

/** A batch to fill: a spare, a new one while fewer than `VIEW_BATCHES_OUT` exist, else the next handed back. */
async function freeBatch(): Promise<ViewBatch> {
  for (;;) {
    const b = spares.pop();
    if (b !== undefined) return b;
    if (made < VIEW_BATCHES_OUT) {
      made++;
      return newViewBatch();
    }
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
}

function send(): void {
  const b = writer.end();
  post({ type: 'batch', batch: b }, [b.slots.buffer as ArrayBuffer, b.raw.buffer as ArrayBuffer]);
}

/** Decodes the records gathered in `rb` into view batches; `start` (the capture's first time) goes with the first. */
async function decodeRecords(rb: RecordBatch, start: ExactTime | undefined): Promise<void> {
  const bytes = new Uint8Array(rb.data);
  const view = new DataView(rb.data);
  const meta = new Float64Array(rb.meta);
  icrc?.prepare(bytes, meta, rb.count);
  for (let i = 0; i < rb.count; i++) {
    if (writer.full) {
      send();
      writer.begin(await freeBatch());
    }
    if (icrc !== null) icrc.current = i;
    const k = i * META_FIELDS;
    // The time slot holds nanoseconds after the first frame (run()).
    writer.add(
      meta[k] as number,
      meta[k + 1] as number,
      meta[k + 2] as number,
      meta[k + 3] as number,
      view,
      bytes,
      meta[k + 4] as number,
      meta[k + 5] as number,
      i === 0 ? start : undefined,
    );
  }
}

async function run(): Promise<void> {
  // A capture file, classic pcap or pcapng, is read in blocks straight into the batch; anything else
  // record by record.
  const source =
    PcapBlockReader.open(data.file, 'ns-after-first') ??
    PcapngBlockReader.open(data.file, 'ns-after-first') ??
    recordSource(streamCaptureFile(data.file), 'ns-after-first');
  const standard = RecordBatch.fresh(0);
  let first = true;
  writer.begin(await freeBatch());
  try {
    for (;;) {
      // The time slot holds nanoseconds after the first frame.
      let rb = new RecordBatch(standard.data, standard.meta);
      let n = source.fill(rb);
      if (n === 0 && source.need > 0) {
        // A record larger than a batch gets one of its own size.
        rb = RecordBatch.fresh(source.need);
        n = source.fill(rb);
      }
      if (n === 0) {
        send();
        const error = source.ended?.error ?? null;
        post({ type: 'end', error: error === null ? null : wireErrorParts(error) });
        return;
      }
      const t0 = source.firstTimestampNs;
      // The first record's decimals are in its meta slot (decode-batch-layout.ts).
      await decodeRecords(rb, first && t0 !== null ? exactTime(t0, new Float64Array(rb.meta)[7] as number) : undefined);
      first = false;
    }
  } finally {
    source.close();
  }
}

run().catch((e: unknown) => {
  post({ type: 'failed', message: e instanceof Error ? e.message : String(e), wire: e instanceof WireError ? wireErrorParts(e) : null });
});
