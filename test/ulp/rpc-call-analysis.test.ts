/**
 * `roce analyze`'s RPC-over-RDMA calls (ulp/rpc-rdma/rpc-call-analysis.ts through
 * capture-engine/ulp-report-pass.ts) on captures/rpc-rdma.pcap, each figure derived from the
 * capture's own frames: the calls per connection with their names, their latency from call to
 * reply, the RDMA transfers behind each, the RDMA_ERROR named, the credits; the same through
 * `roce analyze --json` and its text. Then the analysis on frames made for the purpose: calls beyond
 * the server's grant, a call never answered, an NFSv4 error status, a denied call, and data sent
 * again counted once.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type CaptureRecord, readCapture } from '../../packets/pcap';
import { Opcode } from '../../packets/opcodes';
import { rpcCallsOf } from '../../capture-engine/ulp-report-pass';
import { type RpcConversationReport, RpcCallAnalysis } from '../../ulp/rpc-rdma/rpc-call-analysis';
import type { RpcRdmaFrame } from '../../ulp/rpc-rdma/rpcrdma-decoder';
import { RpcRdmaProc, type RpcRdmaHeader } from '../../ulp/rpc-rdma/rpcrdma-header';
import type { RpcMessage } from '../../ulp/rpc-rdma/rpc-message';
import { roce } from '../support/cli';

const FILE = path.resolve(__dirname, '..', '..', 'captures', 'rpc-rdma.pcap');
const records: CaptureRecord[] = readCapture(new Uint8Array(fs.readFileSync(FILE))).records;
const ns = (frame: number): number => Number((records[frame - 1] as CaptureRecord).timestampNs - (records[0] as CaptureRecord).timestampNs);

describe('captures/rpc-rdma.pcap', () => {
  const a = rpcCallsOf(FILE, { ports: [], qpns: [] }, 4791).analysis;
  const [c1, c2] = a.conversations as [RpcConversationReport, RpcConversationReport];

  test('two connections: the CM one (named by its server end) and the one claimed by shape', () => {
    expect(a.conversations.map((c) => c.conversation)).toEqual(['198.18.0.2/18', '198.18.0.1 198.18.0.2', '198.18.0.2/22']);
    expect([c1.requests, c1.answered, c2.requests, c2.answered]).toEqual([6, 6, 2, 2]);
    expect(c1.neverAnswered).toEqual([]);
  });

  test('each call named, answered with its status, its latency the time between its call and reply frames', () => {
    expect(c1.list.map((c) => [c.key, c.name, c.via, c.answer?.status, c.answer?.via])).toEqual([
      ['0x8a9b0001', 'NFSv4 COMPOUND SEQUENCE PUTROOTFH GETFH', 'inline', 'NFS4_OK', 'inline'],
      ['0x8a9b0002', 'NFSv4 COMPOUND SEQUENCE PUTFH READ', 'inline', 'NFS4_OK', 'inline'],
      ['0x8a9b0003', 'NFSv4 COMPOUND SEQUENCE PUTFH WRITE', 'inline', 'NFS4_OK', 'inline'],
      // RDMA_NOMSG: the call in its position-zero read chunk (named once the server read it), the reply in the reply chunk.
      ['0x8a9b0004', 'NFSv4 COMPOUND SEQUENCE PUTFH GETATTR', 'read-chunk', 'NFS4_OK', 'reply-chunk'],
      ['0x8a9b0005', 'NFSv3 WRITE', 'inline', 'NFS3_OK', 'inline'],
      ['0x8a9b0006', 'NFSv3 GETATTR', 'inline', 'RDMA_ERROR ERR_CHUNK', 'none'],
    ]);
    for (const c of [...c1.list, ...c2.list]) {
      const r = c.answer;
      expect(r).not.toBeNull();
      expect(r?.latencyNs).toBe(ns(r?.frame ?? 0) - ns(c.frame));
    }
    expect(c1.errors.map((c) => c.key)).toEqual(['0x8a9b0006']);
    expect(c1.latencyUs?.max).toBe(Math.max(...c1.list.map((c) => (c.answer?.latencyNs ?? 0) / 1000)));
    expect(c1.histogram.reduce((n, [, k]) => n + k, 0)).toBe(6);
  });

  test('the RDMA behind each call: the READ data written to the write chunk, the WRITE data read from the read chunk, both for RDMA_NOMSG', () => {
    expect(c1.list.map((c) => [c.rdma.reads, c.rdma.writes, c.rdma.bytes])).toEqual([
      [0, 0, 0],
      [0, 1, 2048],
      [1, 0, 1500],
      // The RDMA_NOMSG call: the rest of what the server read (its call) and wrote (its reply).
      [1, 1, c1.bytes.rdmaRead - 1500 + (c1.bytes.rdmaWrite - 2048)],
      [0, 0, 0],
      [0, 0, 0],
    ]);
    // Every byte the connection moved by RDMA is some call's.
    const perCall = c1.list.reduce((n, c) => n + c.rdma.bytes, 0);
    expect(perCall).toBe(c1.bytes.rdmaRead + c1.bytes.rdmaWrite);
    expect(c2.list.map((c) => [c.name, c.rdma.writes, c.rdma.bytes])).toEqual([
      ['NFSv3 GETATTR', 0, 0],
      ['NFSv3 READ', 1, 512],
    ]);
  });

  test('credits as each side last gave them; at most one call outstanding, none beyond the grant', () => {
    expect(c1.credits).toEqual({ requested: 128, granted: 128, overGrant: 0 });
    expect(c2.credits).toEqual({ requested: 32, granted: 32, overGrant: 0 });
    expect([c1.maxOutstanding, c2.maxOutstanding]).toEqual([1, 1]);
  });

  test('roce analyze gives the same as JSON (rpcrdma) and as text', async () => {
    const j = await roce('analyze', '--json', FILE);
    expect(j.code).toBe(0);
    const doc = JSON.parse(j.out) as { rpcrdma?: { conversations: RpcConversationReport[] } };
    expect(JSON.parse(JSON.stringify(a))).toEqual(doc.rpcrdma);
    const t = await roce('analyze', FILE);
    expect(t.out).toContain('RPC-over-RDMA calls (3 connections):');
    expect(t.out).toContain('  server 198.18.0.2 QP 0x000012');
    expect(t.out).toContain('    6 calls, 6 answered (1 with an error); at most 1 outstanding');
    expect(t.out).toMatch(/ {4}error: NFSv3 GETATTR xid 0x8a9b0006 \(frame \d+\): [\d.]+ µs, RDMA_ERROR ERR_CHUNK/);
    expect(t.out).toContain('  198.18.0.1 and 198.18.0.2');
  });
});

describe('made frames', () => {
  const header = (xid: number, credits: number, proc: number = RpcRdmaProc.MSG): RpcRdmaHeader => ({
    xid,
    vers: 1,
    credits,
    proc,
    align: null,
    threshold: null,
    readList: [],
    writeList: [],
    replyChunk: null,
    errorCode: null,
    versLow: null,
    versHigh: null,
    length: 28,
  });
  const call = (xid: number, credits: number): RpcRdmaFrame => ({
    kind: 'message',
    direction: 'to-server',
    conversation: 'c',
    header: header(xid, credits),
    rpc: { xid, msgType: 0, call: { rpcvers: 2, prog: 100003, vers: 3, proc: 6, credFlavor: 1 }, reply: null, compound: null, nfs3Status: null, length: 40 },
    rpcFrom: 'inline',
    of: null,
    handle: null,
    packets: 1,
    length: 100,
    cm: null,
    cmReq: null,
    error: null,
  });
  const reply = (xid: number, credits: number, rpc: Partial<RpcMessage>): RpcRdmaFrame => ({
    ...call(xid, credits),
    direction: 'to-client',
    rpc: { xid, msgType: 1, call: null, reply: null, compound: null, nfs3Status: null, length: 24, ...rpc },
  });
  const at = (frame: number, opcode: number = Opcode.RC_SEND_ONLY, psn = frame) => ({ frame, timeNs: frame * 1000, opcode, psn });

  test('calls beyond the grant, one never answered, an NFSv4 error, a denied call; data sent again counted once', () => {
    const x = new RpcCallAnalysis();
    x.take(call(1, 8), at(1));
    x.take(reply(1, 1, { reply: { replyStat: 0, acceptStat: 0, rejectStat: null, low: null, high: null, authStat: null } }), at(2));
    // The server granted 1: a second call while one is outstanding goes beyond it.
    x.take(call(2, 8), at(3));
    x.take(call(3, 8), at(4));
    const data: RpcRdmaFrame = {
      ...call(2, 8),
      kind: 'data',
      direction: 'to-client',
      header: null,
      rpc: null,
      rpcFrom: null,
      of: { xid: 2, chunk: 'write', call: null },
      length: 512,
    };
    x.take(data, at(5, Opcode.RC_RDMA_WRITE_ONLY, 900));
    x.take(data, at(6, Opcode.RC_RDMA_WRITE_ONLY, 900)); // the same PSN again: a resend
    x.take(
      reply(2, 1, {
        reply: { replyStat: 0, acceptStat: 0, rejectStat: null, low: null, high: null, authStat: null },
        compound: { tag: '', minorversionOrStatus: 10013, count: 1, ops: [53], statuses: [10013], args: [] },
      }),
      at(7),
    );
    x.take(call(4, 8), at(8));
    x.take(reply(4, 1, { reply: { replyStat: 1, acceptStat: null, rejectStat: 1, low: null, high: null, authStat: 1 } }), at(9));
    const [c] = x.result().conversations as [RpcConversationReport];
    expect(c.credits).toEqual({ requested: 8, granted: 1, overGrant: 2 });
    expect(c.maxOutstanding).toBe(2);
    expect(c.neverAnswered.map((r) => r.key)).toEqual(['0x00000003']);
    expect(c.errors.map((r) => [r.key, r.answer?.status])).toEqual([
      ['0x00000002', 'NFS4ERR_GRACE (10013) in SEQUENCE'],
      ['0x00000004', 'MSG_DENIED AUTH_ERROR'],
    ]);
    const two = c.list.find((r) => r.key === '0x00000002');
    expect(two?.rdma).toEqual({ reads: 0, writes: 2, packets: 2, bytes: 512, resent: 1 });
    expect(c.bytes.rdmaWrite).toBe(512);
  });
});
