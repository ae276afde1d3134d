/**
 * `roce analyze`'s NVMe-oF commands (ulp/nvme-rdma/command-analysis.ts through
 * capture-engine/nvme-command-pass.ts) on captures/nvme-rdma.pcap, each figure derived from the
 * capture's own frames: the commands per queue, their latency from capsule to completion, the
 * RDMA transfers behind each, the error completion named, the invalidation the keyed SGL asked for;
 * then the same capture with frames taken out or changed: a command that never completed, an
 * invalidation not done, a key used after its invalidation. The file and a copy held whole agree.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type CaptureRecord, readCapture } from '../../packets/pcap';
import { Opcode } from '../../packets/opcodes';
import { nvmeCommandsOf } from '../../capture-engine/nvme-command-pass';
import { DEFAULT_NVME_RULES } from '../../ulp/nvme-rdma/nvme-decoder';
import type { NvmeQueueReport } from '../../ulp/nvme-rdma/command-analysis';
import { roce } from '../support/cli';

const FILE = path.resolve(__dirname, '..', '..', 'captures', 'nvme-rdma.pcap');
const bytes = new Uint8Array(fs.readFileSync(FILE));
const records: CaptureRecord[] = readCapture(bytes).records;
const ns = (frame: number): number => Number((records[frame - 1] as CaptureRecord).timestampNs - (records[0] as CaptureRecord).timestampNs);

/** A classic pcap (µs, Ethernet) of `frames`, each with its own timestamp. */
function pcapOf(frames: { data: Uint8Array; timestampNs: bigint }[]): Uint8Array {
  const out: number[] = [];
  const u32 = (v: number): void => {
    out.push(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
  };
  u32(0xa1b23c4d); // nanosecond pcap
  out.push(2, 0, 4, 0);
  u32(0);
  u32(0);
  u32(65535);
  u32(1);
  for (const f of frames) {
    u32(Number(f.timestampNs / 1_000_000_000n));
    u32(Number(f.timestampNs % 1_000_000_000n));
    u32(f.data.length);
    u32(f.data.length);
    out.push(...f.data);
  }
  return Uint8Array.from(out);
}

const analyse = (src: string | Uint8Array) => {
  const r = nvmeCommandsOf(src, DEFAULT_NVME_RULES, 4791);
  expect(r.captureError).toBeNull();
  return r.analysis;
};

describe('captures/nvme-rdma.pcap', () => {
  const a = analyse(FILE);
  const [admin, io] = a.queues as [NvmeQueueReport, NvmeQueueReport];

  test('two queues: the admin queue and one I/O queue, each with its Connect SQSIZE', () => {
    expect(a.queues).toHaveLength(2);
    expect(admin).toMatchObject({ qid: 0, sqSize: 32, commands: 4, completed: 4, maxOutstanding: 1, errors: [], neverCompleted: [] });
    expect(io).toMatchObject({ qid: 1, sqSize: 32, commands: 5, completed: 5, maxOutstanding: 1, neverCompleted: [] });
    expect(admin.list.map((c) => c.name)).toEqual(['Fabrics Connect', 'Fabrics Property Get', 'Fabrics Property Set', 'Identify']);
    expect(io.list.map((c) => `${c.name} ${c.commandId}`)).toEqual(['Fabrics Connect 0', 'Write 1', 'Read 2', 'Write 3', 'Read 4']);
  });

  test('latency from the capsule to the completion, per command and as percentiles', () => {
    // Identify: capsule frame 17, CQE frame 24; the keyed Write: 42 and 49; the invalidating Read: 51 and 58.
    const identify = admin.list[3];
    expect(identify?.completion).toMatchObject({ frame: 24, latencyNs: ns(24) - ns(17), status: 0, statusName: 'Success' });
    expect(io.list[3]?.completion?.latencyNs).toBe(ns(49) - ns(42));
    const lat = io.list.map((c) => (c.completion?.latencyNs ?? 0) / 1000).sort((x, y) => x - y);
    expect(io.latencyUs).toEqual({ min: lat[0], p50: lat[2], p90: lat[4], p99: lat[4], max: lat[4], mean: lat.reduce((s, x) => s + x, 0) / 5 });
    expect(io.histogram.reduce((s, [, n]) => s + n, 0)).toBe(5);
    // Bucket 1 µs holds [0, 1), each next one [bound / 2, bound).
    for (const [bound, n] of io.histogram) expect(lat.filter((us) => us < bound && (bound === 1 || us >= bound / 2)).length).toBe(n);
  });

  test('the RDMA transfers behind each command, and the bytes of each queue', () => {
    expect(admin.list[3]?.rdma).toEqual({ reads: 0, writes: 1, packets: 4, bytes: 4096, resent: 0 });
    // The keyed Write: the controller's READ request and four responses.
    expect(io.list[3]?.rdma).toEqual({ reads: 1, writes: 0, packets: 4, bytes: 4096, resent: 0 });
    expect(io.list[4]?.rdma).toEqual({ reads: 0, writes: 1, packets: 4, bytes: 4096, resent: 0 });
    expect(admin.bytes).toEqual({ rdmaToController: 0, rdmaToHost: 4096, inCapsule: 1024 });
    expect(io.bytes).toEqual({ rdmaToController: 4096, rdmaToHost: 4096, inCapsule: 1024 + 512 });
  });

  test('the error completion is named; the invalidation the keyed SGL asked for was done', () => {
    expect(io.errors.map((c) => [c.commandId, c.name, c.completion?.statusName])).toEqual([[2, 'Read', 'LBA Out of Range']]);
    expect(io.invalidation).toEqual({ asked: 1, done: 1, notDone: [] });
    expect(admin.invalidation).toEqual({ asked: 0, done: 0, notDone: [] });
    expect(io.usedAfterInvalidation).toEqual([]);
  });

  test('the file read in pieces and the capture held whole give the same analysis', () => {
    expect(analyse(bytes)).toEqual(a);
  });
});

describe('what goes wrong', () => {
  const frames = records.map((r) => ({ data: r.data.slice(), timestampNs: r.timestampNs }));

  test('a completion the capture does not hold: the command never completed', () => {
    const a = analyse(pcapOf(frames.filter((_f, i) => i + 1 !== 49)));
    const io = a.queues[1] as NvmeQueueReport;
    expect(io.neverCompleted.map((c) => [c.commandId, c.name, c.frame])).toEqual([[3, 'Write', 42]]);
    expect(io.completed).toBe(4);
    // The next command was sent while it was outstanding.
    expect(io.maxOutstanding).toBe(2);
  });

  test('a completion in a plain SEND where the SGL asked for invalidation: not done', () => {
    const changed = frames.map((f, i) => (i + 1 === 58 ? { ...f, data: withoutInvalidate(f.data) } : f));
    const io = analyse(pcapOf(changed)).queues[1] as NvmeQueueReport;
    expect(io.invalidation.asked).toBe(1);
    expect(io.invalidation.done).toBe(0);
    expect(io.invalidation.notDone.map((c) => c.commandId)).toEqual([4]);
  });

  test('a resent copy of a command capsule is the same command, answered once (go-back-N resends its PSN)', () => {
    const base = analyse(pcapOf(frames));
    const BTH = 14 + 20 + 8;
    // Every request of the I/O queue's host, sent a second time right after the last frame: the go-back-N of a lost ACK.
    const capsules = frames.filter((f) => f.data[BTH] === Opcode.RC_SEND_ONLY && f.data.length > 100);
    expect(capsules.length).toBeGreaterThan(2);
    const last = (frames[frames.length - 1] as (typeof frames)[number]).timestampNs;
    const resent = [...frames, ...capsules.map((f, i) => ({ ...f, timestampNs: last + BigInt(i + 1) * 1000n }))];
    const again = analyse(pcapOf(resent));
    expect(again.queues.map((q) => [q.queue, q.commands, q.neverCompleted.length])).toEqual(
      base.queues.map((q) => [q.queue, q.commands, q.neverCompleted.length]),
    );
  });

  test("an RDMA transfer that uses a key after the controller's SEND with Invalidate of it", () => {
    const again = frames[52] as (typeof frames)[number]; // frame 53: the RDMA WRITE FIRST into the invalidated region
    // A new request (a PSN of its own): a resent copy of frame 53 is no new use of the key (resent-filter.ts).
    const data = again.data.slice();
    const psnAt = 14 + 20 + 8 + 9;
    const psn = ((((data[psnAt] ?? 0) << 16) | ((data[psnAt + 1] ?? 0) << 8) | (data[psnAt + 2] ?? 0)) + 1000) & 0xffffff;
    data.set([psn >>> 16, (psn >>> 8) & 0xff, psn & 0xff], psnAt);
    const late = [...frames.slice(0, 58), { ...again, data, timestampNs: (frames[57] as (typeof frames)[number]).timestampNs + 1000n }, ...frames.slice(58)];
    const io = analyse(pcapOf(late)).queues[1] as NvmeQueueReport;
    expect(io.usedAfterInvalidation).toHaveLength(1);
    expect(io.usedAfterInvalidation[0]).toMatchObject({ frame: 59, commandId: null });
    // The key of the SEND with Invalidate (frame 58's IETH, after the BTH).
    const cqe = frames[57] as (typeof frames)[number];
    expect(io.usedAfterInvalidation[0]?.key).toBe(new DataView(cqe.data.buffer, cqe.data.byteOffset).getUint32(14 + 20 + 8 + 12));
  });
});

/** Frame `data` (Ethernet, IPv4, UDP, BTH, IETH, payload, ICRC) as a SEND ONLY without its IETH. */
function withoutInvalidate(data: Uint8Array): Uint8Array {
  const BTH = 14 + 20 + 8;
  expect(data[BTH]).toBe(Opcode.RC_SEND_ONLY_WITH_INVALIDATE);
  const out = new Uint8Array(data.length - 4);
  out.set(data.subarray(0, BTH + 12));
  out.set(data.subarray(BTH + 16), BTH + 12);
  out[BTH] = Opcode.RC_SEND_ONLY;
  const v = new DataView(out.buffer);
  v.setUint16(14 + 2, v.getUint16(14 + 2) - 4);
  v.setUint16(14 + 20 + 4, v.getUint16(14 + 20 + 4) - 4);
  v.setUint16(14 + 10, 0);
  let sum = 0;
  for (let i = 0; i < 20; i += 2) sum += v.getUint16(14 + i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  v.setUint16(14 + 10, ~sum & 0xffff);
  return out;
}

describe('roce analyze', () => {
  test('the report ends with the NVMe-oF commands of each queue; --json holds them as `nvme`', async () => {
    const text = await roce('analyze', FILE);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/\nNVMe-oF commands \(2 queues\):\n {2}queue 0 \(controller 198\.18\.0\.2 QP 0x[0-9a-f]{6}\), SQ size 32\n/);
    expect(text.out).toContain('    5 commands, 5 completed (1 with an error status); at most 1 outstanding of 32\n');
    expect(text.out).toMatch(/ {4}error: Read cid 2 \(frame 38\): [\d.]+ µs, LBA Out of Range \(frame 40\); 4096 B keyed\n/);
    expect(text.out).toContain('    invalidation asked (keyed SGL 0x4F): 1, done by SEND with Invalidate: 1\n');
    const json = await roce('analyze', '--json', FILE);
    expect(JSON.parse(json.out).nvme).toEqual(JSON.parse(JSON.stringify(analyse(FILE))));
    // -v lists every command.
    expect((await roce('analyze', '-v', FILE)).out).toMatch(
      / {4}Write cid 3 \(frame 42\): [\d.]+ µs, Success \(frame 49\); 4096 B keyed; RDMA 1 READ, 4 packets, 4096 B\n/,
    );
  });

  test('no NVMe-oF connection, no section; --decode-as without the CM finds the queues by QPN', async () => {
    const plain = await roce('analyze', path.resolve(__dirname, '..', '..', 'captures', 'rc-conversation.pcap'));
    expect(plain.out).not.toContain('NVMe-oF');
    // Frames 29 to 59: the I/O queue without its CM exchange.
    const noCm = pcapOf(records.filter((r) => r.index >= 29 && r.index <= 59).map((r) => ({ data: r.data, timestampNs: r.timestampNs })));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-nvme-'));
    const file = path.join(dir, 'io.pcap');
    fs.writeFileSync(file, noCm);
    try {
      expect((await roce('analyze', file)).out).not.toContain('NVMe-oF commands');
      // The QPNs of both ends, from the BTHs of frame 29 (to the controller) and 31 (to the host).
      const destQp = (r: CaptureRecord): number => new DataView(r.data.buffer, r.data.byteOffset).getUint32(14 + 20 + 8 + 4) & 0xffffff;
      const [controller, host] = [destQp(records[28] as CaptureRecord), destQp(records[30] as CaptureRecord)];
      const r = await roce('analyze', file, '--decode-as', `qpn=${controller}=nvme`, '--decode-as', `qpn=${host}=nvme`);
      expect(r.out).toMatch(/NVMe-oF commands \(1 queue\):\n {2}queue 1 \(decode-as /);
      expect(r.out).toContain('5 commands, 5 completed (1 with an error status)');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('roce ladder', () => {
  test("each NVMe-oF frame's label names its command, completion or data", async () => {
    const r = await roce('ladder', FILE, '--conversation', '3', '-o', '-');
    expect(r.code).toBe(0);
    const labels = [...r.out.matchAll(/class="lbl"[^>]*>([^<]*)</g)].map((m) => m[1]);
    expect(labels).toContain('SEND_LAST PSN 1422509 A · NVMe Fabrics Connect cid 0');
    expect(labels.filter((l) => / · NVMe data cid 3 \(Write\)$/.test(l ?? ''))).toHaveLength(5);
    expect(labels.some((l) => /^SEND_ONLY PSN \d+ A · NVMe CQE cid 2 \(Read\) LBA Out of Range$/.test(l ?? ''))).toBe(true);
    expect(labels.filter((l) => (l ?? '').startsWith('ACKNOWLEDGE')).every((l) => !(l ?? '').includes('NVMe'))).toBe(true);
    const plain = await roce('ladder', path.resolve(__dirname, '..', '..', 'captures', 'rc-conversation.pcap'), '-o', '-');
    expect(plain.out).not.toContain('NVMe');
  });
});
