import { createMiddleware } from 'hono/factory';
import type { Principal } from '../../projections/access/access-queries.js';
import type { AppEnv } from '../env.js';
import { redactSecrets } from '../errors/redact-secrets.js';

/**
 * One JSON log line per request: id, method, route pattern, path, status, duration, and who asked
 * (business and key ids once authenticated). Built from an allow-list of fields on purpose: no
 * header, query string or body is logged, so keys, secrets and personal data never reach the logs.
 */
export const requestLog = createMiddleware<AppEnv>(async (c, next) => {
  const started = performance.now();
  await next();
  const principal = c.get('principal') as Principal | undefined;
  c.get('logger').info(
    {
      request_id: c.get('requestId'),
      method: c.req.method,
      route: c.req.routePath && c.req.routePath !== '/*' ? c.req.routePath : null,
      path: redactSecrets(c.req.path),
      status: c.res.status,
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
      business_id: principal?.businessId ?? null,
      key_id: principal?.keyId ?? null,
    },
    'request',
  );
});
