/** The out-of-band TCP channel: exact reads, one write per message, and typed errors instead of hangs. */
import * as net from 'node:net';
import { OobError, TcpChannel } from '../../apps/oob/tcp-channel';

/** A raw peer: a listening socket whose first connection is handed to the test. */
async function rawServer(): Promise<{ port: number; peer: Promise<net.Socket>; close(): void }> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const peer = new Promise<net.Socket>((r) => server.once('connection', r));
  return { port: (server.address() as net.AddressInfo).port, peer, close: () => server.close() };
}

async function caught(p: Promise<unknown>): Promise<OobError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(OobError);
    return e as OobError;
  }
  throw new Error('expected a rejection');
}

test('readExact assembles a message from pieces and keeps what follows', async () => {
  const srv = await rawServer();
  const ch = await TcpChannel.connect('127.0.0.1', srv.port, 2000);
  const peer = await srv.peer;
  peer.write(Buffer.from('0000:00'));
  setTimeout(() => peer.write(Buffer.from('11:rest')), 20);
  const a = await ch.readExact(9, 'first', 2000);
  expect(Buffer.from(a).toString()).toBe('0000:0011');
  const b = await ch.readExact(5, 'second', 2000);
  expect(Buffer.from(b).toString()).toBe(':rest');
  ch.close();
  peer.destroy();
  srv.close();
});

test('writeExact puts a whole message in one segment (perftest reads it with one read())', async () => {
  const srv = await rawServer();
  const ch = await TcpChannel.connect('127.0.0.1', srv.port, 2000);
  const peer = await srv.peer;
  const chunks: number[] = [];
  peer.on('data', (d: Buffer) => chunks.push(d.length));
  await ch.writeExact(new Uint8Array(108).fill(0x30));
  await new Promise((r) => setTimeout(r, 50));
  expect(chunks).toEqual([108]);
  ch.close();
  peer.destroy();
  srv.close();
});

test('a peer that closes early: CLOSED, with how much of what arrived', async () => {
  const srv = await rawServer();
  const ch = await TcpChannel.connect('127.0.0.1', srv.port, 2000);
  const peer = await srv.peer;
  peer.end(Buffer.alloc(30, 0x41));
  const e = await caught(ch.readExact(108, 'perftest key message', 2000));
  expect(e.code).toBe('ROCE_ERR_OOB_CLOSED');
  expect(e.message).toMatch(/closed the connection after 30 of 108 bytes of perftest key message/);
  expect(e.field).toBe('perftest key message');
  ch.close();
  srv.close();
});

test('a silent peer: TIMEOUT, never a hang', async () => {
  const srv = await rawServer();
  const ch = await TcpChannel.connect('127.0.0.1', srv.port, 2000);
  const peer = await srv.peer;
  peer.write(Buffer.from('6.0'));
  const t0 = Date.now();
  const e = await caught(ch.readExact(16, 'perftest version', 150));
  expect(e.code).toBe('ROCE_ERR_OOB_TIMEOUT');
  expect(e.message).toMatch(/timed out after 150 ms waiting for perftest version .* \(3 of 16 bytes arrived\)/);
  expect(Date.now() - t0).toBeLessThan(1000);
  ch.close();
  peer.destroy();
  srv.close();
});

test('the client retries a refused connection until the server listens', async () => {
  const probe = await TcpChannel.listen(0, '127.0.0.1');
  const port = probe.port;
  probe.close();
  const pending = TcpChannel.connect('127.0.0.1', port, 3000, 50);
  await new Promise((r) => setTimeout(r, 200));
  const listener = await TcpChannel.listen(port, '127.0.0.1');
  const [client, server] = await Promise.all([pending, listener.accept(2000)]);
  await client.writeExact(Uint8Array.of(1, 2, 3));
  expect(Array.from(await server.readExact(3, 'bytes', 1000))).toEqual([1, 2, 3]);
  client.close();
  server.close();
  listener.close();
});

test('nobody listening: CONNECT error after the timeout', async () => {
  const probe = await TcpChannel.listen(0, '127.0.0.1');
  const port = probe.port;
  probe.close();
  const e = await caught(TcpChannel.connect('127.0.0.1', port, 300, 50));
  expect(e.code).toBe('ROCE_ERR_OOB_CONNECT');
  expect(e.message).toMatch(new RegExp(`could not connect to 127.0.0.1:${port}`));
});

test('no client: accept times out; a taken port is a clear error', async () => {
  const listener = await TcpChannel.listen(0, '127.0.0.1');
  const e = await caught(listener.accept(100));
  expect(e.code).toBe('ROCE_ERR_OOB_TIMEOUT');
  expect(e.message).toMatch(/no client connected/);
  const e2 = await caught(TcpChannel.listen(listener.port, '127.0.0.1'));
  expect(e2.code).toBe('ROCE_ERR_OOB_CONNECT');
  expect(e2.message).toMatch(/address already in use/);
  listener.close();
});
