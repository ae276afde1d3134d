/**
 * `roce analyze`'s iSER tasks and SMB Direct requests (ulp/iser/iser-task-analysis.ts,
 * ulp/smbd/smb2-request-analysis.ts, through capture-engine/ulp-report-pass.ts and the request
 * analysis they share, ulp/exchange-analysis.ts) on captures/iser.pcap and captures/smbd.pcap, each
 * figure derived from the capture's own frames: the requests and their answers by tag, the latency
 * between their frames, the errors named (CHECK CONDITION, a task management function for a task
 * that does not exist), the RDMA transfers behind each against the lengths the requests asked for,
 * and the same through `roce analyze --json` and its text.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type CaptureRecord, readCapture } from '../../packets/pcap';
import { iserTasksOf, smbdRequestsOf } from '../../capture-engine/ulp-report-pass';
import type { ExchangeReport } from '../../ulp/exchange-analysis';
import { defaultRuleSet } from '../../ulp/protocols';
import { UlpName } from '../../ulp/ulp-decoder';
import { roce } from '../support/cli';

const CAPTURES = path.resolve(__dirname, '..', '..', 'captures');
const RULES = defaultRuleSet();

function frameTimes(file: string): (frame: number) => number {
  const records: CaptureRecord[] = readCapture(new Uint8Array(fs.readFileSync(file))).records;
  return (frame) => Number((records[frame - 1] as CaptureRecord).timestampNs - (records[0] as CaptureRecord).timestampNs);
}

function latenciesFromFrames(c: ExchangeReport, ns: (frame: number) => number): void {
  for (const r of c.list) {
    if (r.answer === null) continue;
    expect(r.answer.latencyNs).toBe(ns(r.answer.frame) - ns(r.frame));
  }
  expect(c.histogram.reduce((n, [, k]) => n + k, 0)).toBe(c.answered);
  // Every byte moved by RDMA is some request's.
  expect(c.list.reduce((n, r) => n + r.rdma.bytes, 0)).toBe(c.bytes.rdmaRead + c.bytes.rdmaWrite);
}

describe('captures/iser.pcap', () => {
  const file = path.join(CAPTURES, 'iser.pcap');
  const a = iserTasksOf(file, RULES[UlpName.Iser], 4791).analysis;
  const [c] = a.connections as [ExchangeReport];

  test('one connection; every task answered, by its Initiator Task Tag; the errors named', () => {
    expect(a.connections).toHaveLength(1);
    expect(c.requests).toBe(c.answered);
    expect(c.neverAnswered).toEqual([]);
    expect(new Set(c.list.map((r) => r.key)).size).toBe(c.list.length);
    expect(c.errors.map((r) => [r.name, r.answer?.status])).toEqual([
      ['SCSI READ(16)', 'CHECK CONDITION'],
      ['Task Management Function', 'Task does not exist'],
    ]);
    expect(c.list.filter((r) => r.name.startsWith('SCSI ')).every((r) => r.answer?.status === 'GOOD' || r.answer?.error === true)).toBe(true);
    latenciesFromFrames(c, frameTimes(file));
  });

  test('each data command moved by RDMA what its CDB asked for: the target WRITEs read data, READs write data', () => {
    const by = (name: string) => c.list.find((r) => r.name === name)?.rdma;
    expect(by('SCSI READ(10)')).toMatchObject({ reads: 0, writes: 1, bytes: 4096 });
    expect(by('SCSI WRITE(10)')).toMatchObject({ reads: 1, writes: 0, bytes: 4096 });
    expect(by('SCSI INQUIRY')).toMatchObject({ writes: 1, bytes: 36 });
    expect(by('SCSI TEST UNIT READY')).toMatchObject({ reads: 0, writes: 0, bytes: 0 });
  });

  test('roce analyze: iser in JSON, the section in text', async () => {
    const j = await roce('analyze', '--json', file);
    expect(j.code).toBe(0);
    expect((JSON.parse(j.out) as { iser?: unknown }).iser).toEqual(JSON.parse(JSON.stringify(a)));
    const t = await roce('analyze', file);
    expect(t.out).toContain('iSER tasks (1 connection):');
    expect(t.out).toMatch(/ {4}error: SCSI READ\(16\) itt 0x00000016 \(frame \d+\): [\d.]+ µs, CHECK CONDITION/);
  });
});

describe('captures/smbd.pcap', () => {
  const file = path.join(CAPTURES, 'smbd.pcap');
  const a = smbdRequestsOf(file, RULES[UlpName.Smbd], 4791).analysis;

  test('two connections, one claimed by shape; the negotiation and each SMB2 request answered by MessageId', () => {
    expect(a.connections.map((c) => c.conversation.split(' ')[0])).toEqual(['shape', expect.stringMatching(/^198\.18\.0\.\d+\/\d+$/)]);
    const [c1, c2] = a.connections as [ExchangeReport, ExchangeReport];
    expect(c1.list.map((r) => [r.key, r.name, r.answer?.status])).toEqual([
      ['negotiate', 'SMBD Negotiate', 'STATUS_SUCCESS'],
      ['0', 'SMB2 NEGOTIATE', 'STATUS_SUCCESS'],
      ['5', 'SMB2 WRITE', 'STATUS_SUCCESS'],
      ['6', 'SMB2 READ', 'STATUS_SUCCESS'],
    ]);
    // STATUS_MORE_PROCESSING_REQUIRED is a SESSION_SETUP on its way, not an error.
    // Each command of a compound is a request of its own, answered by the command of its MessageId in the compound response.
    expect(c2.list.map((r) => [r.key, r.name, r.answer?.status, r.answer?.error])).toEqual([
      ['negotiate', 'SMBD Negotiate', 'STATUS_SUCCESS', false],
      ['1', 'SMB2 SESSION_SETUP', 'STATUS_MORE_PROCESSING_REQUIRED', false],
      ['2', 'SMB2 CREATE', 'STATUS_SUCCESS', false],
      ['3', 'SMB2 QUERY_INFO', 'STATUS_SUCCESS', false],
      ['4', 'SMB2 CLOSE', 'STATUS_SUCCESS', false],
      ['5', 'SMB2 CREATE', 'STATUS_OBJECT_NAME_NOT_FOUND', true],
      ['6', 'SMB2 CLOSE', 'STATUS_OBJECT_NAME_NOT_FOUND', true],
    ]);
    // The compound's SMB Direct messages counted once: its commands' bytes, request and response, add up to them.
    const sends = c2.list.filter((r) => ['2', '3', '4'].includes(r.key)).reduce((n, r) => n + r.sendBytes, 0);
    expect(sends).toBe(24 + 144 + 112 + 88 + (24 + 160 + 96 + 124));
    for (const c of a.connections) latenciesFromFrames(c, frameTimes(file));
  });

  test('the WRITE’s data fetched by the server’s RDMA READ, the READ’s written by its RDMA WRITE', () => {
    const c1 = a.connections[0] as ExchangeReport;
    expect(c1.list.find((r) => r.key === '5')?.rdma).toMatchObject({ reads: 1, writes: 0, bytes: 2048 });
    expect(c1.list.find((r) => r.key === '6')?.rdma).toMatchObject({ reads: 0, writes: 1, bytes: 1024 });
  });

  test('roce analyze: smbd in JSON, the section in text', async () => {
    const j = await roce('analyze', '--json', file);
    expect(j.code).toBe(0);
    expect((JSON.parse(j.out) as { smbd?: unknown }).smbd).toEqual(JSON.parse(JSON.stringify(a)));
    const t = await roce('analyze', file);
    expect(t.out).toContain('SMB Direct requests (2 connections):');
    expect(t.out).toContain('  198.18.0.1 and 198.18.0.2 (by shape)');
  });
});
