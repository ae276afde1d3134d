/**
 * Congestion control on a real network (issue 14): A → R → B (IP MTU 4200, RoCE MTU 4096), where
 * the router namespace R has a real bottleneck toward B (tc TBF at 200 Mbit/s, a 200 KB queue) and
 * an nftables rule that sets ECN CE on the RoCE frames it forwards above 20 MB/s (this kernel has
 * no RED; nftables marks by rate). `roce perftest write` runs twice over AF_PACKET: with
 * `--cc dcqcn-paper` on both ends (ECN-capable frames, CNPs for the marks, DCQCN on the real clock,
 * starting from 1 Gb/s) and without. With it, B's notification point answers the marks, A's
 * reaction point handles the CNPs and fewer requests are sent twice; without it, TBF drops and
 * go-back-N retransmits. B's `--pcap` shows the marks and CNPs to `roce analyze`. (The sender does
 * not yet settle at the bottleneck without drops: docs/congestion.md.)
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { type RoutedPath, createRoutedPath, destroyRoutedPath } from '../support/netns';
import { testUnless } from '../support/skip';
import { type ProcResult, e2eSkipReason, explain, startRoce } from './harness';
import { analyzeFile } from '../../analysis/analyzer';
import { analysisDocument } from '../../analysis/document';

const reason = e2eSkipReason();
const t = testUnless(reason);
let nextPort = 43000 + Math.floor(Math.random() * 2000);
let net: RoutedPath | null = null;
let dir = '';

function inRouter(n: RoutedPath, cmd: string, args: string[]): void {
  execFileSync('ip', ['netns', 'exec', n.nsR, cmd, ...args], { timeout: 10_000, stdio: ['ignore', 'pipe', 'pipe'] });
}

beforeAll(() => {
  if (reason !== null) return;
  net = createRoutedPath(4200);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-cc-routed-'));
  const toB = net.routerB as string;
  inRouter(net, 'tc', ['qdisc', 'add', 'dev', toB, 'root', 'tbf', 'rate', '200mbit', 'burst', '32kb', 'limit', '200kb']);
  inRouter(net, 'nft', ['add table inet roce_cc']);
  inRouter(net, 'nft', ['add chain inet roce_cc marking { type filter hook forward priority 0 ; }']);
  inRouter(net, 'nft', [`add rule inet roce_cc marking oifname "${toB}" udp dport 4791 counter limit rate over 20 mbytes/second burst 64 kbytes counter ip ecn set ce`]);
});
afterAll(() => {
  if (net !== null) destroyRoutedPath(net);
  net = null;
  if (dir !== '') fs.rmSync(dir, { recursive: true, force: true });
});

async function write(extra: string[], serverExtra: string[] = []): Promise<{ s: ProcResult; c: ProcResult }> {
  const n = net as RoutedPath;
  const common = ['--driver', 'packet', '--port', String(nextPort++), '--json', '--timeout', '20', ...extra];
  const args = ['perftest', 'write', '-s', '65536', '-n', '200', '-m', '4096'];
  const server = startRoce(n.nsB, [...args, '--dev', n.ifB, ...common, ...serverExtra], 120_000);
  const client = startRoce(n.nsA, [...args, n.ipB, '--dev', n.ifA, ...common], 120_000);
  const [s, c] = await Promise.all([server.done, client.done]);
  return { s, c };
}

const counter = (r: ProcResult, name: string): number => ((r.json?.['counters'] as Record<string, number> | undefined)?.[name] ?? 0);

t(
  'with --cc dcqcn the marks are answered by CNPs and the sender backs off; without it the bottleneck drops and go-back-N resends',
  async () => {
    const pcap = path.join(dir, 'b.pcap');
    const cc = await write(['--cc', 'dcqcn-paper', '--cc-line-rate', '1000'], ['--pcap', pcap]);
    expect({ code: cc.c.code, why: explain(cc.c) }).toMatchObject({ code: 0 });
    expect({ code: cc.s.code, why: explain(cc.s) }).toMatchObject({ code: 0 });
    // The write server's QP saw the router's marks and answered them; the client's handled the CNPs.
    const marked = counter(cc.s, 'np_ecn_marked_roce_packets');
    expect(marked).toBeGreaterThan(0);
    expect(counter(cc.s, 'np_cnp_sent')).toBeGreaterThan(0);
    expect(counter(cc.c, 'rp_cnp_handled')).toBeGreaterThan(0);
    // B's capture: the marked requests and the CNPs B sent, per requester.
    const doc = analysisDocument(analyzeFile(pcap), pcap);
    const g = doc.conversations.flatMap((c) => c.congestion);
    expect(g.reduce((a, x) => a + x.ceMarked, 0)).toBeGreaterThan(0);
    expect(g.reduce((a, x) => a + x.cnps, 0)).toBe(counter(cc.s, 'np_cnp_sent'));

    const plain = await write([]);
    expect({ code: plain.c.code, why: explain(plain.c) }).toMatchObject({ code: 0 });
    expect({ code: plain.s.code, why: explain(plain.s) }).toMatchObject({ code: 0 });
    // Not ECN-capable without congestion control: nothing answers the marks, TBF drops, go-back-N resends.
    expect(counter(plain.s, 'np_cnp_sent')).toBe(0);
    const resentPlain = counter(plain.c, 'retransmitted_pkts');
    expect(resentPlain).toBeGreaterThan(0);
    expect(counter(cc.c, 'retransmitted_pkts')).toBeLessThan(resentPlain);
    if (process.env['ROCE_CC_FIGURES'] === '1') console.log(JSON.stringify({ cc: { marked, cnps: counter(cc.s, 'np_cnp_sent'), handled: counter(cc.c, 'rp_cnp_handled'), resent: counter(cc.c, 'retransmitted_pkts'), gbps: cc.c.json?.['gbps'] }, plain: { resent: resentPlain, gbps: plain.c.json?.['gbps'] } }));
  },
  240_000,
);
