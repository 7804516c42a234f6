import { createServer, type RequestListener, type Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Logger } from 'pino';
import { answerClientErrors, unreadableRequest } from './errors/client-error.js';

/**
 * The HTTP server for `fetch` (the app), not yet listening. A request Node cannot parse (oversized
 * headers, broken framing), or that the adapter cannot make a web request of (a malformed Host),
 * gets the contract's JSON error like any other. `route` may send some requests elsewhere before
 * the app sees them (a cluster child passes writes on to the customer's owner: customer-affinity.ts).
 */
export function createHttpServer(
  fetch: (request: Request) => Response | Promise<Response>,
  options: { hostname?: string; logger?: Logger; route?: (app: RequestListener) => RequestListener } = {},
): Server {
  const app = getRequestListener(fetch, { ...(options.hostname ? { hostname: options.hostname } : {}), errorHandler: unreadableRequest(options.logger) });
  const server = createServer(options.route ? options.route(app) : app);
  answerClientErrors(server, options.logger);
  return server;
}
