/**
 * `roce replay --onto`: a capture re-sent onto a veth in a namespace of this
 * test, rewritten to the veth's addresses, arrives at the other end intact
 * with valid ICRCs. Needs root, namespaces and the native addon.
 *
 * @group netns
 */
import * as path from 'node:path';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';
import { AfPacketDriver } from '../../nic-driver/af-packet-driver';
import { decodeFrame, packetAddresses } from '../../packets/decode';
import { macToString } from '../../packets/bytes';
import { readCapture } from '../../packets/pcap';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { createNetnsPair, destroyNetnsPair, nativeNetnsSkipReason } from '../support/netns';
import { testUnless } from '../support/skip';

const SAMPLE = path.join(__dirname, '..', '..', 'captures', 'rc-conversation.pcap');

testUnless(nativeNetnsSkipReason())('the sample conversation, rewritten to the veth addresses, crosses to the peer', async () => {
  const p = createNetnsPair({ mtu: 1500 });
  const rx = AfPacketDriver.open({ ifname: p.ifB, netns: p.nsB, retireMs: 1 });
  try {
    const o = memoryOutput();
    const code = await run(
      [
        'replay',
        SAMPLE,
        '--onto',
        p.ifA,
        '--netns',
        p.nsA,
        '--driver',
        'packet',
        '--timing',
        'fast',
        '--roce-only',
        '--rewrite-mac',
        `02:00:00:00:00:01=${macToString(p.macA)}`,
        '--rewrite-mac',
        `02:00:00:00:00:02=${macToString(p.macB)}`,
        '--rewrite-ip',
        `198.18.0.1=${p.ipA}`,
        '--rewrite-ip',
        `198.18.0.2=${p.ipB}`,
        '--rewrite-qpn',
        '0x12=0x99',
        '--psn-offset',
        '0x99=1000',
      ],
      o,
    );
    expect(o.err).toBe('');
    expect(code).toBe(0);
    // The sample holds frames in both directions; only those to B's MAC are for the peer to see here.
    const sample = readCapture(fs.readFileSync(SAMPLE)).records.map((r) => decodeFrame(r.data));
    const toB = sample.filter((d) => d.roce && d.eth?.dst === 0x020000000002).length;
    const got: ReturnType<typeof decodeFrame>[] = [];
    const deadline = Date.now() + 5000;
    while (got.length < toB && Date.now() < deadline) {
      for (const f of rx.rxBurst(256)) got.push(decodeFrame(f));
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(got).toHaveLength(toB);
    for (const d of got) {
      if (!d.roce) throw new Error('not RoCE');
      expect(d.icrcOk).toBe(true);
      expect(d.error === null || d.error.code !== 'ROCE_ERR_BAD_ICRC').toBe(true);
      expect(packetAddresses(d)).toEqual({ src: p.ipA, dst: p.ipB });
      expect(d.eth?.dst).toBe(p.macB);
      expect(d.bth?.destQp).not.toBe(0x12);
    }
    expect(o.out).toMatch(/replayed \d+ frames onto/);
  } finally {
    rx.close();
    destroyNetnsPair(p);
  }
});

testUnless(nativeNetnsSkipReason())('--pcap with --onto records the frames as sent: rewritten, with real-clock times', async () => {
  const p = createNetnsPair({ mtu: 1500 });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-onto-pcap-'));
  const file = path.join(dir, 'sent.pcap');
  try {
    const o = memoryOutput();
    const before = BigInt(Date.now()) * 1_000_000n;
    const code = await run(
      [
        'replay',
        SAMPLE,
        '--onto',
        p.ifA,
        '--netns',
        p.nsA,
        '--driver',
        'packet',
        '--timing',
        'fast',
        '--roce-only',
        '--rewrite-ip',
        `198.18.0.1=${p.ipA}`,
        '--rewrite-ip',
        `198.18.0.2=${p.ipB}`,
        '--pcap',
        file,
      ],
      o,
    );
    expect(o.err).toBe('');
    expect(code).toBe(0);
    const sent = Number(/replayed (\d+) frames/.exec(o.out)?.[1]);
    expect(o.out).toContain(`capture: `);
    const recs = readCapture(fs.readFileSync(file)).records;
    const mine = recs.map((r) => ({ ns: r.timestampNs, d: decodeFrame(r.data) })).filter((x) => x.d.roce && [p.ipA, p.ipB].includes(packetAddresses(x.d).src));
    // Every frame replayed is in the file with its rewritten addresses (the sample's all go to A or B).
    expect(mine.length).toBeGreaterThanOrEqual(sent);
    expect(sent).toBe(readCapture(fs.readFileSync(SAMPLE)).records.filter((r) => decodeFrame(r.data).roce).length);
    for (const x of mine) expect(x.ns >= before).toBe(true);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    destroyNetnsPair(p);
  }
});

test('--pcap without --onto is a usage error', async () => {
  const o = memoryOutput();
  expect(await run(['replay', SAMPLE, '--pcap', 'x.pcap'], o)).toBe(2);
  expect(o.err).toMatch(/--pcap records a live link: it goes with --onto IFACE/);
});

test('--onto with a bad flag is a usage error', async () => {
  const o = memoryOutput();
  expect(await run(['replay', SAMPLE, '--onto', 'lo', '--driver', 'dpdk'], o)).toBe(2);
  expect(o.err).toMatch(/--driver must be xdp or packet/);
  const o2 = memoryOutput();
  expect(await run(['replay', SAMPLE, '--onto', 'lo', '--rewrite-ip', 'nonsense'], o2)).toBe(2);
  expect(o2.err).toMatch(/--rewrite-ip takes OLD=NEW/);
});
