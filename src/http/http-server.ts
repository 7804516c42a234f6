import { createServer, type Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Logger } from 'pino';
import { answerClientErrors, unreadableRequest } from './errors/client-error.js';

/**
 * The HTTP server for `fetch` (the app), not yet listening. A request Node cannot parse (oversized
 * headers, broken framing), or that the adapter cannot make a web request of (a malformed Host),
 * gets the contract's JSON error like any other.
 */
export function createHttpServer(fetch: (request: Request) => Response | Promise<Response>, options: { hostname?: string; logger?: Logger } = {}): Server {
  const server = createServer(getRequestListener(fetch, { ...(options.hostname ? { hostname: options.hostname } : {}), errorHandler: unreadableRequest(options.logger) }));
  answerClientErrors(server, options.logger);
  return server;
}
