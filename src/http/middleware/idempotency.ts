import { createHash } from 'node:crypto';
import { createMiddleware } from 'hono/factory';
import { ApiError, errors } from '../../errors.js';
import type { AppEnv } from '../env.js';
import { idempotencyStore } from './idempotency-store.js';

const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
const KEY_FORMAT = /^[\x20-\x7e]{1,255}$/;
const REPLAYED_HEADERS = ['content-type', 'link', 'location'];

/**
 * `Idempotency-Key` on every POST, PATCH and DELETE: the first response (below 500) is stored and
 * replayed byte for byte to a retry of the same request; a different request under the same key
 * is refused (422), and so is a retry while the first is still running (409).
 */
export const idempotency = createMiddleware<AppEnv>(async (c, next) => {
  const key = c.req.header('idempotency-key');
  if (key === undefined || !MUTATING.has(c.req.method)) return next();
  if (!KEY_FORMAT.test(key)) {
    throw errors.validation([{ path: 'Idempotency-Key', message: 'must be 1–255 printable ASCII characters' }]);
  }
  const store = idempotencyStore(c.var.services.db);
  const businessId = c.var.principal.businessId;
  const url = new URL(c.req.url);
  const fingerprint = createHash('sha256')
    .update(`${c.req.method} ${url.pathname}${url.search}\n${await c.req.text()}`)
    .digest('hex');

  const claim = await store.claim(businessId, key, fingerprint);
  switch (claim.outcome) {
    case 'mismatch':
      throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used for a different request.');
    case 'in_progress':
      throw new ApiError(409, 'idempotency_key_in_progress', 'A request with this Idempotency-Key is still running.', {}, {
        'Retry-After': '1',
      });
    case 'replay': {
      const headers = new Headers(claim.response.headers);
      headers.set('Idempotent-Replayed', 'true');
      headers.set('X-Request-Id', c.get('requestId'));
      return new Response(claim.response.body, { status: claim.response.status, headers });
    }
    case 'proceed':
      break;
  }

  try {
    await next();
  } catch (error) {
    await store.release(businessId, key).catch(() => {});
    throw error;
  }
  const response = c.res;
  if (response.status >= 500) {
    await store.release(businessId, key).catch(() => {});
    return;
  }
  const body = await response.clone().text();
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  // The request's work is done (a write is committed): its answer goes out even if the record
  // cannot be stored (the database went away); the key then stays held until its lease expires.
  await store.complete(businessId, key, { status: response.status, headers, body }).catch((error) => {
    c.var.services.logger.warn({ err: error, idempotencyKey: key }, 'could not store the idempotent response');
  });
});
