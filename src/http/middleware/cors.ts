import { createMiddleware } from 'hono/factory';
import { KEY_PREFIXES } from '../../events/permissions.js';
import type { AppEnv } from '../env.js';
import { withAnswerHeaders } from './answer-headers.js';

const ALLOWED_HEADERS = 'X-API-Key, Authorization, Content-Type, Idempotency-Key';

/**
 * Public keys are meant for browsers: answer preflights, and let any origin read responses to
 * requests that carry a public key. Responses to private-key requests carry no CORS headers.
 */
export const preflight = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.method !== 'OPTIONS' || !c.req.header('access-control-request-method')) return next();
  return c.body(null, 204, {
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Methods': 'GET, POST, PATCH, DELETE',
    'Access-Control-Allow-Headers': ALLOWED_HEADERS,
    'Access-Control-Max-Age': '600',
  });
});

/**
 * CORS on every answer to a request that carries a public key, or something that looks like one:
 * refusals included (401, 403, 429), so a browser can read why it was refused. (A key is public
 * only with the public prefix, so what was presented decides before authentication runs.)
 */
const CORS_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['Access-Control-Allow-Origin', '*'],
  ['Access-Control-Expose-Headers', 'X-Request-Id, Link, Idempotent-Replayed, Retry-After, RateLimit, RateLimit-Policy'],
];

export const publicKeyCors = createMiddleware<AppEnv>((c, next) => {
  const presented = `${c.req.header('x-api-key') ?? ''} ${c.req.header('authorization') ?? ''}`;
  return presented.includes(KEY_PREFIXES.public) ? withAnswerHeaders(c, CORS_HEADERS, next) : next();
});
