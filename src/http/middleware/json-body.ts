import { createMiddleware } from 'hono/factory';
import { ApiError } from '../../errors.js';
import type { AppEnv } from '../env.js';
import { parseStrictJson } from './strict-json.js';

const WITH_BODY = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
/** `application/json`, optionally with `charset=utf-8`: nothing else is parsed as JSON. */
const JSON_TYPE = /^application\/json\s*(?:;\s*charset\s*=\s*(?:utf-8|"utf-8")\s*)?$/i;

/**
 * Checks a request body before any route sees it: a body must be JSON sent as JSON (415), and
 * must parse strictly (see `parseStrictJson`). The parsed body is kept as the context's `body` (undefined
 * when there is none); an empty body is left to the route's schema to judge.
 */
export const jsonBody = createMiddleware<AppEnv>(async (c, next) => {
  if (!WITH_BODY.has(c.req.method)) return next();
  const text = await c.req.text();
  const contentType = c.req.header('content-type');
  if (text.length === 0) {
    if (contentType && !JSON_TYPE.test(contentType)) throw unsupportedMediaType();
    return next();
  }
  if (!contentType || !JSON_TYPE.test(contentType)) throw unsupportedMediaType();
  c.set('body', parseStrictJson(text));
  return next();
});

const unsupportedMediaType = () =>
  new ApiError(415, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
