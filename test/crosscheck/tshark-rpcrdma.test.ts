/**
 * The RPC-over-RDMA decoder's fields against tshark 4.0's (packet-rpcrdma.c, `rpcordma.*`, and
 * packet-rpc.c / packet-nfs.c for the RPC behind) on captures/rpc-rdma.pcap: every field both
 * have, on every frame, digit for digit, read through `field(name).values` on a FieldFrame built
 * from the decoder's frames (`roce decode` does not run this decoder yet). tshark needs no option:
 * its RPC-over-RDMA heuristic on infiniband.payload is on by default and claims the conversation
 * whose CM was not captured, as ours does.
 *
 * Where tshark shows the RPC message elsewhere or not right, its rpc.* and nfs.* fields are left
 * out on those frames, each rule held to a count (docs/decode.md, "RPC-over-RDMA", has the rulings):
 *   - a call whose data item travels in a read chunk at a position past zero: both put the chunk's
 *     bytes back into the call (RFC 8166 §3.4.5) and show the whole call at the RDMA READ response
 *     that completes the chunk, compared field by field; we also show the call on its SEND (the RPC
 *     message as sent, its data item's length word kept), where tshark shows no RPC: that SEND's
 *     rpc.* and nfs.* fields are left out;
 *   - a reply with a write chunk (NFSv4 READ): tshark shows its RPC reply twice, the second time
 *     with the chunk's bytes put back and "Malformed Packet"; RFC 8166 §3.4.6: the data item left
 *     the XDR stream, one reply carries one RPC message;
 *   - replies on the conversation without a CM exchange: tshark does not match them to their call
 *     (program 0, procedure 0, twice) although the call of that xid came on the same QPs just
 *     before (RFC 5531 §9: a reply is matched to its call by xid); we give the call's.
 *
 * @group tshark
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { testUnless } from '../support/skip';
import { readCapture } from '../../packets/pcap';
import { decodeAt } from '../../packets/decode';
import type { FieldFrame } from '../../packets/frame-fields';
import { RPC_RDMA } from '../../ulp/rpc-rdma/rpcrdma-protocol';
import { rpcRdmaFieldNames } from '../../ulp/rpc-rdma/rpcrdma-fields';
import type { RpcRdmaFrame } from '../../ulp/rpc-rdma/rpcrdma-decoder';

const ROOT = path.resolve(__dirname, '..', '..');
const FILE = path.join(ROOT, 'captures', 'rpc-rdma.pcap');

function onPath(name: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir !== '' && fs.existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}
const TSHARK = onPath('tshark');
const it = testUnless(TSHARK === null ? 'tshark is not installed (scripts/setup-system.sh installs it)' : null);

/** Our fields but the protocol item itself (tshark -T fields prints nothing for a protocol). */
const FIELDS = rpcRdmaFieldNames().filter((n) => n !== 'rpcordma');

function ourFrames(): (RpcRdmaFrame | null)[] {
  const dec = RPC_RDMA.decoder({ ports: RPC_RDMA.defaultPorts, qpns: [] });
  return readCapture(new Uint8Array(fs.readFileSync(FILE))).records.map((r) => {
    const view = new DataView(r.data.buffer, r.data.byteOffset, r.data.byteLength);
    const d = decodeAt(view, r.data, 0, r.data.byteLength, r.linkType, {}, r.origLen);
    return d.roce ? dec.observe(d, view, 0) : null;
  });
}

function ourText(f: RpcRdmaFrame | null, name: string): string {
  if (f === null) return '';
  const def = RPC_RDMA.text.field(name);
  if (def === undefined) throw new Error(`no field ${name}`);
  return def
    .values({ ulp: { protocol: 'rpcrdma', frame: f } } as unknown as FieldFrame)
    .map((v) => def.text(v))
    .join(',');
}

it('every RPC-over-RDMA, RPC and NFS field of every frame equals tshark 4.0', () => {
  const args = ['-n', '-r', FILE, '-T', 'fields', '-E', 'occurrence=a', '-e', 'frame.number', ...FIELDS.flatMap((f) => ['-e', f])];
  const theirs = execFileSync(TSHARK ?? 'tshark', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    .trimEnd()
    .split('\n')
    .map((l) => l.split('\t'));
  const ours = ourFrames();
  expect(ours).toHaveLength(theirs.length);
  const excluded = { readChunkCall: 0, writeChunkReply: 0, unmatchedReply: 0 };
  const diffs: string[] = [];
  let compared = 0;
  // The calls whose read chunk carries a data item (position > 0), by xid: tshark shows them at the READ response that ends the chunk.
  const readChunkCalls = new Set<number>();
  ours.forEach((f, i) => {
    const row = theirs[i] ?? [];
    const h = f?.header ?? null;
    if (h !== null && h.readList.some((r) => r.position > 0)) readChunkCalls.add(h.xid);
    const isRpcField = (n: string) => n.startsWith('rpc.') || n.startsWith('nfs.');
    let skipRpc: keyof typeof excluded | null = null;
    if (f !== null && h !== null && readChunkCalls.has(h.xid) && f.rpc?.call != null) skipRpc = 'readChunkCall';
    else if (f?.rpc?.reply != null && h !== null && h.writeList.length > 0 && f.of?.call?.vers === 4) skipRpc = 'writeChunkReply';
    else if (f?.rpc?.reply != null && f.conversation !== null && !f.conversation.includes('/')) skipRpc = 'unmatchedReply';
    if (skipRpc !== null) excluded[skipRpc]++;
    FIELDS.forEach((name, k) => {
      if (skipRpc !== null && isRpcField(name)) return;
      const a = ourText(f, name);
      const b = row[k + 1] ?? '';
      if (a !== '' || b !== '') compared++;
      if (a !== b) diffs.push(`frame ${i + 1} ${name}: ours ${JSON.stringify(a)} tshark ${JSON.stringify(b)}`);
    });
  });
  expect(diffs).toEqual([]);
  // SENDs 15, 62 and 73; 13; 43 and 49.
  expect(excluded).toEqual({ readChunkCall: 3, writeChunkReply: 1, unmatchedReply: 2 });
  expect(compared).toBe(389);
});
