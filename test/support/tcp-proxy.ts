import { createServer, Server, Socket, connect } from 'node:net';

/**
 * A TCP pass-through in front of a real service (PostgreSQL, Redis) that a test can cut and
 * restore: {@link cut} closes the listener and drops every open connection, as a service that went
 * down (new connections are refused); {@link restore} listens again on the same port. The shared
 * service itself is never touched. Point the app's URL at `host:port` through {@link rewrite}.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Starts a proxy to `target` (`host:port`) on a free port of 127.0.0.1. */
  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(targetHost, targetPort);
    await proxy.listen();
    return proxy;
  }

  /** `url` (postgres://, redis://) with its host and port replaced by this proxy's. */
  rewrite(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Refuses new connections and drops the open ones. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((r) => server.close(() => r()));
  }

  /** Accepts connections again, on the same port. */
  async restore(): Promise<void> {
    if (!this.server) await this.listen();
  }

  async stop(): Promise<void> {
    await this.cut();
  }

  private async listen(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((r) => server.listen(this.port, '127.0.0.1', r));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }
}
