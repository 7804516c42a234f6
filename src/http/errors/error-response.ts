import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ZodError } from 'zod';
import { DatabaseNotAnswering } from '../../db/query-deadline.js';
import { ApiError, errors, type ValidationIssue } from '../../errors.js';
import type { AppEnv } from '../env.js';
import { AnswerAlreadyStored, CommitOutcomeUnknown } from '../../store/event-store.js';
import { redactSecrets } from './redact-secrets.js';
import { payloadTooLarge } from '../middleware/body-size.js';

/**
 * PostgreSQL/driver failures that mean "the store is not available", answered 503 rather than 500:
 * unreachable or reset connections, the 08 class (connection exceptions), shutdown (57P01–03),
 * a statement timeout (57014), too many connections (53300), a database that does not exist
 * (3D000) or does not accept connections (55000, `allow_connections false`); and a server that
 * does not answer in time (`DatabaseNotAnswering`: the client-side deadline, src/db/query-deadline.ts).
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE',
  '08000', '08001', '08003', '08004', '08006', '57P01', '57P02', '57P03', '57014', '53300', '3D000', '55000',
]);

function isUnavailable(error: unknown): boolean {
  if (error instanceof DatabaseNotAnswering) return true;
  const e = error as { code?: string; message?: string };
  return (
    (e?.code !== undefined && UNAVAILABLE_CODES.has(e.code)) ||
    /Connection terminated|connection error|Client has encountered a connection error|timeout exceeded when trying to connect/i.test(
      e?.message ?? '',
    )
  );
}

/** Any thrown value as the contract's error: `ApiError` as is, framework errors mapped, the rest 500/503. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof HTTPException) {
    if (error.status === 413) return payloadTooLarge();
    if (error.status === 415) {
      return new ApiError(415, 'unsupported_media_type', 'Send the body as JSON with Content-Type: application/json.');
    }
    if (error.status === 400) return errors.invalidJson();
  }
  if (error instanceof CommitOutcomeUnknown) return errors.outcomeUnknown();
  if (error instanceof AnswerAlreadyStored) return errors.retryLater('Another attempt of this request was answered meanwhile; retry to receive its answer.');
  if (isUnavailable(error)) return errors.unavailable();
  return new ApiError(500, 'internal_error', 'Something went wrong on our side. It has been logged with the request id.');
}

/** The JSON error body every failure gets: `{code, message, request_id, details?, …extras}`. */
export function errorResponse(c: Context<AppEnv>, error: ApiError): Response {
  for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
  const details = error.extras.details as ValidationIssue[] | undefined;
  return c.json(
    {
      code: error.code,
      message: redactSecrets(error.message),
      request_id: c.get('requestId'),
      ...error.extras,
      ...(details ? { details: details.map((d) => ({ path: redactSecrets(d.path), message: redactSecrets(d.message) })) } : {}),
    },
    error.status,
  );
}

/** Zod issues as the `details` of a validation error: one `{path, message}` per problem. */
export function validationError(zodError: ZodError, prefix: string[] = []): ApiError {
  const details: ValidationIssue[] = zodError.issues.flatMap((issue) => {
    const base = [...prefix, ...issue.path.map(String)];
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ path: [...base, key].join('.'), message: 'unknown field' }));
    }
    return [{ path: base.join('.') || '(body)', message: issue.message }];
  });
  return errors.validation(details);
}
