import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { ErrorCode } from '../../error-codes.js';
import { newId } from '../../ids.js';

/** What Node's HTTP parser reports (`HPE_*` codes from llhttp, or a socket error such as `ECONNRESET`). */
export interface ClientError extends Error {
  code?: string;
}

interface Refusal {
  status: number;
  code: ErrorCode;
  message: string;
}

/** The answer to a request Node could not parse; anything not named here is malformed framing. */
function refusalFor(errorCode: string | undefined): Refusal {
  switch (errorCode) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'headers_too_large', message: 'The request headers are too large.' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, code: 'payload_too_large', message: 'The chunk extensions of the request body are too large.' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, code: 'request_timeout', message: 'The request was not received in time.' };
    default:
      return { status: 400, code: 'bad_request', message: 'The request is not valid HTTP/1.1 and could not be read.' };
  }
}

/** The socket's response in progress, if any (Node keeps it there; `headersSent` is its public flag). */
const responseOf = (socket: Duplex) => (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;

/** How long a refused client may take to close its side before the socket is destroyed. */
const LINGER_MS = 2_000;

/**
 * Node's HTTP server answers a request it cannot parse with an empty 400 or 431. With this
 * `clientError` listener it gets the contract's JSON error instead, with a fresh request id (the
 * request's own X-Request-Id could not be read), then the connection is closed. Nothing is written
 * when the socket is no longer writable, the client reset it, or a response has already started on
 * it (bytes of ours would corrupt it).
 *
 * @example
 * const server = serve({ fetch: app.fetch, port });
 * answerClientErrors(server, logger);
 */
export function answerClientErrors(server: { on(event: 'clientError', listener: (error: ClientError, socket: Duplex) => void): unknown }, logger?: Logger): void {
  server.on('clientError', clientErrorListener(logger));
}

/** The `clientError` listener itself (exported for servers built by hand). */
export function clientErrorListener(logger?: Logger): (error: ClientError, socket: Duplex) => void {
  // The parser keeps failing on every later chunk of a refused request: answer only the first.
  const answered = new WeakSet<Duplex>();
  return (error, socket) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || !socket.writable || responseOf(socket)?.headersSent) {
      socket.destroy();
      return;
    }
    const refusal = refusalFor(error.code);
    const requestId = newId('request');
    const body = JSON.stringify({ code: refusal.code, message: refusal.message, request_id: requestId });
    const head = [
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? 'Error'}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${requestId}`,
      'Connection: close',
    ].join('\r\n');
    // end(), not destroy(): what the client is still sending must not reset the connection before
    // it has read the answer. A client that does not close its side in time is cut off.
    socket.end(`${head}\r\n\r\n${body}`);
    const linger = setTimeout(() => socket.destroy(), LINGER_MS).unref();
    socket.once('close', () => clearTimeout(linger));
    logger?.info({ request_id: requestId, status: refusal.status, code: refusal.code, parse_error: error.code ?? null }, 'request refused while parsing');
  };
}

/**
 * The answer to a request Node parsed but `@hono/node-server` could not turn into a web request
 * (a Host header that is not a host, a path that is not one): the contract's JSON 400 instead of
 * the adapter's empty one. Its `errorHandler`.
 */
export function unreadableRequest(logger?: Logger): (error: unknown) => Response {
  return (error) => {
    const requestId = newId('request');
    const refusal = refusalFor(undefined);
    logger?.info({ request_id: requestId, status: refusal.status, code: refusal.code, reason: (error as Error).message }, 'request refused before routing');
    return new Response(JSON.stringify({ code: refusal.code, message: refusal.message, request_id: requestId }), {
      status: refusal.status,
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': requestId, Connection: 'close' },
    });
  };
}
