/**
 * `roce probe` with rping as the live DUT, where the truth is known: the DUT is this stack's
 * `roce rping` (which interoperates with librdmacm's rping over the RDMA CM) in one network
 * namespace, the probe in the other, over a veth pair, with AF_PACKET and AF_XDP. The DUT runs the
 * command the probe names:
 *  - `rping -s` (DUT requester of the pings' READs and WRITEs), the probe its client: our READ
 *    response at PSN 1 of the first ping's 4-packet READ is dropped, and the DUT's READ retry
 *    starts at PSN 1, 1024 bytes into the buffer, for the 3072 bytes left (readRetry);
 *  - `rping -c -V` (DUT responder), the probe its server: our WRITE packet at PSN 6 is skipped, and
 *    the DUT NAKs the gap once, naming PSN 6 (nakGeneration); its -V finds the data intact.
 * Times are not asserted beyond the rules: the machine is shared and slow.
 *
 * @group netns
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pairPerFile } from '../support/netns';
import { testUnless } from '../support/skip';
import { e2eSkipReason, explain, HOST_DRIVERS, startRoce } from './harness';

const reason = e2eSkipReason();
const t = testUnless(reason);
const net = pairPerFile(reason, { mtu: 1500 });
let port = 21000 + Math.floor(Math.random() * 20000);
const later = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Fig {
  kind: string;
  psn: number;
  value: number | null;
  verdict: string;
  detail: string;
}
interface ProbeJson {
  ok: boolean;
  figures: Fig[];
  dut: { tool: string; role: string; driver: string };
  live: {
    error: string | null;
    dutCommand: string;
    dutIsServer: boolean;
    dutAttributes: { name: string; value: number; source: string }[];
    warnings: string[];
    ourCompletions: string[][];
  };
}

function scenarioFile(name: string, yaml: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'probe-rping-'));
  const f = path.join(dir, `${name}.yml`);
  fs.writeFileSync(f, yaml);
  return f;
}

// -S 4096 at the veth's RoCE MTU of 1024: a ping is READ (PSNs 0-3), SEND (4), WRITE (5-8), SEND (9).
const READ_RETRY = `name: rping-read-retry
description: rping -s reads our buffer; its second READ response is lost
dut:
  role: requester
  tool: rping
traffic:
  message-size: 4096
  num-msgs-per-qp: 2
  min-retransmit-timeout: 19
events:
  - type: drop-read-response
    psn: 1
`;

// The DUT's timeout is its CM's (our REQ's local ACK timeout, 19: 2.1 s); the scenario says so.
const READ_LOST = `name: rping-read-lost
description: rping -s's first READ request is lost; nothing follows it, its timer resends it
dut:
  role: requester
  tool: rping
traffic:
  message-size: 4096
  min-retransmit-timeout: 19
events:
  - type: drop
    psn: 0
`;

const WRITE_GAP = `name: rping-write-gap
description: rping -c answers our WRITE with a gap in it
dut:
  role: responder
  tool: rping
traffic:
  message-size: 4096
  num-msgs-per-qp: 2
  min-retransmit-timeout: 19
events:
  - type: skip
    psn: 6
`;

/** Resolves when `text` has appeared on the child's stdout (or rejects after `ms`). */
function waitForOutput(child: ReturnType<typeof startRoce>['child'], text: RegExp, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no ${text} within ${ms} ms: ${seen}`)), ms);
    child.stdout?.on('data', (d: Buffer) => {
      seen += d.toString();
      const m = text.exec(seen);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[0]);
      }
    });
  });
}

describe('roce probe against roce rping over a veth pair', () => {
  for (const [driver, label] of HOST_DRIVERS) {
    t(
      `${label}: rping -s as the DUT requester: our READ response lost, its READ retry from the missing PSN for the rest of the buffer`,
      async () => {
        const n = net();
        const pt = String(port++);
        const dut = startRoce(n.nsA, ['rping', '-s', '-a', n.ipA, '-p', pt, '-S', '4096', '-v', '--driver', driver, '--timeout', '20'], 40_000);
        await later(800);
        const probe = startRoce(
          n.nsB,
          ['probe', scenarioFile('read-retry', READ_RETRY), '--driver', driver, '--dev', n.ifB, '--dut', n.ipA, '--port', pt, '--json'],
          40_000,
        );
        const pr = await probe.done;
        const dr = await dut.done;
        if (pr.json === null) throw new Error(`probe: ${explain(pr)}\nDUT: ${explain(dr)}`);
        const j = pr.json as unknown as ProbeJson;
        expect({ code: pr.code, why: explain(pr) }).toMatchObject({ code: 0 });
        expect({ code: dr.code, why: explain(dr) }).toMatchObject({ code: 0 });
        expect(j.live.error).toBeNull();
        expect(j.dut).toMatchObject({ tool: 'rping', role: 'requester', driver });
        expect(j.live.dutIsServer).toBe(true);
        expect(j.live.dutCommand).toBe(`rping -s -a ${n.ipA} -p ${pt} -S 4096 -v`);
        // The DUT's retry count is our REQ's; its timeout the CM's 19, as the scenario says: no warning.
        expect(j.live.dutAttributes.find((a) => a.name === 'retry_cnt')?.source).toMatch(/^our CM REQ's retry count \(7\)/);
        expect(j.live.warnings).toEqual([]);
        expect(j.figures).toHaveLength(1);
        expect(j.figures[0]).toMatchObject({ kind: 'readRetry', psn: 1, value: 1, verdict: 'pass' });
        expect(j.figures[0]?.detail).toMatch(/VA \+1024 \(expected \+1024\), length 3072 \(expected 3072\)/);
        // Our client's SENDs: two buffer advertisements per ping, every one completed.
        expect(j.live.ourCompletions).toEqual([['SUCCESS', 'SUCCESS', 'SUCCESS', 'SUCCESS']]);
        // The DUT read what our client wrote, both pings, despite the lost response.
        const lines = dr.stdout.trimEnd().split('\n');
        expect(lines).toHaveLength(2);
        lines.forEach((l, i) => expect(l.startsWith(`server ping data: rdma-ping-${i}: `)).toBe(true));
      },
      60_000,
    );

    t(
      `${label}: rping -s as the DUT requester: its READ request lost, resent by its local ACK timer (the CM's 19) from PSN 0`,
      async () => {
        const n = net();
        const pt = String(port++);
        const dut = startRoce(n.nsA, ['rping', '-s', '-a', n.ipA, '-p', pt, '-S', '4096', '--driver', driver, '--timeout', '20'], 40_000);
        await later(800);
        const probe = startRoce(
          n.nsB,
          ['probe', scenarioFile('read-lost', READ_LOST), '--driver', driver, '--dev', n.ifB, '--dut', n.ipA, '--port', pt, '--json'],
          40_000,
        );
        const pr = await probe.done;
        const dr = await dut.done;
        if (pr.json === null) throw new Error(`probe: ${explain(pr)}\nDUT: ${explain(dr)}`);
        const j = pr.json as unknown as ProbeJson;
        expect({ code: pr.code, why: explain(pr) }).toMatchObject({ code: 0 });
        expect({ code: dr.code, why: explain(dr) }).toMatchObject({ code: 0 });
        expect(j.figures).toHaveLength(1);
        expect(j.figures[0]).toMatchObject({ kind: 'timeoutRetransmit', psn: 0, value: 0, verdict: 'pass' });
        expect(j.figures[0]?.detail).toMatch(/resent from PSN 0 \(first unacknowledged 0\) .* timeout 19 is 2147483\.648 µs/);
      },
      60_000,
    );

    t(
      `${label}: rping -c as the DUT responder: a gap in our WRITE draws one NAK naming the skipped PSN; its -V finds the data intact`,
      async () => {
        const n = net();
        const pt = String(port++);
        // Text output: the probe says when it listens and what the DUT is to run.
        const probe = startRoce(n.nsB, ['probe', scenarioFile('write-gap', WRITE_GAP), '--driver', driver, '--dev', n.ifB, '--port', pt], 40_000);
        const command = await waitForOutput(probe.child, /run on it: (rping .*)\n/, 20_000).catch(async (e: unknown) => {
          probe.kill();
          throw new Error(`${String(e)}\nprobe: ${explain(await probe.done)}`);
        });
        expect(command).toBe(`run on it: rping -c -a ${n.ipB} -p ${pt} -C 2 -S 4096 -v\n`);
        const dut = startRoce(
          n.nsA,
          ['rping', '-c', '-a', n.ipB, '-p', pt, '-C', '2', '-S', '4096', '-v', '-V', '--driver', driver, '--timeout', '20'],
          40_000,
        );
        const dr = await dut.done;
        const pr = await probe.done;
        expect({ code: dr.code, why: explain(dr) }).toMatchObject({ code: 0 });
        expect({ code: pr.code, why: explain(pr) }).toMatchObject({ code: 0 });
        expect(dr.stdout.trimEnd().split('\n')).toHaveLength(2);
        // The report's row: nakGeneration at PSN 6, one NAK, pass; the DUT's attributes from its CM.
        expect(pr.stdout).toMatch(/^scenario rping-write-gap: DUT responder \(rping\)/m);
        expect(pr.stdout).toMatch(/^nakGeneration\s+0\s+6\s.*\spass\s+IBTA vol\. 1 §9\.7\.5\.2\.2$/m);
        expect(pr.stdout).toMatch(/NAK for PSN 6 \(expected 6\) .* 1 NAK for the gap/);
        expect(pr.stdout).toMatch(
          /retry_cnt 7 \(the scenario; rping cannot be told: its REQ's retry count, 7 \(rping_init_conn_param\(\)\)|retry_cnt 7 \(its REQ's retry count, 7 \(rping_init_conn_param\(\)\), as the scenario asks\)/,
        );
        expect(pr.stdout).not.toMatch(/^DUT command:/m);
      },
      60_000,
    );
  }
});
