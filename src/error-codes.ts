/**
 * Every error `code` the service answers, with its status, when it happens and what a client does
 * about it: the one source of docs/errors.md, the OpenAPI error schemas and the client's error
 * union. `ApiError` only takes a code listed here, so a new code cannot be thrown before it is
 * described.
 */
export const ERROR_CODES = {
  validation_error: {
    status: 400,
    when: 'A field is missing, mistyped, out of range or unknown (body, query, path or a header such as Idempotency-Key), or holds a NUL byte or an unpaired surrogate.',
    action: 'Fix the request: `details` lists every problem as `{path, message}`.',
  },
  invalid_json: {
    status: 400,
    when: 'The body is not valid JSON, has duplicate keys in one object, or is nested deeper than 32 levels.',
    action: 'Send one well-formed JSON value.',
  },
  bad_request: {
    status: 400,
    when: 'The HTTP request itself could not be read (malformed framing).',
    action: 'Fix the HTTP client; nothing reached the service.',
  },
  missing_api_key: {
    status: 401,
    when: 'No key in `X-API-Key` or `Authorization: Bearer`.',
    action: 'Send a key.',
  },
  invalid_api_key: {
    status: 401,
    when: 'The key is unknown, malformed or revoked.',
    action: 'Use an active key (`loyalty keys list`, `GET /api/v1/keys`).',
  },
  ambiguous_api_key: {
    status: 401,
    when: '`X-API-Key` and `Authorization` carry different keys.',
    action: 'Send one of the two headers.',
  },
  insufficient_permissions: {
    status: 403,
    when: 'The key lacks the permission the route needs (the message names it), or would grant or revoke one it does not hold.',
    action: 'Use a key with that permission.',
  },
  public_key_not_allowed: {
    status: 403,
    when: 'A public key on a write, on a private-only route, or listing customers without an exact email, phone or external_reference filter.',
    action: 'Use a private key server-side.',
  },
  plan_limit_reached: {
    status: 403,
    when: 'A free business already has 1,000 customers.',
    action: 'Move the business to the unlimited plan (`loyalty businesses set-plan`).',
  },
  not_found: {
    status: 404,
    when: 'No route has this path.',
    action: 'Check the path against the API reference.',
  },
  customer_not_found: { status: 404, when: 'No customer with this id in the key’s business.', action: 'Check the id.' },
  reward_not_found: { status: 404, when: 'No reward with this id in the key’s business.', action: 'Check the id.' },
  tier_not_found: { status: 404, when: 'No tier with this id in the key’s business.', action: 'Check the id.' },
  event_type_not_found: { status: 404, when: 'No event type with this name in the key’s business.', action: 'Check the name.' },
  webhook_not_found: { status: 404, when: 'No webhook endpoint with this id in the key’s business.', action: 'Check the id.' },
  key_not_found: { status: 404, when: 'No API key with this id in the key’s business.', action: 'Check the id.' },
  redemption_not_found: { status: 404, when: 'No redemption with this id for this customer.', action: 'Check both ids.' },
  transaction_not_found: {
    status: 404,
    when: 'A reversal names a transaction this customer does not have.',
    action: 'Check both ids: the credit’s `id` (`txn_…` of an earn or adjust, `evt_…` of an event).',
  },
  method_not_allowed: {
    status: 405,
    when: 'The path exists but not with this method; the `Allow` header lists the methods it takes.',
    action: 'Use a method from `Allow`.',
  },
  duplicate_transaction: {
    status: 409,
    when: 'The `reference` was already used for this customer (by a transaction, an event or a redemption); nothing was recorded.',
    action: 'Nothing to redo: the original is in the body under `transaction`, `event` or `redemption`.',
  },
  customer_exists: {
    status: 409,
    when: 'The email or external_reference is already taken in this business.',
    action: 'Use the existing customer: its id is in `customer_id`.',
  },
  conflict: {
    status: 409,
    when: 'A tier or event type name or threshold is already taken, or a write met so much concurrency on one resource that its retries ran out (then with `Retry-After`).',
    action: 'Pick another name or threshold; with `Retry-After`, send the same request again after that many seconds.',
  },
  out_of_stock: { status: 409, when: 'The reward’s stock is 0.', action: 'Restock the reward (PATCH `stock_quantity`) or pick another.' },
  achievement_already_granted: {
    status: 409,
    when: 'This achievement was already granted to this customer.',
    action: 'Nothing to do: an achievement is granted once.',
  },
  redemption_already_cancelled: {
    status: 409,
    when: 'The redemption was already cancelled.',
    action: 'Nothing to do: the points and stock were returned the first time.',
  },
  idempotency_key_in_progress: {
    status: 409,
    when: 'A request with the same Idempotency-Key is still running.',
    action: 'Retry with the same key after `Retry-After` (1 s).',
  },
  last_private_key: {
    status: 409,
    when: 'Revoking the business’s last active private key with keys:write.',
    action: 'Create another private key with keys:write first, or use `loyalty keys revoke --force`.',
  },
  payload_too_large: { status: 413, when: 'The body is over 64 KiB.', action: 'Send a smaller body.' },
  unsupported_media_type: {
    status: 415,
    when: 'A body sent without `Content-Type: application/json` (optionally `; charset=utf-8`).',
    action: 'Send JSON with that Content-Type.',
  },
  insufficient_points: {
    status: 422,
    when: 'A debit (deduct, negative adjust, redemption) would take the balance below 0; nothing was recorded.',
    action: 'The current balance is in `balance`.',
  },
  unknown_event_type: { status: 422, when: 'The event names a type the business has not created.', action: 'Create it with POST /api/v1/event-types.' },
  reward_inactive: { status: 422, when: 'The reward is not active.', action: 'Activate it (PATCH `active: true`) or pick another.' },
  points_out_of_range: {
    status: 422,
    when: 'An event’s rules award more than 1,000,000,000 points, or a balance or lifetime total would pass 2^53 − 1.',
    action: 'Check the rules or the amount.',
  },
  transaction_not_reversible: {
    status: 422,
    when: 'A reversal names a transaction that is not a credit (a deduction, negative adjust, redemption, release, expiry or reversal); nothing was recorded.',
    action: 'Reverse the earn, adjust or event that credited the points.',
  },
  reversal_exceeds_credit: {
    status: 422,
    when: 'A reversal asks for more than the credit’s points not reversed yet; nothing was recorded.',
    action: 'What can still be reversed is in `reversible_amount`.',
  },
  idempotency_key_reused: {
    status: 422,
    when: 'The Idempotency-Key was used for a different request (method, path or body) in the last 24 hours.',
    action: 'Use a new key for a new request.',
  },
  request_timeout: { status: 408, when: 'The request was not received in time.', action: 'Send the whole request promptly; check the network.' },
  headers_too_large: { status: 431, when: 'The request headers are too large to read.', action: 'Send smaller headers.' },
  rate_limited: {
    status: 429,
    when: 'The key used up its request budget; `RateLimit` and `RateLimit-Policy` describe it.',
    action: 'Retry after `Retry-After` seconds.',
  },
  internal_error: {
    status: 500,
    when: 'A fault on the service’s side; it is logged with the request id.',
    action: 'Retry later with the same Idempotency-Key; report the request id if it persists.',
  },
  unavailable: {
    status: 503,
    when: 'A store is unreachable, out of connections or does not answer in time; nothing was half-written.',
    action: 'Retry after `Retry-After` seconds with the same Idempotency-Key.',
  },
} as const satisfies Record<string, { status: number; when: string; action: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;
export type ErrorStatus = (typeof ERROR_CODES)[ErrorCode]['status'];

export const ERROR_CODE_NAMES = Object.keys(ERROR_CODES) as ErrorCode[];
