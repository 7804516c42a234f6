import { createServer, type Server, type Socket } from 'node:net';
import { newId } from '../ids.js';
import { customerWritten, ownerOf } from './customer-affinity.js';

/**
 * The port of a `loyalty serve` instance with several HTTP children, held by the primary, which
 * hands each new connection to a child chosen by the connection's first request: a write to a
 * customer goes to that customer's owner (customer-affinity.ts), anything else to the next child
 * in turn. node:cluster's own round-robin hands connections out blindly, so that half the writes of
 * a client that keeps writing one customer (a checkout, a game, a campaign: the hot customer of
 * #12) were passed on from child to child, costing the instance more CPU per write than one
 * process. Later requests on a kept-alive connection stay with its child, which passes on the
 * writes it does not own, as before.
 *
 * The primary reads what the client sends until the request line is whole, stops reading, and
 * sends the socket with those bytes to the child over the IPC channel; the child feeds them to its
 * HTTP server before anything else it reads (`ConnectionAdopter`).
 */
export interface ConnectionRouterOptions {
  /** The instance's HTTP children, by their place (customer-affinity.ts); undefined: not taking connections now (restarting, say). */
  children: () => ReadonlyArray<ConnectionTaker | undefined>;
  /** How long a connection waits here for its request line before it is handed over as it is. */
  headWaitMs?: number;
  /** How long a connection waits here for a child to take it before it is answered 503 (`DEFAULT_HELD_WAIT_MS`). */
  heldWaitMs?: number;
  /** How many connections may wait for a child at once; the next are answered 503 at once (`DEFAULT_MAX_HELD`). */
  maxHeld?: number;
  /** Told of each connection answered 503 here, and why. */
  onRefused?: (reason: RefusalReason) => void;
}

/** Why a connection was answered 503 by the primary: too many waiting, waited too long, or the instance stopping. */
export type RefusalReason = 'full' | 'waited' | 'stopping';

/** A child process that takes connections: `Worker.send` or `ChildProcess.send`. */
export interface ConnectionTaker {
  send(message: ConnectionMessage, socket: Socket, callback: (error: Error | null) => void): boolean;
}

/** The message that carries a connection (its socket is the message's handle); `head` is the bytes read of it, as latin1 (a character per byte). */
export interface ConnectionMessage {
  type: 'loyalty:connection';
  head: string;
}

export const DEFAULT_HEAD_WAIT_MS = 2_000;
export const DEFAULT_HELD_WAIT_MS = 10_000;
export const DEFAULT_MAX_HELD = 1_000;
/** Past this, what was read is handed over without a request line. */
const MAX_REQUEST_LINE_BYTES = 16 * 1024;

/** The request line of an HTTP/1 request, when `head` holds it whole (ended by CRLF, or a bare LF, which the child's parser then judges). */
export function requestLine(head: Buffer): { method: string; url: string } | undefined {
  const end = head.indexOf('\n');
  if (end < 0) return undefined;
  const match = /^([A-Z]+) (\S+) HTTP\/1\.[01]\r?$/.exec(head.toString('latin1', 0, end));
  return match ? { method: match[1]!, url: match[2]! } : undefined;
}

/**
 * Where a connection goes: the owner of the customer its first request writes, if that child takes
 * connections; otherwise the next child in turn that does (`turn` counts the turns given).
 */
export function childForConnection(head: Buffer, taking: ReadonlyArray<boolean>, turn: number): number | undefined {
  const line = head.length > 0 ? requestLine(head) : undefined;
  const customer = line && customerWritten(line.method, line.url);
  if (customer !== undefined) {
    const owner = ownerOf(customer, taking.length);
    if (taking[owner]) return owner;
  }
  const open = taking.flatMap((yes, i) => (yes ? [i] : []));
  return open.length === 0 ? undefined : open[turn % open.length];
}

/**
 * What the primary answers a connection no child took: 503 `unavailable` in the API's error shape,
 * `Connection: close` (nothing of the request past its line was read, and none will be).
 */
export function refusal(): string {
  const requestId = newId('request');
  const body = JSON.stringify({
    code: 'unavailable',
    message: 'No process of this instance could take the request (they are starting, restarting or stopping). Nothing was done; retry.',
    request_id: requestId,
  });
  return (
    'HTTP/1.1 503 Service Unavailable\r\n' +
    'Content-Type: application/json\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Retry-After: 1\r\n' +
    `X-Request-Id: ${requestId}\r\n` +
    'X-Content-Type-Options: nosniff\r\n' +
    'Connection: close\r\n\r\n' +
    body
  );
}

