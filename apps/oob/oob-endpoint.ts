/**
 * How one end of perftest or rc_pingpong reaches its peer for the out-of-band
 * exchange: the client connects to the server's address, the server listens
 * (or takes a socket already listening) and accepts one connection.
 */
import { TcpChannel, type OobListener } from './tcp-channel';
import { PINGPONG_DEFAULT_PORT } from './pingpong-messages';

export interface OobEndpointConfig {
  role: 'client' | 'server';
  /** Client: the server's address (as for the tools, a server runs without one). */
  server?: string;
  /** TCP port (default 18515). */
  port?: number;
  /** Server: address to listen on (default all IPv4 addresses). */
  bindHost?: string;
  /** Server: an already listening socket (tests), used instead of port/bindHost. */
  listener?: OobListener;
  /** Called once the server listens. */
  onListening?: (port: number) => void;
  /** Client: how long to try to connect (default 30 s); server: how long to wait for the client. */
  connectTimeoutMs?: number;
}

/**
 * The connection to the peer. `acceptMs` is how long a server waits for its client unless
 * `connectTimeoutMs` says; `missingServer` is the error of a client given no address.
 */
export async function openOobChannel(cfg: OobEndpointConfig, acceptMs: number, missingServer: () => Error): Promise<TcpChannel> {
  const port = cfg.port ?? PINGPONG_DEFAULT_PORT;
  if (cfg.role === 'client') {
    if (cfg.server === undefined) throw missingServer();
    return TcpChannel.connect(cfg.server, port, cfg.connectTimeoutMs ?? 30_000);
  }
  const listener = cfg.listener ?? (await TcpChannel.listen(port, cfg.bindHost));
  try {
    cfg.onListening?.(listener.port);
    return await listener.accept(cfg.connectTimeoutMs ?? acceptMs);
  } finally {
    if (cfg.listener === undefined) listener.close();
  }
}
