export { createLoyaltyClient, type LoyaltyClient, type LoyaltyClientOptions } from './client.js';
export { LoyaltyApiError, unwrap, type ErrorBody, type ErrorCode, type ErrorOf } from './errors.js';
export { idempotently, newIdempotencyKey } from './idempotency.js';
export { listAll, type ItemOf, type ListPath } from './pages.js';
export { retryingFetch, type RetryOptions } from './retrying-fetch.js';
export { webhookVerifier, type WebhookEventType, type WebhookMessage } from './webhooks.js';
export type { components, paths, webhooks } from './generated/api.js';
