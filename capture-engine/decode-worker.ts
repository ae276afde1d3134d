/**
 * A worker thread of `roce decode` (capture-engine/decode-workers.ts starts it): it decodes and prints the
 * batches of records it is sent, each into bytes that it sends back with the batch's counts. It
 * prints exactly what the command's own thread would (the same `BatchPrinter`).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ProgrammingError, ProgrammingErrorCode } from '../base/programming-error';
import { disableNative, nativeIcrcV2 } from '../nic-driver/native-binding';
import { nativeIcrcBatch } from '../nic-driver/native-icrc';
import { BatchPrinter } from './decode-batch';
import type { BatchMessage, DecodeWorkerData } from './decode-batch-layout';

const port = parentPort;
if (port === null) throw new ProgrammingError(ProgrammingErrorCode.Misuse, 'capture-engine/decode-worker.ts runs only as a worker thread of roce decode');
const data = workerData as DecodeWorkerData;
// The command's thread left the addon alone (ROCE_NO_NATIVE=1, or it did not load): so does this one.
if (!data.native) disableNative('not used by the command that started this worker');
const printer = new BatchPrinter(data.settings, nativeIcrcV2() ?? undefined, nativeIcrcBatch()?.compute ?? null);

port.on('message', (m: BatchMessage) => {
  const r = printer.print(m);
  port.postMessage(r, [r.data, r.meta, ...r.out.map((c) => c.buffer as ArrayBuffer)]);
});
