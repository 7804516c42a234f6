import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * An HTTP child's side of connection-router.ts: its HTTP server never listens on the port; it is
 * given each connection the primary accepted, with the bytes the primary read of it, which go to
 * the server's parser before anything read afterwards. `closed()` resolves once every connection
 * given so far has closed (the drain waits for it, as `server.close` would for its own).
 */
export class ConnectionAdopter {
  private readonly open = new Set<Socket>();
  private readonly emptied = new Set<() => void>();

  constructor(private readonly server: Server) {
    // An http.Server starts checking its connections' header and request timeouts when it
    // listens ('listening' runs that setup); this one never does, and must check them all the same.
    server.emit('listening');
  }

  adopt(socket: Socket, head: Buffer): void {
    this.open.add(socket);
    socket.once('close', () => {
      this.open.delete(socket);
      if (this.open.size === 0) for (const resolve of this.emptied) resolve();
    });
    this.server.emit('connection', socket);
    // Fed as the socket's own data, ahead of what the parser will read from the socket itself.
    if (head.length > 0) socket.emit('data', head);
  }

  /** Resolves once no connection given to this server is open. */
  closed(): Promise<void> {
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.emptied.delete(done);
        resolve();
      };
      this.emptied.add(done);
    });
  }
}
