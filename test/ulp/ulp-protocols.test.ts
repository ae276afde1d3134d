/**
 * The upper-layer protocols the capture engine runs (ulp/protocols.ts) and `--decode-as` over them:
 * every registered name is taken in both rule forms and lands in its own protocol's rules only, an
 * unknown name is a usage error that lists the known ones, each protocol's default rules are its
 * IANA ports, and `roce decode --decode-as qpn=Q=nvme` shows NVMe-oF on a capture whose CM exchange
 * was cut out (captures/nvme-rdma.pcap without its frames to QP 1).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ULP_PROTOCOLS, defaultRuleSet, ulpProtocolNamed } from '../../ulp/protocols';
import { UlpName } from '../../ulp/ulp-decoder';
import { NVME_RDMA_PORT } from '../../ulp/nvme-rdma/nvme-decoder';
import { decodeAsRules } from '../../cli/decode-as-option';
import { UsageError } from '../../cli/args';
import { readCapture, writePcap } from '../../packets/pcap';
import { type RocePacket, decodeAt } from '../../packets/decode';
import { GSI_QPN } from '../../packets/mad';
import { run } from '../../cli/main';
import { memoryOutput } from '../../cli/output';

const NAMES = ULP_PROTOCOLS.map((p) => p.name);

describe('the registry', () => {
  test('names are UlpNames, each once; NVMe-oF is in', () => {
    const known: string[] = Object.values(UlpName);
    for (const n of NAMES) expect(known).toContain(n);
    expect(new Set(NAMES).size).toBe(NAMES.length);
    expect(NAMES).toContain(UlpName.Nvme);
  });
  test("the default rules: each protocol's IANA ports, no QPN", () => {
    const set = defaultRuleSet();
    for (const p of ULP_PROTOCOLS) expect(set[p.name]).toEqual({ ports: [...p.defaultPorts], qpns: [] });
    expect(set.nvme).toEqual({ ports: [NVME_RDMA_PORT], qpns: [] });
    expect(decodeAsRules([])).toEqual(set);
  });
  test('a protocol is found by its name in any case', () => {
    for (const n of NAMES) expect(ulpProtocolNamed(n.toUpperCase())?.name).toBe(n);
    expect(ulpProtocolNamed('srp')).toBeUndefined();
  });
});

describe('--decode-as over every registered protocol', () => {
  test.each(NAMES)('%s: qpn and port rules go to its rules, the others keep theirs', (name) => {
    const set = decodeAsRules([`qpn=0x12=${name}`, `qpn=19=${name.toUpperCase()}`, `port=30000=${name}`]);
    const p = ulpProtocolNamed(name);
    if (p === undefined) throw new Error(`${name} is registered`);
    expect(set[p.name]).toEqual({ ports: [...new Set([...p.defaultPorts, 30000])], qpns: [0x12, 19] });
    const defaults = defaultRuleSet();
    for (const other of Object.values(UlpName)) if (other !== name) expect(set[other]).toEqual(defaults[other]);
  });
  test('an unknown protocol is a usage error that names every known one', () => {
    let err: unknown = null;
    try {
      decodeAsRules(['qpn=0x12=srp']);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    const message = (err as Error).message;
    expect(message).toMatch(/unknown protocol "srp"/);
    for (const n of NAMES) expect(message).toContain(n);
  });
});

describe('roce decode --decode-as qpn=Q=nvme', () => {
  let dir: string;
  let noCm: string;
  let qpns: number[];

  beforeAll(() => {
    const recs = readCapture(new Uint8Array(fs.readFileSync(path.resolve(__dirname, '..', '..', 'captures', 'nvme-rdma.pcap')))).records;
    const decoded = recs.map((r) => decodeAt(new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength), r.data, 0, r.data.byteLength, r.linkType));
    // The REQ and REP name the two QP ends of the first connection.
    const cm = decoded.map((d) => (d.roce ? (d as RocePacket).mad?.cm : undefined));
    const req = cm.find((c) => c?.name === 'REQ');
    const rep = cm.find((c) => c?.name === 'REP');
    if (req?.name !== 'REQ' || rep?.name !== 'REP') throw new Error('the capture holds a CM REQ and REP');
    qpns = [req.fields.localQpn, rep.fields.localQpn];
    const kept = recs.filter((_r, i) => {
      const d = decoded[i];
      return d !== undefined && d.roce && d.bth?.destQp !== GSI_QPN;
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roce-ulp-'));
    noCm = path.join(dir, 'no-cm.pcap');
    fs.writeFileSync(noCm, writePcap(kept.map((r) => ({ data: r.data, timestampNs: r.timestampNs }))));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function decode(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    const o = memoryOutput();
    const code = await run(['decode', '--threads', '1', ...argv], o);
    return { code, out: o.out, err: o.err };
  }

  test('without the CM and without a rule, no frame is NVMe-oF', async () => {
    const r = await decode(noCm);
    expect(r.code).toBe(0);
    expect(r.out).not.toMatch(/NVMe/);
  });
  test("with the connection's QPNs named, its commands and completions are shown", async () => {
    const r = await decode(...qpns.flatMap((q) => ['--decode-as', `qpn=0x${q.toString(16)}=nvme`]), noCm);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/RC_SEND_LAST .* NVMe Fabrics Connect cid 0 qid 0 .* \[2 packets\]/);
    expect(r.out).toMatch(/NVMe CQE cid \d+ \(Fabrics Connect\) Success/);
  });
  test('an unknown protocol is refused before the capture is read', async () => {
    const r = await decode('--decode-as', 'qpn=0x12=srp', noCm);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/unknown protocol "srp"; known: nvme/);
  });
});
