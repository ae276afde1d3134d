/**
 * tshark reads what the in-memory link's pcap tap writes to a file as RoCE v2: every frame of
 * both directions, with the opcodes and PSNs that were sent (the tap itself is tested in
 * test/nic-driver/memory-link.test.ts).
 *
 * @group tshark
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { VirtualClock } from '../../base/clock';
import { createMemoryLink } from '../../nic-driver/memory-link';
import { PcapTap } from '../../nic-driver/pcap-tap';
import { buildRoceV2Frame } from '../../packets/build';
import { missingToolReason, testUnless } from '../support/skip';

const SEND_ONLY = 0x04;
const ACK = 0x11;
const MAC_A = 0x02_00_00_00_00_0a;
const MAC_B = 0x02_00_00_00_00_0b;

/** `n` SEND Onlys a→b and `n` ACKs b→a, interleaved, through a link whose tap writes `file`; ECN CE on half the ACKs. */
function writeCapture(file: string, n: number): void {
  const clock = new VirtualClock();
  const tap = PcapTap.toFile(file);
  const link = createMemoryLink({ clock, tap, seed: 4, faults: { bToA: { ecnCe: 0.5 } } });
  link.a.setRxHandler(() => link.a.rxBurst(1 << 30));
  link.b.setRxHandler(() => link.b.rxBurst(1 << 30));
  for (let i = 0; i < n; i++) {
    const payload = new Uint8Array(32 + i).fill(i);
    clock.schedule(i * 1000, () =>
      link.a.txBurst([
        buildRoceV2Frame({
          eth: { src: MAC_A, dst: MAC_B },
          ip: { version: 4, src: '10.0.0.1', dst: '10.0.0.2', ecn: 2 },
          bth: { opcode: SEND_ONLY, destQp: 0x11, psn: i },
          payload,
        }),
      ]),
    );
    clock.schedule(i * 1000 + 500, () =>
      link.b.txBurst([
        buildRoceV2Frame({
          eth: { src: MAC_B, dst: MAC_A },
          ip: { version: 4, src: '10.0.0.2', dst: '10.0.0.1', ecn: 2 },
          bth: { opcode: ACK, destQp: 0x11, psn: i },
          aeth: { syndrome: 0x1f, msn: 1 },
        }),
      ]),
    );
  }
  clock.runUntilIdle();
  tap.close();
}

testUnless(missingToolReason('tshark', 'tshark is not installed (scripts/setup-system.sh installs it)'))("tshark reads the tap's file as RoCE v2", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-tap-tshark-'));
  try {
    const file = path.join(dir, 'link.pcap');
    writeCapture(file, 20);
    const out = execFileSync('tshark', ['-r', file, '-T', 'fields', '-e', 'infiniband.bth.opcode', '-e', 'infiniband.bth.psn'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(40);
    expect(lines.filter((l) => l.startsWith('17\t'))).toHaveLength(20); // RC ACKNOWLEDGE
    expect(lines.filter((l) => l.startsWith('4\t')).map((l) => Number(l.split('\t')[1]))).toEqual(Array.from({ length: 20 }, (_, i) => i)); // SEND Only, PSN 0..19
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
