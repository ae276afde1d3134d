/**
 * Which frames are RPC-over-RDMA and what they carry, on captures/rpc-rdma.pcap: ownership from the
 * RDMA CM (REQ to port 20049 and its REP), from a SEND's shape where no CM was captured, and by
 * --decode-as QPN; RDMA READs and WRITEs tied to the call whose chunk named their handle; the RPC
 * message of an RDMA_NOMSG put together from the read chunk (call) or reply chunk (reply); a
 * message over SEND FIRST + LAST; bounded state; and the same output whether the state is carried
 * from frame to frame by structuredClone (as batches on worker threads carry it) or not.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readCapture, type CaptureRecord } from '../../packets/pcap';
import { decodeAt, type RocePacket } from '../../packets/decode';
import { buildRoceV2Frame } from '../../packets/build';
import { Opcode } from '../../packets/opcodes';
import { GSI_QPN } from '../../packets/mad';
import type { FieldFrame } from '../../packets/frame-fields';
import type { UlpRules } from '../../ulp/ulp-decoder';
import { RPC_RDMA } from '../../ulp/rpc-rdma/rpcrdma-protocol';
import { RpcRdmaDecoder, type RpcRdmaFrame } from '../../ulp/rpc-rdma/rpcrdma-decoder';
import type { RpcRdmaState } from '../../ulp/rpc-rdma/conversation-state';
import { RpcRdmaProc, emitRpcRdmaHeader } from '../../ulp/rpc-rdma/rpcrdma-header';
import { emitRpcCall } from '../../ulp/rpc-rdma/rpc-message';

const CAPTURES = path.resolve(__dirname, '..', '..', 'captures');
const load = (name: string): CaptureRecord[] => readCapture(new Uint8Array(fs.readFileSync(path.join(CAPTURES, name)))).records;
const records = load('rpc-rdma.pcap');
const CM: UlpRules = { ports: [20049], qpns: [] };

function packet(r: CaptureRecord): { d: RocePacket; view: DataView } | null {
  const view = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
  const d = decodeAt(view, r.data, 0, r.data.byteLength, r.linkType, {}, r.origLen);
  return d.roce ? { d, view } : null;
}

function decodeAll(recs: CaptureRecord[], rules: UlpRules, keep: (p: RocePacket) => boolean = () => true): (RpcRdmaFrame | null)[] {
  const dec = RPC_RDMA.decoder(rules);
  return recs.map((r) => {
    const p = packet(r);
    return p === null || !keep(p.d) || !dec.wants(p.d.bth?.destQp ?? -1) ? null : dec.observe(p.d, p.view, 0);
  });
}

const words = (f: RpcRdmaFrame | null | undefined): string => (f == null ? 'null' : RPC_RDMA.text.words(f));
const fieldText = (f: RpcRdmaFrame, name: string): string => {
  const def = RPC_RDMA.text.field(name);
  if (def === undefined) throw new Error(`no field ${name}`);
  return def
    .values({ ulp: { protocol: 'rpcrdma', frame: f } } as unknown as FieldFrame)
    .map((v) => def.text(v))
    .join(',');
};

describe('a capture with its CM exchange', () => {
  const frames = decodeAll(records, CM);
  const at = (n: number) => frames[n - 1];
  test('the CM REQ to port 20049 and its REP make both QPs RPC-over-RDMA; inline NFSv4 COMPOUNDs both ways', () => {
    expect(records).toHaveLength(79);
    expect(at(1)).toMatchObject({ kind: 'cm-req' });
    expect(at(2)).toMatchObject({ kind: 'cm-rep', conversation: '198.18.0.2/18' });
    expect(at(3)).toBeNull();
    expect(words(at(4))).toBe('RPC-over-RDMA RDMA_MSG xid 0x8a9b0001 credits 128: NFSv4 COMPOUND Call SEQUENCE PUTROOTFH GETFH');
    expect(at(5)).toBeNull(); // an ACK
    expect(words(at(6))).toBe('RPC-over-RDMA RDMA_MSG xid 0x8a9b0001 credits 128: NFSv4 COMPOUND Reply SUCCESS SEQUENCE PUTROOTFH GETFH');
    expect(at(6)).toMatchObject({ direction: 'to-client', of: { xid: 0x8a9b0001, call: { prog: 100003, vers: 4, proc: 1 } } });
    expect(frames.filter((f) => f?.error != null)).toEqual([]);
  });
  test('RDMA WRITEs to a write chunk and RDMA READs of a read chunk belong to the call that named the handle', () => {
    expect(words(at(8))).toBe('RPC-over-RDMA RDMA_MSG xid 0x8a9b0002 credits 128 write 1 chunk: NFSv4 COMPOUND Call SEQUENCE PUTFH READ');
    expect(frames.slice(9, 11).map((f) => [f?.kind, f?.handle, f?.of?.xid, f?.of?.chunk, f?.length])).toEqual(
      Array(2).fill(['data', 0xa101, 0x8a9b0002, 'write', 1024]),
    );
    expect(words(at(13))).toBe('RPC-over-RDMA RDMA_MSG xid 0x8a9b0002 credits 128 write 1 chunk: NFSv4 COMPOUND Reply SUCCESS SEQUENCE PUTFH READ');
    expect(words(at(15))).toBe('RPC-over-RDMA RDMA_MSG xid 0x8a9b0003 credits 128 read 1 seg: NFSv4 COMPOUND Call SEQUENCE PUTFH WRITE');
    expect(words(at(17))).toBe('RPC-over-RDMA READ of handle 0x0000b202 xid 0x8a9b0003 read chunk (NFSv4 COMPOUND)');
    expect(frames.slice(17, 19).map((f) => [f?.kind, f?.direction, f?.of?.xid, f?.length])).toEqual([
      ['data', 'to-server', 0x8a9b0003, 1024],
      ['data', 'to-server', 0x8a9b0003, 476],
    ]);
  });
  test('RDMA_NOMSG: the call put together from its position-zero read chunk, the reply from the reply chunk', () => {
    expect(words(at(22))).toBe('RPC-over-RDMA RDMA_NOMSG xid 0x8a9b0004 credits 128 read 1 seg reply chunk 4096 B');
    expect(at(22)?.rpc).toBeNull();
    expect(at(24)).toMatchObject({ kind: 'read-request', handle: 0xc303, of: { xid: 0x8a9b0004, chunk: 'read', call: null } });
    expect(at(25)?.rpc).toBeNull();
    expect(words(at(26))).toBe(
      'RPC-over-RDMA data 144 B handle 0x0000c303 xid 0x8a9b0004 read chunk (NFSv4 COMPOUND): NFSv4 COMPOUND Call SEQUENCE PUTFH GETATTR [from the read-chunk]',
    );
    expect(at(26)?.rpc?.compound?.tag).toBe('x'.repeat(1000));
    expect(frames.slice(26, 28).map((f) => [f?.of?.chunk, f?.of?.xid])).toEqual(Array(2).fill(['reply', 0x8a9b0004]));
    expect(words(at(30))).toBe(
      'RPC-over-RDMA RDMA_NOMSG xid 0x8a9b0004 credits 128 reply chunk 1112 B: NFSv4 COMPOUND Reply SUCCESS SEQUENCE PUTFH GETATTR [from the reply-chunk]',
    );
  });
  test('a message in SEND FIRST + LAST; RDMA_ERROR answers its call', () => {
    expect(at(32)).toMatchObject({ kind: 'fragment', length: 1024 });
    expect(words(at(33))).toBe('RPC-over-RDMA RDMA_MSG xid 0x8a9b0005 credits 128: NFSv3 WRITE Call [2 packets]');
    expect(words(at(35))).toBe('RPC-over-RDMA RDMA_MSG xid 0x8a9b0005 credits 128: NFSv3 WRITE Reply SUCCESS NFS3_OK');
    expect(words(at(39))).toBe('RPC-over-RDMA RDMA_ERROR xid 0x8a9b0006 credits 128 ERR_CHUNK');
    expect(at(39)).toMatchObject({ of: { xid: 0x8a9b0006, call: { vers: 3, proc: 1 } } });
  });
  test('a LAST whose FIRST was not seen is an error of that message, not a crash', () => {
    const f = decodeAll(records, CM, (p) => !(p.bth?.opcode === Opcode.RC_SEND_FIRST));
    expect(f[32]).toMatchObject({ kind: 'fragment', error: { code: 'ROCE_ERR_BAD_FIELD' } });
    expect(f[34]).toMatchObject({ kind: 'message', of: { xid: 0x8a9b0005, call: null } });
  });
  test('the conversation without a CM exchange is claimed by its SENDs’ shape, its WRITE by the handle its call named', () => {
    expect(at(41)).toMatchObject({ conversation: '198.18.0.1 198.18.0.2', direction: 'to-server' });
    expect(words(at(41))).toBe('RPC-over-RDMA RDMA_MSG xid 0x3c4d0001 credits 32: NFSv3 GETATTR Call');
    expect(words(at(43))).toBe('RPC-over-RDMA RDMA_MSG xid 0x3c4d0001 credits 32: NFSv3 GETATTR Reply SUCCESS NFS3_OK');
    expect(words(at(47))).toBe('RPC-over-RDMA data 512 B handle 0x0000e505 xid 0x3c4d0002 write chunk (NFSv3 READ)');
    expect(words(at(49))).toBe('RPC-over-RDMA RDMA_MSG xid 0x3c4d0002 credits 32 write 1 chunk: NFSv3 READ Reply SUCCESS NFS3_OK');
  });
  test('without the CM, the first conversation is claimed by shape too and reads the same', () => {
    const f = decodeAll(records, CM, (p) => p.bth?.destQp !== GSI_QPN);
    const strip = (x: RpcRdmaFrame | null) => (x === null ? null : { ...x, conversation: null, direction: null });
    // Frames 51-53 are conversation 3's CM exchange.
    const notCm = (xs: (RpcRdmaFrame | null)[]) => [...xs.slice(3, 50), ...xs.slice(53)].map(strip);
    expect(notCm(f)).toEqual(notCm(frames));
  });
  test('RFC 8797 private data in the CM REQ and REP: inline sizes and remote invalidation', () => {
    expect(at(51)).toMatchObject({ kind: 'cm-req', cm: { version: 1, flags: 1, remoteInvalidate: true, sendSize: 4096, receiveSize: 4096 } });
    expect(at(52)).toMatchObject({ kind: 'cm-rep', cm: { sendSize: 4096, receiveSize: 8192 }, cmReq: { receiveSize: 4096 } });
    expect(words(at(51))).toBe('RPC-over-RDMA CM REQ inline send 4096 receive 4096 remote-invalidate');
    // Conversation 1's CM carries no record.
    expect(at(1)).toMatchObject({ cm: null });
    expect(words(at(2))).toBe('RPC-over-RDMA CM REP');
  });
  test('NFSv4 ops with their key arguments, each op’s status in the reply; NFSv3 statuses', () => {
    expect(words(at(54))).toBe('RPC-over-RDMA RDMA_MSG xid 0x5e6f0001 credits 128: NFSv4 COMPOUND Call SEQUENCE PUTFH LOOKUP GETFH ACCESS GETATTR');
    expect(at(54)?.rpc?.compound?.args).toEqual(['', '', '"notes.txt"', '', 'access 0x1f', '']);
    expect(RPC_RDMA.text.treeLines(at(54) as RpcRdmaFrame)).toEqual(expect.arrayContaining([[3, 'Opcode: LOOKUP (15) "notes.txt"']]));
    expect(at(56)?.rpc?.compound?.statuses).toEqual([0, 0, 0, 0, 0, 0]);
    expect(words(at(60))).toBe('RPC-over-RDMA RDMA_MSG xid 0x5e6f0002 credits 128: NFSv4 COMPOUND Reply SUCCESS SEQUENCE PUTFH REMOVE: NFS4ERR_NOENT');
    expect(['nfs.nfsstat4', 'nfs.status'].map((n) => fieldText(at(60) as RpcRdmaFrame, n))).toEqual(['2,0,0,2', '2,0,0,2']);
    expect(words(at(71))).toBe('RPC-over-RDMA RDMA_MSG xid 0x5e6f0004 credits 128: NFSv3 LOOKUP Reply SUCCESS NFS3ERR_NOENT');
    expect(['nfs.status3', 'nfs.status'].map((n) => fieldText(at(71) as RpcRdmaFrame, n))).toEqual(['2', '2']);
    expect(JSON.parse(RPC_RDMA.text.jsonMember(at(71) as RpcRdmaFrame).slice(11))).toMatchObject({ rpc: { nfs3Status: 'NFS3ERR_NOENT' } });
  });
  test('a read chunk past position zero: its data put back at its XDR position once the READs fetched it', () => {
    // As sent: WRITE's data item left out (its length word kept), GETATTR after it read all the same.
    expect(at(62)?.rpc?.compound?.ops).toEqual([53, 22, 38, 9]);
    // At the READ response that completes the chunk: the whole call, 2001 bytes and 3 of roundup put back.
    const f = at(66) as RpcRdmaFrame;
    expect(f).toMatchObject({ kind: 'data', rpcFrom: 'reassembled', of: { xid: 0x5e6f0003, chunk: 'read' } });
    expect(f.rpc?.compound).toMatchObject({ count: 4, ops: [53, 22, 38, 9], args: ['', '', 'off 0 len 2001', ''] });
    expect((f.rpc?.length ?? 0) - (at(62)?.rpc?.length ?? 0)).toBe(2004);
    expect(words(f)).toBe(
      'RPC-over-RDMA data 977 B handle 0x0000f606 xid 0x5e6f0003 read chunk (NFSv4 COMPOUND): NFSv4 COMPOUND Call SEQUENCE PUTFH WRITE GETATTR [with its read chunk data]',
    );
    // NFSv3 WRITE: its 1500 bytes put back (tshark-rpcrdma.test.ts holds this call's fields to tshark's).
    expect(at(77)).toMatchObject({ rpcFrom: 'reassembled', rpc: { xid: 0x5e6f0005, call: { vers: 3, proc: 7 } } });
  });
  test('port 20049 is the default: rules with no ports read the same; another port adds its CM connections', () => {
    expect(decodeAll(records, { ports: [], qpns: [] })).toEqual(frames);
    expect(decodeAll(records, { ports: [2050], qpns: [] })).toEqual(frames);
  });
  test('--decode-as qpn names the QPs of the conversation without its CM', () => {
    const f = decodeAll(records, { ports: [], qpns: [0x13, 0x14] });
    expect(f[40]).toMatchObject({ kind: 'message', conversation: '198.18.0.1 198.18.0.2', rpc: { xid: 0x3c4d0001 } });
    expect(f[46]).toMatchObject({ kind: 'data', of: { xid: 0x3c4d0002, chunk: 'write' } });
  });
  test('fields, with tshark’s names and text', () => {
    const f8 = at(8) as RpcRdmaFrame;
    expect(
      ['rpcordma.xid', 'rpcordma.version', 'rpcordma.flow_control', 'rpcordma.msg_type', 'rpcordma.writes_count', 'rpcordma.segment_count'].map((n) =>
        fieldText(f8, n),
      ),
    ).toEqual(['0x8a9b0002', '1', '128', '0', '1', '1']);
    expect(['rpcordma.rdma_handle', 'rpcordma.rdma_length', 'rpcordma.rdma_offset'].map((n) => fieldText(f8, n))).toEqual([
      '0x0000a101',
      '2048',
      '0x00007f3ac0001000',
    ]);
    expect(['rpc.xid', 'rpc.program', 'rpc.procedure', 'nfs.opcode'].map((n) => fieldText(f8, n))).toEqual(['0x8a9b0002', '100003', '1', '53,22,25']);
    const f22 = at(22) as RpcRdmaFrame;
    expect(['rpcordma.position', 'rpcordma.rdma_handle', 'rpcordma.reply_count'].map((n) => fieldText(f22, n))).toEqual(['0', '0x0000c303,0x0000d404', '1']);
    expect(fieldText(at(39) as RpcRdmaFrame, 'rpcordma.errcode')).toBe('2');
    expect(RPC_RDMA.text.jsonMember(at(26) as RpcRdmaFrame)).toMatch(/^,"rpcrdma":\{"kind":"data".*"nfs4Ops":\["SEQUENCE","PUTFH","GETATTR"\]/);
    expect(RPC_RDMA.text.treeLines(f22)).toContainEqual([2, 'Read segment: position 0 handle 0x0000c303 length 1168 offset 0x00007f3ac0010000']);
  });
});

describe('not RPC-over-RDMA', () => {
  test('no SEND of the NVMe-oF and RC captures looks like RPC-over-RDMA', () => {
    for (const name of ['nvme-rdma.pcap', 'rc-conversation.pcap', 'uc-ud-v6-vlan.pcap'])
      expect(decodeAll(load(name), CM).filter((f) => f !== null)).toEqual([]);
  });
  test('--decode-as qpn claims a QP whose SENDs are not RPC-over-RDMA: their errors are typed', () => {
    const nvme = load('nvme-rdma.pcap');
    const qp = nvme.map(packet).find((p) => p !== null && p.d.bth?.opcode === Opcode.RC_SEND_ONLY)?.d.bth?.destQp ?? -1;
    const f = decodeAll(nvme, { ports: [], qpns: [qp] }).filter((x) => x?.kind === 'message');
    expect(f.length).toBeGreaterThan(0);
    expect(f.every((x) => x?.error?.code.startsWith('ROCE_ERR_'))).toBe(true);
  });
});

describe('state', () => {
  test('the same frames when the state is structuredCloned into a fresh decoder at every frame', () => {
    const oneRun = decodeAll(records, CM);
    let state: RpcRdmaState = RPC_RDMA.emptyState();
    const carried = records.map((r) => {
      const dec = RPC_RDMA.decoder(CM, structuredClone(state));
      const p = packet(r);
      const f = p === null ? null : dec.observe(p.d, p.view, 0);
      state = dec.state;
      return f;
    });
    expect(carried).toEqual(oneRun);
    expect(RPC_RDMA.isEmpty(state)).toBe(false);
    expect(RPC_RDMA.isEmpty(RPC_RDMA.emptyState())).toBe(true);
  });
  test('calls never answered are forgotten oldest first: at most 1024 per conversation', () => {
    const dec = new RpcRdmaDecoder(CM);
    for (let i = 0; i < 1500; i++) {
      const xid = 0x10000 + i;
      const h = emitRpcRdmaHeader({ xid, credits: 1, proc: RpcRdmaProc.MSG });
      const c = emitRpcCall(xid, { prog: 100003, vers: 3, proc: 0, credFlavor: 0 });
      const payload = new Uint8Array(h.length + c.length);
      payload.set(h);
      payload.set(c, h.length);
      const data = buildRoceV2Frame({
        eth: { src: 1, dst: 2 },
        ip: { version: 4, src: '198.18.0.1', dst: '198.18.0.2' },
        bth: { opcode: Opcode.RC_SEND_ONLY, destQp: 0x40, psn: i },
        payload,
      });
      const view = new DataView(data.buffer);
      const d = decodeAt(view, data, 0, data.length, 1, {}, data.length);
      if (!d.roce) throw new Error('not RoCE');
      expect(dec.observe(d, view, 0)?.kind).toBe('message');
    }
    const calls = dec.state.conversations.get('198.18.0.1 198.18.0.2')?.calls;
    expect(calls?.size).toBe(1024);
    expect(calls?.has(0x10000)).toBe(false);
    expect(calls?.has(0x10000 + 1499)).toBe(true);
  });
});
