/**
 * The "NVMe-oF commands" section of `roce analyze`'s text report (command-analysis.ts): per queue,
 * the commands and their latency, the data moved, and what went wrong, named; with `verbose`, a
 * line per command.
 */
import type { NvmeAnalysis, NvmeCommandRecord, NvmeQueueReport } from './command-analysis';
import type { NvmeFrame } from './nvme-decoder';
import { commandName } from './nvme-text';
import { isConnect } from './nvme-decoder';
import { statusName } from './cqe';
import { latencyLines } from '../command-latency';

const us = (x: number): string => `${x.toFixed(3)} µs`;

/** "target 198.18.0.2 QP 0xe7f153" from a queue key `address/QPN` (or a --decode-as pair as it is). */
function queueName(key: string): string {
  const slash = key.lastIndexOf('/');
  if (key.startsWith('decode-as ') || slash < 0) return key;
  return `controller ${key.slice(0, slash)} QP 0x${Number(key.slice(slash + 1))
    .toString(16)
    .padStart(6, '0')}`;
}

function commandLine(c: NvmeCommandRecord): string {
  const done = c.completion === null ? 'no completion' : `${us(c.completion.latencyNs / 1000)}, ${c.completion.statusName} (frame ${c.completion.frame})`;
  const r = c.rdma;
  const rdma =
    r.reads + r.writes + r.packets === 0
      ? ''
      : `; RDMA ${r.reads > 0 ? `${r.reads} READ${r.reads > 1 ? 's' : ''}` : `${r.writes} WRITE${r.writes > 1 ? 's' : ''}`}, ${r.packets} packets, ${r.bytes} B${r.resent > 0 ? `, ${r.resent} sent again` : ''}`;
  return `${c.name} cid ${c.commandId} (frame ${c.frame}): ${done}${c.dataBytes > 0 ? `; ${c.dataBytes} B ${c.keyed ? 'keyed' : 'in the capsule'}` : ''}${rdma}`;
}

function queueText(q: NvmeQueueReport, verbose: boolean): string[] {
  const out: string[] = [];
  out.push(`  queue ${q.qid ?? '?'} (${queueName(q.queue)})${q.sqSize === null ? '' : `, SQ size ${q.sqSize}`}`);
  const errors = q.errors.length > 0 ? ` (${q.errors.length} with an error status)` : '';
  out.push(
    `    ${q.commands} command${q.commands === 1 ? '' : 's'}, ${q.completed} completed${errors}; at most ${q.maxOutstanding} outstanding${q.sqSize === null ? '' : ` of ${q.sqSize}`}`,
  );
  out.push(...latencyLines('capsule to completion', q, '    '));
  out.push(
    `    data: ${q.bytes.rdmaToHost} B by RDMA to the host, ${q.bytes.rdmaToController} B by RDMA to the controller, ${q.bytes.inCapsule} B in capsules`,
  );
  if (q.invalidation.asked > 0)
    out.push(`    invalidation asked (keyed SGL 0x4F): ${q.invalidation.asked}, done by SEND with Invalidate: ${q.invalidation.done}`);
  for (const c of q.errors) out.push(`    error: ${commandLine(c)}`);
  for (const c of q.neverCompleted) out.push(`    never completed: ${commandLine(c)}`);
  for (const c of q.invalidation.notDone) out.push(`    invalidation not done: ${commandLine(c)}`);
  for (const u of q.usedAfterInvalidation)
    out.push(
      `    key 0x${u.key.toString(16).padStart(8, '0')} used after its invalidation (frame ${u.frame}${u.commandId === null ? '' : `, cid ${u.commandId}`})`,
    );
  if (verbose) for (const c of q.list) out.push(`    ${commandLine(c)}`);
  return out;
}

/** The section, ending with a newline; empty when the capture holds no NVMe-oF queue. */
export function nvmeAnalysisText(a: NvmeAnalysis, verbose: boolean): string {
  if (a.queues.length === 0) return '';
  return `\nNVMe-oF commands (${a.queues.length} queue${a.queues.length === 1 ? '' : 's'}):\n${a.queues.flatMap((q) => queueText(q, verbose)).join('\n')}\n`;
}

/**
 * A few words for a frame in a picture (`roce ladder`): the command a capsule carries, the
 * completion and its status, the command a transfer's data belongs to; null for other frames.
 */
export function nvmeLadderNote(f: NvmeFrame): string | null {
  if (f.kind === 'command' && f.command !== null)
    return `NVMe ${commandName(f.command.sqe.opcode, f.command.fabrics?.fctype ?? null, f.qid)} cid ${f.command.sqe.commandId}`;
  if (f.kind === 'completion' && f.completion !== null) {
    const of = f.of === null ? '' : ` (${commandName(f.of.opcode, f.of.fctype, f.qid)})`;
    return `NVMe CQE cid ${f.completion.commandId}${of} ${statusName(f.completion.status, isConnect(f.of))}`;
  }
  if (f.kind === 'data' && f.of !== null) return `NVMe data cid ${f.of.commandId} (${commandName(f.of.opcode, f.of.fctype, f.qid)})`;
  return null;
}
