import { createServer, type Server, type Socket, connect } from 'node:net';

/**
 * A TCP proxy in front of the real PostgreSQL server that makes a COMMIT's outcome unknown to the
 * client, as a crash of the network or of the server's host does, on a real server:
 * - `loseNextCommitAnswer`: the COMMIT reaches the server and commits, but the client never hears
 *   back and its connection is cut;
 * - `holdNextCommit`: the COMMIT never reaches the server, and the client waits for an answer
 *   until it gives up (or dies); the transaction stays open, holding its locks, until the
 *   client's connection closes, and then rolls back.
 * Reads the PostgreSQL frontend protocol only to find the COMMIT.
 *
 * @example
 * const proxy = await PgProxy.start(process.env.DATABASE_URL!);
 * const lost = proxy.loseNextCommitAnswer(/insert into events/i);
 */
export class PgProxy {
  private trap: { after: RegExp; mode: 'lose-answer' | 'hold' | 'hold-statement'; done: () => void } | undefined;
  private readonly sockets = new Set<Socket>();
  private partitioned = false;

  private constructor(
    private readonly server: Server,
    private readonly target: { host: string; port: number },
  ) {}

  static async start(databaseUrl: string): Promise<PgProxy> {
    const url = new URL(databaseUrl);
    const server = createServer();
    const proxy = new PgProxy(server, { host: url.hostname, port: Number(url.port || 5432) });
    server.on('connection', (client) => proxy.pipe(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  /** `databaseUrl` (same server, user and database) through this proxy. */
  url(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String((this.server.address() as { port: number }).port);
    return url.toString();
  }

  /**
   * Loses the answer to the next COMMIT of a transaction that sent a statement matching `after`.
   * Resolves once the server has answered it (so it has committed) and the client's connection is cut.
   */
  loseNextCommitAnswer(after: RegExp): Promise<void> {
    return new Promise((resolve) => {
      this.trap = { after, mode: 'lose-answer', done: resolve };
    });
  }

  /**
   * Keeps the next COMMIT of a transaction that sent a statement matching `after` from the server.
   * Resolves once the client has sent it (and is waiting for its answer).
   */
  holdNextCommit(after: RegExp): Promise<void> {
    return new Promise((resolve) => {
      this.trap = { after, mode: 'hold', done: resolve };
    });
  }

  /**
   * Keeps the next statement matching `pattern`, and everything after it on its connection, from
   * the server: the client waits for its answer until it gives up (or dies). Resolves once the
   * client has sent it. For a statement outside a transaction (a record written after a commit).
   */
  holdNextStatement(pattern: RegExp): Promise<void> {
    return new Promise((resolve) => {
      this.trap = { after: pattern, mode: 'hold-statement', done: resolve };
    });
  }

  /**
   * Cuts the client off from the server without closing anything, as a network partition does:
   * nothing passes either way, new connections get no answer, and the server keeps every session
   * (and its transaction and locks) open until the client closes its end.
   */
  partition(): void {
    this.partitioned = true;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private pipe(client: Socket): void {
    const upstream = connect(this.target.port, this.target.host);
    this.sockets.add(client).add(upstream);
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', cut).on('error', cut);
    upstream.on('close', cut).on('error', cut);

    let pending = Buffer.alloc(0);
    let untyped = 1; // the startup message has no type byte (an SSLRequest would add one more)
    let matched = false;
    let losing: (() => void) | undefined;
    let holding = false;
    const statements = new Map<string, string>();
    client.on('data', (chunk: Buffer) => {
      if (this.partitioned) return;
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        const offset = untyped > 0 ? 0 : 1;
        if (pending.length < offset + 4) break;
        const total = offset + pending.readInt32BE(offset);
        if (pending.length < total) break;
        const message = pending.subarray(0, total);
        pending = pending.subarray(total);
        if (untyped > 0) {
          untyped -= 1;
          if (message.length === 8 && message.readInt32BE(4) === 80877103) untyped += 1; // SSLRequest
        } else {
          const kind = String.fromCharCode(message[0]!);
          let text = kind === 'Q' || kind === 'P' ? message.subarray(kind === 'Q' ? 5 : message.indexOf(0, 5) + 1).toString('utf8') : '';
          // A named (prepared) statement's text is sent once per connection (Parse); later runs only
          // Bind it by name, so the trap matches a Bind by the text its statement was parsed from.
          if (kind === 'P') {
            const name = message.subarray(5, message.indexOf(0, 5)).toString('utf8');
            if (name) statements.set(name, text);
          } else if (kind === 'B') {
            const portalEnd = message.indexOf(0, 5);
            text = statements.get(message.subarray(portalEnd + 1, message.indexOf(0, portalEnd + 1)).toString('utf8')) ?? '';
          }
          if (this.trap?.mode === 'hold-statement' && this.trap.after.test(text)) {
            const { done } = this.trap;
            this.trap = undefined;
            holding = true;
            done();
          }
          if (this.trap && this.trap.after.test(text)) matched = true;
          if (/^\s*commit\b/i.test(text) && matched && this.trap) {
            const { mode, done } = this.trap;
            this.trap = undefined;
            if (mode === 'hold') {
              holding = true;
              done();
            } else losing = done;
          }
          if (/^\s*(commit|rollback)\b/i.test(text)) matched = false;
        }
        if (!holding) upstream.write(message);
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      if (this.partitioned) return;
      if (!losing) {
        client.write(chunk);
        return;
      }
      // The server answered the COMMIT: it committed. The client never hears it.
      const done = losing;
      losing = undefined;
      cut();
      done();
    });
  }
}
