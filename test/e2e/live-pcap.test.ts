/**
 * `--pcap FILE` on the live commands, between two namespaces over a veth pair, with AF_PACKET and
 * AF_XDP (whose frames tcpdump could not see): each end's file holds what it sent and what it
 * received, both directions, with real-clock timestamps; `roce decode` and tshark read it; the
 * ring (`--pcap-count`) keeps exactly the last N frames; an RDMA CM tool's file shows its MADs.
 *
 * @group netns
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type NetnsPair, pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { type ProcResult, ROOT, e2eSkipReason, explain, runPair, startRoce } from './harness';
import { readCapture } from '../../packets/pcap';
import { type RocePacket, decodeFrame, packetAddresses } from '../../packets/decode';

const reason = e2eSkipReason();
const t = testUnless(reason);
const hasTshark = spawnSync('tshark', ['-v'], { stdio: 'ignore' }).status === 0;
const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Seen {
  ns: bigint;
  p: RocePacket;
  src: string;
  dst: string;
}

function roceFrames(file: string): Seen[] {
  const r = readCapture(fs.readFileSync(file));
  expect(r.error).toBeNull();
  const out: Seen[] = [];
  for (const rec of r.records) {
    const p = decodeFrame(rec.data);
    if (!p.roce) continue;
    out.push({ ns: rec.timestampNs, p, ...packetAddresses(p) });
  }
  return out;
}

let dir = '';
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-live-pcap-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

for (const [driver, label] of [
  ['packet', 'AF_PACKET'],
  ['xdp', 'AF_XDP'],
] as const) {
  describe(`--pcap over ${label} between two namespaces`, () => {
    const net = pairPerFile(reason, { mtu: 1500 });

    t(
      'pingpong: each end records both directions, in PSN order, with real-clock times; decode and tshark read it',
      async () => {
        const n = net();
        const cfile = path.join(dir, `pingpong-${driver}-client.pcap`);
        const sfile = path.join(dir, `pingpong-${driver}-server.pcap`);
        const before = BigInt(Date.now()) * 1_000_000n;
        const { server, client } = await runPairWithFiles(n, driver, ['-s', '1024', '-n', '50'], sfile, cfile);
        const after = BigInt(Date.now()) * 1_000_000n;
        expect({ code: client.code, why: explain(client) }).toMatchObject({ code: 0 });
        expect({ code: server.code, why: explain(server) }).toMatchObject({ code: 0 });
        for (const [file, res, me, peer] of [
          [cfile, client, n.ipA, n.ipB],
          [sfile, server, n.ipB, n.ipA],
        ] as const) {
          const seen = roceFrames(file);
          const sends = seen.filter((s) => s.p.info?.name === 'RC_SEND_ONLY');
          const acks = seen.filter((s) => s.p.info?.name === 'RC_ACKNOWLEDGE');
          // rc_pingpong: 50 SENDs each way, each acknowledged.
          const mine = sends.filter((s) => s.src === me && s.dst === peer);
          const theirs = sends.filter((s) => s.src === peer && s.dst === me);
          expect([mine.length, theirs.length]).toEqual([50, 50]);
          for (const list of [mine, theirs]) for (let i = 1; i < list.length; i++) expect(list[i]!.p.bth!.psn).toBe((list[i - 1]!.p.bth!.psn + 1) & 0xffffff);
          expect(acks.some((s) => s.src === me) && acks.some((s) => s.src === peer)).toBe(true);
          for (let i = 1; i < seen.length; i++) expect(seen[i]!.ns >= seen[i - 1]!.ns).toBe(true);
          expect(seen[0]!.ns >= before - 1_000_000_000n && seen[seen.length - 1]!.ns <= after).toBe(true);
          const total = readCapture(fs.readFileSync(file)).records.length;
          expect(res.json?.['pcap']).toEqual({ file, frames: total, dropped: 0, bytes: fs.statSync(file).size });
          const dec = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'roce.js'), 'decode', file], { encoding: 'utf8', timeout: 20_000 });
          expect(dec.status).toBe(0);
          expect(dec.stdout.trimEnd().split('\n').length).toBeGreaterThanOrEqual(total);
          if (hasTshark) {
            const ts = execFileSync('tshark', ['-r', file, '-T', 'fields', '-e', 'frame.number'], { encoding: 'utf8', timeout: 30_000 });
            expect(ts.trim().split('\n')).toHaveLength(total);
          }
        }
      },
      60_000,
    );

    t(
      'perftest write with --pcap-count 10: the file holds exactly the last 10 frames, the rest counted as dropped',
      async () => {
        const n = net();
        const cfile = path.join(dir, `ring-${driver}-client.pcap`);
        const sfile = path.join(dir, `ring-${driver}-server.pcap`);
        const { server, client } = await runPairWithFiles(n, driver, ['write', '-s', '4096', '-n', '200'], sfile, cfile, { client: ['--pcap-count', '10'] });
        expect({ code: client.code, why: explain(client) }).toMatchObject({ code: 0 });
        expect({ code: server.code, why: explain(server) }).toMatchObject({ code: 0 });
        const recs = readCapture(fs.readFileSync(cfile)).records;
        expect(recs).toHaveLength(10);
        const pc = client.json?.['pcap'] as { frames: number; dropped: number };
        expect(pc.frames).toBe(10);
        // 200 WRITEs of 4 KiB at MTU 1024 are 800 request packets alone.
        expect(pc.dropped).toBeGreaterThan(800);
        // The end of the run, not its start: the last ACK in the client's ring is the last ACK the
        // server sent (the server's capture has no ring), the one that completed the final WRITE.
        const lastAck = (ps: RocePacket[], from: string): number | undefined =>
          ps
            .filter((p) => p.info?.name === 'RC_ACKNOWLEDGE' && packetAddresses(p).src === from)
            .map((p) => p.bth!.psn)
            .pop();
        const ring = recs.map((r) => decodeFrame(r.data)).filter((p): p is RocePacket => p.roce);
        const full = roceFrames(sfile).map((x) => x.p);
        expect(server.json?.['pcap']).toMatchObject({ dropped: 0 });
        expect(lastAck(ring, n.ipB)).toBeDefined();
        expect(lastAck(ring, n.ipB)).toBe(lastAck(full, n.ipB));
      },
      60_000,
    );

    t(
      'rping -C 3 with --pcap: the CM MADs (QP 1) and the pings are in the file',
      async () => {
        const n = net();
        const sfile = path.join(dir, `rping-${driver}-server.pcap`);
        const port = driver === 'packet' ? '7274' : '7275';
        const server = startRoce(n.nsB, ['rping', '-s', '-a', n.ipB, '-p', port, '--driver', driver, '--timeout', '10', '--json', '--pcap', sfile], 30_000);
        await later(800);
        const c = await startRoce(n.nsA, ['rping', '-c', '-a', n.ipB, '-p', port, '-C', '3', '--driver', driver, '--timeout', '10'], 30_000).done;
        const s = await server.done;
        expect({ code: c.code, why: explain(c) }).toMatchObject({ code: 0 });
        expect({ code: s.code, why: explain(s) }).toMatchObject({ code: 0 });
        const seen = roceFrames(sfile);
        const mads = seen.filter((x) => x.p.bth?.destQp === 1);
        // REQ in, REP out, RTU in at least; DREQ/DREP at the end.
        expect(mads.filter((x) => x.dst === n.ipB).length).toBeGreaterThanOrEqual(2);
        expect(mads.filter((x) => x.src === n.ipB).length).toBeGreaterThanOrEqual(1);
        expect(seen.some((x) => x.p.info?.name === 'RC_RDMA_READ_REQUEST' && x.src === n.ipB)).toBe(true);
      },
      40_000,
    );

    t(
      'perftest --run_infinitely with --pcap: SIGINT ends the run cleanly, the final report goes out and the file is written',
      async () => {
        const n = net();
        const cfile = path.join(dir, `infinite-${driver}-client.pcap`);
        const ready = path.join(dir, `infinite-${driver}-ready`);
        const port = driver === 'packet' ? '7276' : '7277';
        const common = ['write', '--run_infinitely', '-D', '0.2', '-s', '4096', '--driver', driver, '--port', port, '--timeout', '10'];
        const server = startRoce(n.nsB, ['perftest', ...common, '--dev', n.ifB], 60_000, { ROCE_READY_FILE: ready });
        // The server listens once it has written its port (apps/host: ROCE_READY_FILE); bounded by the harness's timeout.
        while (!fs.existsSync(ready) && server.child.exitCode === null) await later(50);
        const client = startRoce(n.nsA, ['perftest', ...common, n.ipB, '--dev', n.ifA, '--pcap', cfile], 60_000);
        let periodRows = 0;
        let out = '';
        client.child.stdout?.on('data', (d: Buffer) => {
          out += d.toString();
          periodRows = out.split('\n').filter((l) => /^ 4096\s+\d+\s+0\.00\s/.test(l)).length;
        });
        // Two period lines, however long they take (the harness's timeout bounds the wait).
        while (periodRows < 2 && client.child.exitCode === null) await later(50);
        client.kill('SIGINT');
        const [c, sv] = await Promise.all([client.done, server.done]);
        expect({ code: c.code, signal: c.signal, why: explain(c) }).toMatchObject({ code: 0, signal: null });
        expect({ code: sv.code, why: explain(sv) }).toMatchObject({ code: 0 });
        expect(c.stdout).toMatch(/Ran until stopped \(--run_infinitely\)/);
        // The capture was closed by the run's own end: both directions, the WRITEs and their ACKs.
        const seen = roceFrames(cfile);
        expect(seen.filter((x) => x.src === n.ipA && x.p.info?.name.startsWith('RC_RDMA_WRITE') === true).length).toBeGreaterThan(0);
        expect(seen.some((x) => x.src === n.ipB && x.p.info?.name === 'RC_ACKNOWLEDGE')).toBe(true);
      },
      90_000,
    );
  });
}

/** runPair with a different --pcap file on each side, and more flags for either. */
async function runPairWithFiles(
  n: NetnsPair,
  driver: 'packet' | 'xdp',
  args: readonly string[],
  serverFile: string,
  clientFile: string,
  extra: { server?: readonly string[]; client?: readonly string[] } = {},
): Promise<{ server: ProcResult; client: ProcResult }> {
  const cmd = args[0] === 'write' ? 'perftest' : 'pingpong';
  return runPair(n, cmd, args, {
    driver,
    timeoutMs: 30_000,
    sideArgs: { server: ['--pcap', serverFile, ...(extra.server ?? [])], client: ['--pcap', clientFile, ...(extra.client ?? [])] },
  });
}
