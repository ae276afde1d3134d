/** The rxe lab's TCP reassembly (lab.ts checkCapture), on frames made here: it needs no lab. */
import { checkCapture } from './lab';
import { writePcap } from '../../packets/pcap';

const CLIENT = 0xc6120001; // 198.18.0.1
const SERVER = 0xc6120002; // 198.18.0.2
const SYN = 0x02;
const SYN_ACK = 0x12;
const PSH_ACK = 0x18;

/** An Ethernet/IPv4/TCP frame (no options). */
function tcp(src: number, sport: number, dst: number, dport: number, seq: number, flags: number, payload: string): Uint8Array {
  const p = Buffer.from(payload, 'latin1');
  const b = Buffer.alloc(54 + p.length);
  b.writeUInt16BE(0x0800, 12);
  b[14] = 0x45;
  b.writeUInt16BE(40 + p.length, 16);
  b[23] = 6;
  b.writeUInt32BE(src, 26);
  b.writeUInt32BE(dst, 30);
  b.writeUInt16BE(sport, 34);
  b.writeUInt16BE(dport, 36);
  b.writeUInt32BE(seq >>> 0, 38);
  b[46] = 0x50;
  b[47] = flags;
  p.copy(b, 54);
  return b;
}

test("the lab's capture check: a SYN opens a connection (a reused 4-tuple makes two, a client port may be below the server's), and a stream that wraps 2^32 stays in order", () => {
  const frames = [
    tcp(CLIENT, 40000, SERVER, 18515, 0xfffffff0, SYN, ''),
    tcp(SERVER, 18515, CLIENT, 40000, 100, SYN_ACK, ''),
    tcp(CLIENT, 40000, SERVER, 18515, 0xfffffff1, PSH_ACK, 'abcdefghijklmn'),
    tcp(CLIENT, 40000, SERVER, 18515, 0xffffffff, PSH_ACK, 'opqrst'), // past 2^32
    tcp(SERVER, 18515, CLIENT, 40000, 101, PSH_ACK, 'xy'),
    tcp(CLIENT, 40000, SERVER, 18515, 0xfffffff1, PSH_ACK, 'abcdefghijklmn'), // retransmitted
    tcp(CLIENT, 40000, SERVER, 18515, 5, SYN, ''), // the same ports again
    tcp(SERVER, 18515, CLIENT, 40000, 7, SYN_ACK, ''),
    tcp(CLIENT, 40000, SERVER, 18515, 6, PSH_ACK, 'second'),
    tcp(CLIENT, 10000, SERVER, 18515, 1, SYN, ''),
    tcp(CLIENT, 10000, SERVER, 18515, 2, PSH_ACK, 'low'),
  ];
  const t = checkCapture(writePcap(frames.map((data, i) => ({ data, timestampNs: BigInt(i) })))).tcp;
  expect(t.map((x) => [x.client, x.server, x.port, x.firstFrame, x.toServer.toString(), x.toClient.toString()])).toEqual([
    ['198.18.0.1:40000', '198.18.0.2:18515', 18515, 1, 'abcdefghijklmnopqrst', 'xy'],
    ['198.18.0.1:40000', '198.18.0.2:18515', 18515, 7, 'second', ''],
    ['198.18.0.1:10000', '198.18.0.2:18515', 18515, 10, 'low', ''],
  ]);
});
