import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env.js';
import { withAnswerHeaders } from './answer-headers.js';

/**
 * The headers of hono's `secureHeaders()` with its defaults (helmet's), less
 * `Cross-Origin-Resource-Policy`: browsers on shops' own origins read the API with public keys.
 * Listed here rather than taken from that middleware because it sets them on the web `Response`
 * after the handler, which costs every answer (see `withAnswerHeaders`).
 */
export const SECURITY_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['Cross-Origin-Opener-Policy', 'same-origin'],
  ['Origin-Agent-Cluster', '?1'],
  ['Referrer-Policy', 'no-referrer'],
  ['Strict-Transport-Security', 'max-age=15552000; includeSubDomains'],
  ['X-Content-Type-Options', 'nosniff'],
  ['X-DNS-Prefetch-Control', 'off'],
  ['X-Download-Options', 'noopen'],
  ['X-Frame-Options', 'SAMEORIGIN'],
  ['X-Permitted-Cross-Domain-Policies', 'none'],
  ['X-XSS-Protection', '0'],
];

/** A client's own `X-Request-Id` is kept when it is short and plain, as hono's `requestId()` does. */
const PLAIN_REQUEST_ID = /^[\w\-=]{1,255}$/;

/**
 * Every answer's security headers and `X-Request-Id`: the client's own id when it sent a usable
 * one, else a new one (`req_…`), also put on the context for the handlers and the request log.
 */
export function answerHeaders(newRequestId: () => string) {
  return createMiddleware<AppEnv>((c, next) => {
    const sent = c.req.header('x-request-id');
    const requestId = sent !== undefined && PLAIN_REQUEST_ID.test(sent) ? sent : newRequestId();
    c.set('requestId', requestId);
    return withAnswerHeaders(c, [...SECURITY_HEADERS, ['X-Request-Id', requestId]], next);
  });
}
