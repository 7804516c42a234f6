/**
 * The one error type of the service: a contract `code`, its HTTP status, a message for humans and
 * optional extra body fields. Deciders and handlers throw it; `app.onError` turns it into the JSON
 * error body, so no route builds an error response by hand.
 */
export class ApiError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 415 | 422 | 429 | 500 | 503,
    readonly code: string,
    message: string,
    readonly extras: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface ValidationIssue {
  path: string;
  message: string;
}

export const errors = {
  validation: (details: ValidationIssue[], message = 'The request is not valid.') =>
    new ApiError(400, 'validation_error', message, { details }),
  invalidJson: (why?: string) =>
    new ApiError(400, 'invalid_json', why ? `The request body is not valid JSON: ${why}.` : 'The request body is not valid JSON.'),
  notFound: (code: string, what: string, id: string) =>
    new ApiError(404, code, `No ${what} with id '${id}'.`),
  customerNotFound: (id: string) => errors.notFound('customer_not_found', 'customer', id),
  keyNotFound: (id: string) => errors.notFound('key_not_found', 'API key', id),
  tierNotFound: (id: string) => errors.notFound('tier_not_found', 'tier', id),
  eventTypeNotFound: (name: string) => new ApiError(404, 'event_type_not_found', `No event type named '${name}'.`),
  rewardNotFound: (id: string) => errors.notFound('reward_not_found', 'reward', id),
  webhookNotFound: (id: string) => errors.notFound('webhook_not_found', 'webhook', id),
  redemptionNotFound: (id: string) => errors.notFound('redemption_not_found', 'redemption', id),
  insufficientPoints: (balance: number, needed: number) =>
    new ApiError(422, 'insufficient_points', `The balance is ${balance}; this needs ${needed}.`, {
      balance,
    }),
  insufficientPermissions: (permission: string) =>
    new ApiError(403, 'insufficient_permissions', `This key lacks the '${permission}' permission.`),
  publicKeyNotAllowed: (message = 'This endpoint needs a private key (sk_live_…).') =>
    new ApiError(403, 'public_key_not_allowed', message),
  planLimitReached: (limit: number) =>
    new ApiError(
      403,
      'plan_limit_reached',
      `The free plan allows at most ${limit} customers. Upgrade the business's plan to add more.`,
    ),
  conflict: (message: string) => new ApiError(409, 'conflict', message),
  /** CONTRACT.md §2: the API never revokes the business's last active private key with keys:write. */
  lastPrivateKey: (keyId: string) =>
    new ApiError(
      409,
      'last_private_key',
      `Key '${keyId}' is the business's last active private key with keys:write; revoking it would leave no key that can manage keys.`,
    ),
  /** CONTRACT.md §1, §3: one event awards at most 1,000,000,000 points; balances stay safe integers. */
  pointsOutOfRange: (message: string) => new ApiError(422, 'points_out_of_range', message),
  /** A concurrency retry budget ran out: the same request may well succeed if sent again. */
  retryLater: (message: string) => new ApiError(409, 'conflict', message, {}, { 'Retry-After': '1' }),
  rateLimited: (retryAfterSeconds: number, headers: Record<string, string>) =>
    new ApiError(429, 'rate_limited', `Too many requests for this API key; retry in ${retryAfterSeconds} s.`, {}, {
      ...headers,
      'Retry-After': String(retryAfterSeconds),
    }),
  /** The store stopped answering while a write was committing (CONTRACT.md §12): a retry with the key learns what happened. */
  outcomeUnknown: () =>
    new ApiError(
      503,
      'unavailable',
      'The store stopped answering while this write was being committed, so it may or may not have been applied. Retry with the same Idempotency-Key to receive its outcome.',
      {},
      { 'Retry-After': '1' },
    ),
  unavailable: () =>
    new ApiError(503, 'unavailable', 'A store is unreachable. Nothing was written; retry later.', {}, {
      'Retry-After': '1',
    }),
};
