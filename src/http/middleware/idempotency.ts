import { hash } from 'node:crypto';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import { ApiError, errors } from '../../errors.js';
import { AnswerAlreadyStored, type AppendReceipt, CommitOutcomeUnknown } from '../../store/event-store.js';
import { canonicalJson } from '../../json-equality.js';
import type { AppEnv } from '../env.js';
import type { EarlierAttempt } from '../../events/metadata.js';
import type { StoredResponse } from './idempotency-store.js';

const MUTATING = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
const KEY_FORMAT = /^[\x20-\x7e]{1,255}$/;
const REPLAYED_HEADERS = ['content-type', 'link', 'location'];
/** Fields of an answer that carry a secret shown once (a new API key, a webhook signing secret): stored as null. */
const SECRET_FIELDS = ['key', 'secret'];
const SECRET_FORMAT = /^(?:sk_live_|pk_live_|whsec_)/;
/** 409 codes that say "retry": kept, they would answer every retry with the same refusal. */
const RETRYABLE_CONFLICTS = new Set(['conflict', 'idempotency_key_in_progress']);
const JSON_HEADERS = { 'content-type': 'application/json' };

/** A request holding its Idempotency-Key: what a write needs to store the answer with its append. */
export interface IdempotentRequest {
  /** The answer `status`/`value` (sent with `c.json`) as the record keeps it, to store in the append's transaction. */
  receipt(status: number, value: unknown): AppendReceipt;
  /** Set when the key was taken over from an attempt that never stored an answer (`CommandContext.earlierAttempt`). */
  earlierAttempt?: EarlierAttempt;
}

/**
 * `Idempotency-Key` on every POST, PATCH and DELETE (CONTRACT.md §5): a final answer is stored and
 * replayed to a retry of the same request; a different request under the same key is refused
 * (422), and so is a retry while the first is still running (409). It runs after every
 * authorization rule of the route (see `guard`), so a replay is never handed to a key that could
 * not have made the request itself.
 */
export const idempotency = createMiddleware<AppEnv>(async (c, next) => {
  const key = c.req.header('idempotency-key');
  if (key === undefined || !MUTATING.has(c.req.method)) return next();
  if (!KEY_FORMAT.test(key)) {
    throw errors.validation([{ path: 'Idempotency-Key', message: 'must be 1–255 printable ASCII characters' }]);
  }
  const store = c.get('idempotencyStore');
  const businessId = c.get('principal').businessId;

  const claim = await store.claim(businessId, key, requestFingerprint(c), c.get('clock').now());
  switch (claim.outcome) {
    case 'mismatch':
      throw new ApiError(422, 'idempotency_key_reused', 'This Idempotency-Key was used for a different request.');
    case 'in_progress':
      throw new ApiError(409, 'idempotency_key_in_progress', 'A request with this Idempotency-Key is still running.', {}, {
        'Retry-After': '1',
      });
    case 'replay':
      return replay(c, claim.response);
    case 'proceed':
      break;
  }
  const { token, takenOver } = claim;

  let stored: AppendReceipt | undefined;
  // The answer was built from the events of the attempt whose key this one took over: a replay.
  let rebuilt = false;
  c.set('idempotency', {
    receipt(status, value) {
      stored = { businessId, key, token, status, headers: JSON_HEADERS, body: withoutSecrets(JSON.stringify(value)) };
      return stored;
    },
    ...(takenOver && { earlierAttempt: { claimedAt: takenOver.claimedAt, rebuilt: () => void (rebuilt = true) } }),
  });
  try {
    await next();
  } catch (error) {
    await store.release(businessId, key, token).catch(() => {});
    throw error;
  }
  if (c.error instanceof AnswerAlreadyStored) {
    // Another attempt of this request committed first: answer what it answered.
    const claim = await store.claim(businessId, key, requestFingerprint(c), c.get('clock').now());
    if (claim.outcome === 'replay') return answerInstead(c, replay(c, claim.response));
  }
  const response = c.res;
  const body = await response.clone().text();
  // Stored with the append (`AppendOptions.receipt`) as sent: nothing more to store.
  if (stored && stored.status === response.status && stored.body === withoutSecrets(body) && response.headers.get('content-type') === JSON_HEADERS['content-type']) {
    return;
  }
  if (!isFinal(response.status, body)) {
    if (c.error instanceof CommitOutcomeUnknown && !stored) {
      // The write may have been applied, and its answer was not stored with it: a retry takes
      // the key over at once and first looks for this attempt's events in the log.
      await store.endLease(businessId, key, token, c.get('clock').now()).catch(() => {});
    } else await store.release(businessId, key, token).catch(() => {});
    return;
  }
  const headers: Record<string, string> = {};
  for (const name of REPLAYED_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  // The request's work is done (a write is committed): its answer goes out even if the record
  // cannot be stored (the database went away); the key then stays held until its lease expires.
  const answer = { status: response.status, headers, body: withoutSecrets(body) };
  await store.complete(businessId, key, token, answer).catch((error) => {
    c.get('logger').warn({ err: error, idempotencyKey: key }, 'could not store the idempotent response');
  });
  if (rebuilt) answerInstead(c, replay(c, answer));
});

/**
 * Replaces the answer already made further in (hono keeps that one when a middleware returns
 * another after `next`), dropping its headers rather than merging them in.
 */
function answerInstead(c: Context<AppEnv>, response: Response): void {
  c.res = undefined;
  c.res = response;
}

/** The stored answer, marked as a replay. */
function replay(c: Context<AppEnv>, response: StoredResponse): Response {
  c.set('replayed', true);
  const headers = new Headers(response.headers);
  headers.set('Idempotent-Replayed', 'true');
  headers.set('X-Request-Id', c.get('requestId'));
  return new Response(response.body, { status: response.status, headers });
}

/**
 * What makes two requests "the same": method, path (a trailing slash names the same resource),
 * query and the parsed body, compared as canonical JSON (whitespace and key order do not matter;
 * no body, an empty one and `{}` are the same).
 */
function requestFingerprint(c: Context<AppEnv>): string {
  const url = new URL(c.req.url);
  const path = url.pathname.length > 1 ? url.pathname.replace(/\/$/, '') : url.pathname;
  const query = [...url.searchParams].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return hash('sha256', canonicalJson([c.req.method, path, query, c.get('body') ?? {}]), 'hex');
}

/** Whether an answer is kept for replay: not 401/403 (authorization runs again), not one that says "retry". */
function isFinal(status: number, body: string): boolean {
  if (status >= 500 || status === 429 || status === 401 || status === 403) return false;
  if (status === 409) return !RETRYABLE_CONFLICTS.has(errorCode(body) ?? '');
  return true;
}

function errorCode(body: string): string | undefined {
  try {
    return (JSON.parse(body) as { code?: string }).code;
  } catch {
    return undefined;
  }
}

/** The answer as stored: a secret shown once (`key`, `secret`) is never kept, so a replay shows null. */
function withoutSecrets(body: string): string {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return body;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return body;
  const fields = value as Record<string, unknown>;
  const isSecret = (name: string) => typeof fields[name] === 'string' && SECRET_FORMAT.test(fields[name]);
  if (!SECRET_FIELDS.some(isSecret)) return body;
  for (const name of SECRET_FIELDS) if (isSecret(name)) fields[name] = null;
  return JSON.stringify(fields);
}
