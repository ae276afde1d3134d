/**
 * `roce perftest --run_infinitely`: both ends in one spawned process over the memory test mode
 * (test/support/perftest-pair.js, on the built CLI); the client prints a report line for every -D
 * period, after perftest's header with the addresses, until it gets SIGINT, then ends cleanly: what was outstanding completes, the final report
 * goes to the server, both exit 0. No timing is asserted: the test waits for two lines, however
 * long they take, within a generous bound.
 */
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { freePort } from '../oob/support';

const PAIR = path.resolve(__dirname, '..', 'support', 'perftest-pair.js');
const ROW = /^ 65536\s+(\d+)\s+0\.00\s+(\d+\.\d\d)\s+(\d+\.\d{6})$/;

test.each([['SIGINT'], ['SIGTERM']] as const)(
  'a line per period until %s, then a clean end with the final report on both sides',
  async (signal) => {
    const port = String(await freePort());
    const child = spawn(process.execPath, [PAIR, 'write', port, '--run_infinitely', '-D', '0.002', '-s', '65536', '--timeout', '30'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });
    let stdout = '';
    let stderr = '';
    let rows = 0;
    let sent = false;
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      rows = stdout.split('\n').filter((l) => ROW.test(l)).length;
      if (rows >= 2 && !sent) {
        sent = true;
        child.kill(signal);
      }
    });
    const closed = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('close', (code, sig) => r({ code, signal: sig })));
    expect(stderr).toBe('');
    expect(closed).toEqual({ code: 0, signal: null });
    const lines = stdout.split('\n');
    // As perftest: its header with the addresses once the connection is made, then the table's
    // header and the period lines, then the final report (without a second header).
    expect(lines[0]).toBe('-'.repeat(86));
    expect(lines[1]).toMatch(/ib_write_bw \(roce-ts\), client/);
    expect(lines.filter((l) => /ib_write_bw \(roce-ts\), client/.test(l))).toHaveLength(1);
    const addressesAt = lines.findIndex((l) => /^ remote address: LID 0000 QPN 0x[0-9a-f]{6} PSN 0x[0-9a-f]{6}/.test(l));
    const tableAt = lines.findIndex((l) => /^ #bytes\s+#iterations\s+BW peak\[MiB\/sec\]\s+BW average\[MiB\/sec\]\s+MsgRate\[Mpps\]$/.test(l));
    const reportAt = lines.findIndex((l) => /Ran until stopped \(--run_infinitely\)/.test(l));
    expect(addressesAt).toBeGreaterThan(1);
    expect(tableAt).toBeGreaterThan(addressesAt);
    expect(reportAt).toBeGreaterThan(tableAt);
    const periods = lines
      .slice(tableAt, reportAt)
      .filter((l) => ROW.test(l))
      .map((l) => ROW.exec(l) as RegExpExecArray);
    expect(periods.length).toBeGreaterThanOrEqual(2);
    for (const m of periods) {
      expect(Number(m[1])).toBeGreaterThan(0);
      expect(Number(m[2])).toBeGreaterThan(0);
    }
    expect(stdout).toMatch(/Ran until stopped \(--run_infinitely\), a line every 0\.002 s; the figures count every message of the run/);
    // The client's final figures (the whole run), and the server's copy of them.
    const final = lines.filter((l) => /^ 65536\s/.test(l)).pop() as string;
    const total = Number(final.trim().split(/\s+/)[1]);
    expect(total).toBeGreaterThanOrEqual(periods.reduce((a, m) => a + Number(m[1]), 0));
    expect(stdout).toMatch(/server\|\s+ib_write_bw \(roce-ts\), server/);
    expect(stdout).toContain(`server|  65536      ${String(total).padEnd(15)}`);
    expect(lines).toContain('server status 0');
  },
  150_000,
);
