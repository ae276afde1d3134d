/**
 * `--tclass` and `--ecn` on the data-path commands, and `--pcap` checked against tcpdump, between
 * two namespaces over a veth pair. The client's frames carry the DSCP and ECN asked
 * for (the IPv4 header's TOS byte is the traffic class), the server's keep 0; what the client
 * recorded over AF_XDP with `--pcap` is, frame for frame, what tcpdump saw arrive at and leave
 * the other end (AF_PACKET there, which tcpdump can watch).
 *
 * @group netns
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { type NetnsPair, createNetnsPair, destroyNetnsPair } from '../support/netns';
import { missingToolReason, testUnless } from '../support/skip';
import { e2eSkipReason, explain, runPair } from './harness';
import { readCapture } from '../../packets/pcap';
import { type RocePacket, decodeFrame, packetAddresses } from '../../packets/decode';

const base = e2eSkipReason();
const t = testUnless(base);
const tcpdumpReason = missingToolReason('tcpdump', 'tcpdump is not installed');
const tt = testUnless(base ?? tcpdumpReason);

function roce(file: string): { p: RocePacket; bytes: string }[] {
  const r = readCapture(fs.readFileSync(file));
  expect(r.error).toBeNull();
  const out: { p: RocePacket; bytes: string }[] = [];
  for (const rec of r.records) {
    const p = decodeFrame(rec.data);
    if (p.roce) out.push({ p, bytes: Buffer.from(rec.data).toString('hex') });
  }
  return out;
}

let dir = '';
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-tclass-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('traffic class and ECN over a veth', () => {
  let net: NetnsPair | null = null;
  beforeAll(() => {
    if (base === null) net = createNetnsPair({ mtu: 1500 });
  });
  afterAll(() => {
    if (net !== null) destroyNetnsPair(net);
    net = null;
  });

  for (const [cmd, args, tclass, ecn, dscp, ecnBits] of [
    ['pingpong', ['-s', '1024', '-n', '20'], '0x68', 'ect1', 0x1a, 1],
    ['perftest', ['write', '-s', '4096', '-n', '20'], '184', 'ect0', 46, 2],
  ] as const) {
    t(
      `${cmd} --tclass ${tclass} --ecn ${ecn}: the client's frames carry DSCP ${dscp} and ECN ${ecnBits}, the server's 0`,
      async () => {
        const n = net as NetnsPair;
        const file = path.join(dir, `${cmd}-client.pcap`);
        const { server, client } = await runPair(n, cmd, args, { driver: 'packet', sideArgs: { client: ['--tclass', tclass, '--ecn', ecn, '--pcap', file] } });
        expect({ code: client.code, why: explain(client) }).toMatchObject({ code: 0 });
        expect({ code: server.code, why: explain(server) }).toMatchObject({ code: 0 });
        const frames = roce(file).map((x) => x.p);
        const mine = frames.filter((p) => packetAddresses(p).src === n.ipA);
        const theirs = frames.filter((p) => packetAddresses(p).src === n.ipB);
        expect(mine.length).toBeGreaterThan(0);
        expect(theirs.length).toBeGreaterThan(0);
        for (const p of mine) expect({ dscp: p.ipv4?.dscp, ecn: p.ipv4?.ecn, icrc: p.icrcOk }).toEqual({ dscp, ecn: ecnBits, icrc: true });
        for (const p of theirs) expect({ dscp: p.ipv4?.dscp, ecn: p.ipv4?.ecn }).toEqual({ dscp: 0, ecn: 0 });
      },
      40_000,
    );
  }

  t(
    'perftest -R --tclass 104 on the client: the REQ carries it, so both QPs of the CM connection send DSCP 26',
    async () => {
      const n = net as NetnsPair;
      const file = path.join(dir, 'perftest-cm-client.pcap');
      const { server, client } = await runPair(n, 'perftest', ['write', '-R', '-s', '4096', '-n', '20'], {
        driver: 'packet',
        sideArgs: { client: ['--tclass', '104', '--pcap', file] },
      });
      expect({ code: client.code, why: explain(client) }).toMatchObject({ code: 0 });
      expect({ code: server.code, why: explain(server) }).toMatchObject({ code: 0 });
      // The test QP pair's frames (the JSON's QPNs; not the CM's MADs on QP 1, nor the communication
      // QP's, which perftest connects before it sets the option).
      const qpn = (out: string): number => (JSON.parse(out.trim().split('\n').pop() as string) as { local: { qpn: number } }).local.qpn;
      const [cq, sq] = [qpn(client.stdout), qpn(server.stdout)];
      const frames = roce(file).map((x) => x.p);
      const toServer = frames.filter((p) => p.bth?.destQp === sq);
      const toClient = frames.filter((p) => p.bth?.destQp === cq);
      expect(toServer.length).toBeGreaterThanOrEqual(20);
      expect(toClient.length).toBeGreaterThan(0);
      for (const p of [...toServer, ...toClient]) expect({ dscp: p.ipv4?.dscp, ecn: p.ipv4?.ecn }).toEqual({ dscp: 26, ecn: 0 });
    },
    40_000,
  );

  tt(
    '--pcap over AF_XDP on one end equals, frame for frame, what tcpdump sees on the other end',
    async () => {
      const n = net as NetnsPair;
      const mine = path.join(dir, 'xdp-client.pcap');
      const dumped = path.join(dir, 'tcpdump-server.pcap');
      // All UDP, so that the probes below (to the discard port, not RoCE) show when tcpdump records.
      // --immediate-mode: packets reach the file as they arrive, not in blocks that SIGINT would
      // leave unread; its ring holds buffer/snaplen frames, so a 9000-byte snaplen and a 32 MB buffer
      // (3 600 frames) rather than the defaults' 262144 and 2 MB (8 frames: a loaded machine drops).
      const dump: ChildProcess = spawn(
        'timeout',
        ['60', 'ip', 'netns', 'exec', n.nsB, 'tcpdump', '-i', n.ifB, '--immediate-mode', '-s', '9000', '-B', '32768', '-U', '-n', '-w', dumped, 'udp'],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let dumpErr = '';
      dump.stderr?.on('data', (d: Buffer) => {
        dumpErr += d.toString();
      });
      const exited = new Promise<void>((resolve) => dump.once('exit', () => resolve()));
      // "listening on" is printed before every packet reaches the file on a loaded machine: probe until one has.
      const recorded = (): number => {
        try {
          return readCapture(fs.readFileSync(dumped)).records.length;
        } catch {
          return 0;
        }
      };
      const until = Date.now() + 20_000;
      while (recorded() === 0) {
        if (Date.now() > until) throw new Error(`tcpdump recorded no probe within 20 s: ${dumpErr}`);
        spawnSync(
          'ip',
          ['netns', 'exec', n.nsA, process.execPath, '-e', `const s=require('dgram').createSocket('udp4');s.send('probe',9,'${n.ipB}',()=>s.close())`],
          { timeout: 5000 },
        );
        await new Promise((r) => setTimeout(r, 200));
      }
      try {
        const { server, client } = await runPair(n, 'pingpong', ['-s', '2048', '-n', '50'], {
          driver: 'xdp',
          sideArgs: { client: ['--pcap', mine], server: ['--driver', 'packet'] },
        });
        expect({ code: client.code, why: explain(client) }).toMatchObject({ code: 0 });
        expect({ code: server.code, why: explain(server) }).toMatchObject({ code: 0 });
        // tcpdump reads the kernel's ring in blocks: wait until it has written as many RoCE frames as
        // --pcap holds (a loaded machine may take a while), not a fixed time; SIGINT drops what it has
        // not read yet.
        const want = roce(mine).length;
        const settle = Date.now() + 15_000;
        const written = (): number => {
          try {
            // A file tcpdump is still writing may end in half a record: count what is whole.
            return readCapture(fs.readFileSync(dumped)).records.filter((rec) => decodeFrame(rec.data).roce).length;
          } catch {
            return 0;
          }
        };
        while (written() < want && Date.now() < settle) await new Promise((r) => setTimeout(r, 100));
      } finally {
        dump.kill('SIGINT');
        await exited;
      }
      const a = roce(mine).map((x) => x.bytes);
      const b = roce(dumped).map((x) => x.bytes);
      if (b.length === 0) throw new Error(`tcpdump recorded no RoCE frame (${recorded()} records): ${dumpErr}`);
      expect(a.length).toBeGreaterThanOrEqual(100); // 50 SENDs each way at least
      // A frame tcpdump's own ring dropped is not one the link lost: say so rather than show a diff.
      const kernelDrops = Number(/(\d+) packets? dropped by kernel/.exec(dumpErr)?.[1] ?? 0);
      if (kernelDrops > 0) throw new Error(`tcpdump's capture ring dropped ${kernelDrops} packets, so its file is not the link's record: ${dumpErr}`);
      expect(new Set(a)).toEqual(new Set(b));
      expect(a).toHaveLength(b.length);
    },
    60_000,
  );
});
