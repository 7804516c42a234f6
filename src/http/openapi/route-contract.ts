import type { RouteConfig } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { ERROR_CODE_NAMES, ERROR_CODES, type ErrorCode } from '../../error-codes.js';
import type { AppEnv } from '../env.js';
import { toApiError } from '../errors/error-response.js';
import { errorBodyOf } from './error-schemas.js';
import { OPERATIONS } from './operations.js';
import { headerRefs, IDEMPOTENCY_KEY_PARAMETER, type SharedHeader } from './response-headers.js';

const MUTATING = new Set(['post', 'put', 'patch', 'delete']);

/** What any API route can answer, whatever it does (authentication, rate limit, body size, faults). */
const EVERY_ROUTE: ErrorCode[] = [
  'validation_error', 'missing_api_key', 'invalid_api_key', 'ambiguous_api_key', 'insufficient_permissions',
  'payload_too_large', 'rate_limited', 'internal_error', 'unavailable',
];
/** What any POST, PATCH or DELETE can answer besides: body checks, public keys, Idempotency-Key, retries run out. */
const EVERY_WRITE: ErrorCode[] = [
  'invalid_json', 'unsupported_media_type', 'public_key_not_allowed', 'conflict', 'idempotency_key_in_progress', 'idempotency_key_reused',
];
/** Answers that are never stored for an Idempotency-Key, so never replayed. */
const NEVER_REPLAYED: ReadonlySet<ErrorCode> = new Set(['missing_api_key', 'invalid_api_key', 'ambiguous_api_key', 'insufficient_permissions',
  'public_key_not_allowed', 'plan_limit_reached', 'conflict', 'idempotency_key_in_progress', 'rate_limited', 'internal_error', 'unavailable']);
const WITH_RETRY_AFTER: ReadonlySet<ErrorCode> = new Set(['conflict', 'idempotency_key_in_progress', 'rate_limited', 'unavailable']);

const STATUS_DESCRIPTIONS: Record<number, string> = {
  400: 'The request is not valid; nothing was done.',
  401: 'Missing, invalid or ambiguous API key.',
  403: 'The key may not do this.',
  404: 'Unknown id (another business’s ids are unknown too).',
  409: 'Conflict with the current state (see `code`).',
  413: 'The body is over 64 KiB.',
  415: 'The body is not sent as `application/json`.',
  422: 'Valid, but it cannot be done (see `code`); nothing was recorded.',
  429: 'The key’s request budget is used up; retry after `Retry-After` seconds.',
  500: 'A fault on the service’s side, logged with the request id.',
  503: 'A store is unavailable; nothing was written. Retry after `Retry-After` seconds.',
};

const isMutating = (route: RouteConfig) => MUTATING.has(route.method);
const isPaginated = (route: RouteConfig) => {
  const query = route.request?.query as { shape?: Record<string, unknown> } | undefined;
  return query?.shape?.starting_after !== undefined;
};

/** The error codes an operation can answer: those every route shares, and its own (OPERATIONS). */
export function routeErrorCodes(route: RouteConfig): ErrorCode[] {
  const own = route.operationId ? OPERATIONS[route.operationId]?.errors : undefined;
  const declaredStatuses = new Set(Object.keys(route.responses).map(Number).filter((s) => s >= 400));
  const fallback = own ?? ERROR_CODE_NAMES.filter((code) => declaredStatuses.has(ERROR_CODES[code].status) && code !== 'not_found');
  const codes = new Set([...EVERY_ROUTE, ...(isMutating(route) ? EVERY_WRITE : []), ...fallback]);
  return ERROR_CODE_NAMES.filter((code) => codes.has(code));
}

/**
 * The route as the OpenAPI document shows it: every error status it can answer, with `code` an
 * enum of that status's codes and their typed extras; the response headers (X-Request-Id and the
 * RateLimit pair always, Link on lists, Idempotent-Replayed and the Idempotency-Key parameter on
 * writes, Retry-After where a retry is invited); its description from OPERATIONS when it has none.
 * The route's own success responses are kept; its error responses are replaced.
 */
export function withContract(route: RouteConfig): RouteConfig {
  const mutating = isMutating(route);
  const codes = routeErrorCodes(route);
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_CODES[code].status, [...(byStatus.get(ERROR_CODES[code].status) ?? []), code]);

  const responses: RouteConfig['responses'] = {};
  for (const [status, response] of Object.entries(route.responses)) {
    if (Number(status) >= 400 || '$ref' in response) continue;
    const headers: SharedHeader[] = ['X-Request-Id', 'RateLimit', 'RateLimit-Policy'];
    if (isPaginated(route)) headers.push('Link');
    if (mutating) headers.push('Idempotent-Replayed');
    responses[status] = { ...response, headers: { ...headerRefs(headers), ...(response.headers as object | undefined) } };
  }
  for (const [status, statusCodes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const headers: SharedHeader[] = ['X-Request-Id'];
    if (status !== 401) headers.push('RateLimit', 'RateLimit-Policy');
    if (statusCodes.some((code) => WITH_RETRY_AFTER.has(code))) headers.push('Retry-After');
    if (mutating && statusCodes.some((code) => !NEVER_REPLAYED.has(code))) headers.push('Idempotent-Replayed');
    responses[status] = {
      description: STATUS_DESCRIPTIONS[status] ?? 'See `code`.',
      headers: headerRefs(headers),
      content: { 'application/json': { schema: errorBodyOf(statusCodes) } },
    };
  }
  const description = route.description ?? (route.operationId ? OPERATIONS[route.operationId]?.description : undefined);
  return {
    ...route,
    ...(description ? { description } : {}),
    ...(mutating ? { parameters: [...(route.parameters ?? []), IDEMPOTENCY_KEY_PARAMETER] as RouteConfig['parameters'] } : {}),
    responses,
  };
}

/**
 * Codes answered by a route that its OpenAPI entry does not list, as `operationId: code`. The
 * test suite fails a file that meets one (test/support/contract-check.ts); bounded by the number
 * of operations times codes.
 */
export const undeclaredErrorCodes = new Set<string>();

/** Route middleware noting an answered error code the route does not declare. */
export function declaredCodesCheck(route: RouteConfig, codes: ErrorCode[]): MiddlewareHandler<AppEnv> {
  const declared = new Set<string>(codes);
  return async (c, next) => {
    await next();
    if (c.error === undefined) return;
    const { code } = toApiError(c.error);
    if (!declared.has(code)) undeclaredErrorCodes.add(`${route.operationId ?? `${route.method} ${route.path}`}: ${code}`);
  };
}
