/**
 * Congestion control on a real network: A → R → B (IP MTU 4200, RoCE MTU 4096). The
 * router namespace R has a real bottleneck toward B, tc TBF at 200 Mbit/s with a 200 KB queue, and
 * in front of it the congestion point: test/support/bpf/queue_ecn_marker.bpf.c, a tc program that
 * keeps a copy of TBF's backlog and marks ECN-capable RoCE frames CE by RED on it (10 KB, 100 KB,
 * 20 %). This kernel has no RED qdisc; an nftables `limit rate over` rule marks the packets above
 * a rate, which are the very ones TBF then drops (docs/congestion.md).
 *
 * `roce perftest write` runs twice over AF_PACKET: with `--cc dcqcn-paper --cc-line-rate 400` on
 * both ends (the sender a 400 Mb/s NIC, twice the bottleneck: ECN-capable frames, CNPs for the
 * marks, DCQCN paced on the real clock) and without. With it the sender settles under the
 * bottleneck: TBF drops next to nothing and go-back-N resends next to nothing. Without it TBF drops
 * thousands of frames and go-back-N resends whole windows. B's `--pcap` of the first run shows the
 * marks and CNPs to `roce analyze`, A's of the second the resends.
 *
 * @group netns
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { type RoutedPath, createRoutedPath, destroyRoutedPath } from '../support/netns';
import { missingToolReason, testUnless } from '../support/skip';
import { type ProcResult, e2eSkipReason, explain, startRoce } from './harness';
import { analyzeFile } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';

const MARKER = path.join(__dirname, '..', 'support', 'bpf', 'queue_ecn_marker.bpf.c');
const RATE_MBIT = 200;
const LIMIT_BYTES = 200_000;

const reason = e2eSkipReason() ?? missingToolReason('clang', 'clang is needed to build the queue ECN marker (sudo scripts/setup-system.sh installs it)');
const t = testUnless(reason);
let nextPort = 43000 + Math.floor(Math.random() * 2000);
let net: RoutedPath | null = null;
let dir = '';

function inRouter(n: RoutedPath, cmd: string, args: string[]): string {
  return execFileSync('ip', ['netns', 'exec', n.nsR, cmd, ...args], { timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
}

/** Frames TBF has dropped so far (tc -s qdisc). */
function tbfDrops(n: RoutedPath): number {
  const m = /dropped (\d+)/.exec(inRouter(n, 'tc', ['-s', 'qdisc', 'show', 'dev', n.routerB as string, 'root']));
  if (m === null) throw new Error('tc -s qdisc shows no drop count');
  return Number(m[1]);
}

