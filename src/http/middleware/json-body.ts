import { createMiddleware } from 'hono/factory';
import { ApiError, errors } from '../../errors.js';
import type { AppEnv } from '../env.js';

const WITH_BODY = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

/**
 * Checks a request body before any route sees it: a body must be JSON sent as JSON (415), and
 * must parse (400 `invalid_json`). An empty body is left to the route's schema to judge.
 */
export const jsonBody = createMiddleware<AppEnv>(async (c, next) => {
  if (!WITH_BODY.has(c.req.method)) return next();
  const text = await c.req.text();
  const contentType = c.req.header('content-type') ?? '';
  if (text.length === 0) {
    if (contentType && !JSON_TYPE.test(contentType)) throw unsupportedMediaType();
    return next();
  }
  if (!JSON_TYPE.test(contentType)) throw unsupportedMediaType();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw errors.invalidJson();
  }
  const nul = findNul(body, '');
  if (nul !== null) {
    throw errors.validation([{ path: nul || '(body)', message: 'text must not contain the NUL character (\\u0000)' }]);
  }
  return next();
});

/** The path of the first string (or key) holding U+0000, which PostgreSQL cannot store in jsonb; null when none. */
function findNul(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.includes('\0') ? path : null;
  if (value === null || typeof value !== 'object') return null;
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (key.includes('\0')) return childPath;
    const found = findNul(child, childPath);
    if (found !== null) return found;
  }
  return null;
}

const unsupportedMediaType = () =>
  new ApiError(415, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
