/**
 * `roce ladder` labels the frames of every upper-layer protocol with what they carry
 * (capture-engine/ulp-frame-notes.ts): an iSCSI command, its data and its response; an RPC call,
 * the data its chunk moves and its reply; an SMB2 request and the RDMA transfer behind it. ACKs
 * carry none, and a capture of none of them has no such label.
 */
import * as path from 'node:path';
import { roce } from '../support/cli';

const CAPTURES = path.resolve(__dirname, '..', '..', 'captures');

async function labels(file: string): Promise<string[]> {
  const r = await roce('ladder', path.join(CAPTURES, file), '-o', '-');
  expect(r.code).toBe(0);
  return [...r.out.matchAll(/class="lbl"[^>]*>([^<]*)</g)].map((m) => (m[1] ?? '').replace(/&gt;/g, '>'));
}

test('iSER: the SCSI command, the data its task moves, the response with the command it answers', async () => {
  const l = await labels('iser.pcap');
  expect(l.some((x) => /^SEND_ONLY PSN \d+ A · iSER SCSI Command itt 0x00000011 INQUIRY /.test(x))).toBe(true);
  expect(l.some((x) => /^WRITE_ONLY PSN \d+ A · iSER data itt 0x00000011 \(INQUIRY\) 36 B$/.test(x))).toBe(true);
  expect(l.some((x) => /^SEND_ONLY PSN \d+ A · iSER SCSI Response itt 0x00000011 \(INQUIRY\) GOOD$/.test(x))).toBe(true);
  expect(l.filter((x) => x.startsWith('ACKNOWLEDGE')).every((x) => !x.includes('iSER'))).toBe(true);
});

test('RPC-over-RDMA: the call, the data written to its write chunk, the reply', async () => {
  const l = await labels('rpc-rdma.pcap');
  expect(l.some((x) => /^SEND_ONLY PSN \d+ A · RPC-over-RDMA RDMA_MSG xid 0x8a9b0002 .*: NFSv4 COMPOUND Call SEQUENCE PUTFH READ$/.test(x))).toBe(true);
  expect(l.filter((x) => / · RPC-over-RDMA data \d+ B handle 0x[0-9a-f]{8} xid 0x8a9b0002 write chunk/.test(x))).toHaveLength(2);
  expect(l.some((x) => / · RPC-over-RDMA RDMA_MSG xid 0x8a9b0002 .*: NFSv4 COMPOUND Reply SUCCESS SEQUENCE PUTFH READ$/.test(x))).toBe(true);
});

test('SMB Direct: the SMB2 WRITE request and the RDMA READ that fetches its data', async () => {
  const l = await labels('smbd.pcap');
  expect(l.some((x) => / · SMBD DataMessage credits \d+\/\d+; SMB2 WRITE request mid 5 /.test(x))).toBe(true);
  expect(l.some((x) => /^READ_REQUEST PSN \d+ A · SMBD RDMA data mid 5 \(WRITE\)$/.test(x))).toBe(true);
});

test('a capture of no upper-layer protocol has no such label', async () => {
  const l = await labels('rc-conversation.pcap');
  expect(l.filter((x) => /iSER|RPC-over-RDMA|SMBD|NVMe/.test(x))).toEqual([]);
});