/** Answers `refusal()` and closes: what the client still sends is read and dropped, so the connection ends when the client ends it, with no reset; after 2 s it is closed regardless. */
function refuse(socket: Socket): void {
  if (socket.destroyed) return;
  const timer = setTimeout(() => socket.destroy(), 2_000);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.on('error', () => socket.destroy());
  socket.on('data', () => {});
  socket.resume();
  socket.end(refusal());
}

/**
 * A server (not yet listening) that hands each connection it accepts to a child
 * (`childForConnection`). A connection no child can take yet (the instance is starting, or every
 * child is restarting) is held, read no further, until `childrenChanged()` finds one. It is
 * answered 503 `unavailable` instead when no child takes it within `heldWaitMs`, when `maxHeld`
 * connections are held already, and at shutdown (`refuseHeld()`): a client never waits without
 * bound, and the primary never holds connections without bound.
 */
export function connectionRouter(options: ConnectionRouterOptions): Server & { childrenChanged(): void; refuseHeld(): void } {
  const waiting = new Set<Socket>();
  const held = new Map<Socket, { head: Buffer; timer: NodeJS.Timeout }>();
  const headWaitMs = options.headWaitMs ?? DEFAULT_HEAD_WAIT_MS;
  const heldWaitMs = options.heldWaitMs ?? DEFAULT_HELD_WAIT_MS;
  const maxHeld = options.maxHeld ?? DEFAULT_MAX_HELD;
  const refused = (socket: Socket, reason: RefusalReason) => {
    refuse(socket);
    options.onRefused?.(reason);
  };
  let turn = 0;
  /** The child to take a connection now, or undefined when none takes connections. */
  const takerFor = (head: Buffer) => {
    const children = options.children();
    const chosen = childForConnection(head, children.map((c) => c !== undefined), turn++);
    return chosen === undefined ? undefined : children[chosen];
  };
  const send = (taker: ConnectionTaker, head: Buffer, socket: Socket) =>
    // A child that went away meanwhile: the client sees its connection closed before any answer.
    taker.send({ type: 'loyalty:connection', head: head.toString('latin1') }, socket, (error) => void (error && socket.destroy()));
  const route = (head: Buffer, socket: Socket) => {
    const taker = takerFor(head);
    if (taker) return send(taker, head, socket);
    if (held.size >= maxHeld) return refused(socket, 'full');
    const timer = setTimeout(() => {
      held.delete(socket);
      refused(socket, 'waited');
    }, heldWaitMs);
    held.set(socket, { head, timer });
  };
  const server = createServer({ pauseOnConnect: true }, (socket) => {
    waiting.add(socket);
    const handOver = (head: Buffer) => {
      clearTimeout(timer);
      socket.removeListener('data', onData);
      if (!waiting.delete(socket)) return;
      // Whatever the client sends next stays in the kernel for the child: net.Socket's pause()
      // leaves the handle reading, and bytes read here after the socket is sent would be dropped.
      // `readStop` is the handle's own (not public API): the suites of test/cluster and
      // test/e2e/cluster.test.ts pass on Node 20 and on 26.10, the Dockerfile's.
      (socket as unknown as { _handle?: { readStop?: () => void } })._handle?.readStop?.();
      socket.pause();
      route(head, socket);
    };
    // Read until the request line is whole (a client may send it in pieces), or as long as no
    // request line may be (the child's parser then refuses it).
    let read: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      read = read.length === 0 ? chunk : Buffer.concat([read, chunk]);
      if (read.includes('\n') || read.length >= MAX_REQUEST_LINE_BYTES) handOver(read);
    };
    const timer = setTimeout(() => handOver(read), headWaitMs);
    socket.on('data', onData);
    socket.once('error', () => void waiting.delete(socket)); // the client went away: nothing to hand over
    socket.once('close', () => {
      clearTimeout(timer);
      waiting.delete(socket);
    });
    socket.resume();
  });
  return Object.assign(server, {
    childrenChanged() {
      for (const [socket, { head, timer }] of held) {
        const taker = socket.destroyed ? undefined : takerFor(head);
        if (!taker && !socket.destroyed) return; // no child takes connections yet: every held one keeps waiting
        clearTimeout(timer);
        held.delete(socket);
        if (taker) send(taker, head, socket);
      }
    },
    refuseHeld() {
      for (const [socket, { timer }] of held) {
        clearTimeout(timer);
        refused(socket, 'stopping');
      }
      held.clear();
    },
  });
}