beforeAll(() => {
  if (reason !== null) return;
  net = createRoutedPath(4200);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-cc-routed-'));
  const obj = path.join(dir, 'marker.o');
  const multiarch = (() => {
    try {
      return execFileSync('gcc', ['-print-multiarch'], { encoding: 'utf8', timeout: 10_000 }).trim() || 'x86_64-linux-gnu';
    } catch {
      return 'x86_64-linux-gnu';
    }
  })();
  execFileSync(
    'clang',
    [
      '-O2',
      '-g',
      '-Wall',
      '-target',
      'bpf',
      `-I/usr/include/${multiarch}`,
      `-DRATE_BPS=${RATE_MBIT * 1_000_000}ULL`,
      `-DLIMIT_BYTES=${LIMIT_BYTES}ULL`,
      '-DKMIN_BYTES=10000ULL',
      '-DKMAX_BYTES=100000ULL',
      '-DPMAX_PPM=200000ULL',
      '-c',
      MARKER,
      '-o',
      obj,
    ],
    { timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const toB = net.routerB as string;
  inRouter(net, 'tc', ['qdisc', 'add', 'dev', toB, 'root', 'tbf', 'rate', `${RATE_MBIT}mbit`, 'burst', '10kb', 'limit', String(LIMIT_BYTES)]);
  inRouter(net, 'tc', ['qdisc', 'add', 'dev', toB, 'clsact']);
  inRouter(net, 'tc', ['filter', 'add', 'dev', toB, 'egress', 'bpf', 'da', 'obj', obj, 'sec', 'tc']);
}, 90_000);
afterAll(() => {
  if (net !== null) destroyRoutedPath(net);
  net = null;
  if (dir !== '') fs.rmSync(dir, { recursive: true, force: true });
});

interface Run {
  s: ProcResult;
  c: ProcResult;
  drops: number;
}

async function write(extra: string[], serverExtra: string[] = [], clientExtra: string[] = []): Promise<Run> {
  const n = net as RoutedPath;
  const before = tbfDrops(n);
  const common = ['--driver', 'packet', '--port', String(nextPort++), '--json', '--timeout', '30', ...extra];
  const args = ['perftest', 'write', '-s', '65536', '-n', '400', '-m', '4096'];
  const server = startRoce(n.nsB, [...args, '--dev', n.ifB, ...common, ...serverExtra], 150_000);
  const client = startRoce(n.nsA, [...args, n.ipB, '--dev', n.ifA, ...common, ...clientExtra], 150_000);
  const [s, c] = await Promise.all([server.done, client.done]);
  return { s, c, drops: tbfDrops(n) - before };
}

const counter = (r: ProcResult, name: string): number => (r.json?.['counters'] as Record<string, number> | undefined)?.[name] ?? 0;
const gbps = (r: ProcResult): number => Number(r.json?.['gbps'] ?? 0);

t(
  'with --cc dcqcn the sender settles under the bottleneck: marks answered by CNPs, next to no drops or resends; without it TBF drops and go-back-N resends',
  async () => {
    const pcapB = path.join(dir, 'b.pcap');
    const cc = await write(['--cc', 'dcqcn-paper', '--cc-line-rate', '400'], ['--pcap', pcapB]);
    expect({ code: cc.c.code, why: explain(cc.c) }).toMatchObject({ code: 0 });
    expect({ code: cc.s.code, why: explain(cc.s) }).toMatchObject({ code: 0 });
    // The write server's QP saw the router's marks and answered them; the client's handled the CNPs.
    const marked = counter(cc.s, 'np_ecn_marked_roce_packets');
    expect(marked).toBeGreaterThan(0);
    expect(counter(cc.s, 'np_cnp_sent')).toBeGreaterThan(0);
    expect(counter(cc.c, 'rp_cnp_handled')).toBeGreaterThan(0);
    // B's capture: the marked requests and the CNPs B sent, per requester.
    const doc = analysisDocument(analyzeFile(pcapB), pcapB);
    const g = doc.conversations.flatMap((c) => c.congestion);
    expect(g.reduce((a, x) => a + x.ceMarked, 0)).toBeGreaterThan(0);
    // The CNPs B counted are its capture's, give or take the few at the close: marked frames still
    // arrive while the run reads its counters and stops its capture.
    const cnpsCaptured = g.reduce((a, x) => a + x.cnps, 0);
    expect(Math.abs(cnpsCaptured - counter(cc.s, 'np_cnp_sent'))).toBeLessThanOrEqual(8);

    const pcapA = path.join(dir, 'a.pcap');
    const plain = await write([], [], ['--pcap', pcapA]);
    expect({ code: plain.c.code, why: explain(plain.c) }).toMatchObject({ code: 0 });
    expect({ code: plain.s.code, why: explain(plain.s) }).toMatchObject({ code: 0 });
    // Not ECN-capable without congestion control: nothing is marked, TBF drops, go-back-N resends.
    expect(counter(plain.s, 'np_ecn_marked_roce_packets')).toBe(0);
    expect(counter(plain.s, 'np_cnp_sent')).toBe(0);
    const resentPlain = counter(plain.c, 'retransmitted_pkts');
    expect(plain.drops).toBeGreaterThan(100);
    expect(resentPlain).toBeGreaterThan(100);
    const plainDoc = analysisDocument(analyzeFile(pcapA), pcapA);
    expect(plainDoc.summary.retransmissions).toBeGreaterThan(0);
    // Same machine, same moment: congestion control drops and resends an order of magnitude less,
    // and moves the data faster, because it stops wasting the bottleneck on frames TBF drops.
    const figures = {
      cc: {
        marked,
        cnps: counter(cc.s, 'np_cnp_sent'),
        handled: counter(cc.c, 'rp_cnp_handled'),
        drops: cc.drops,
        resent: counter(cc.c, 'retransmitted_pkts'),
        gbps: gbps(cc.c),
      },
      plain: { drops: plain.drops, resent: resentPlain, gbps: gbps(plain.c) },
    };
    if (process.env['ROCE_CC_FIGURES'] === '1') console.log(JSON.stringify(figures));
    expect(figures.cc.drops * 10).toBeLessThan(figures.plain.drops);
    expect(figures.cc.resent * 10).toBeLessThan(figures.plain.resent);
    expect(figures.cc.gbps).toBeGreaterThan(figures.plain.gbps);
  },
  360_000,
);
