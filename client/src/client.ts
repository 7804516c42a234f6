import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './generated/api.js';
import { type RetryOptions, retryingFetch } from './retrying-fetch.js';

export interface LoyaltyClientOptions {
  /** Where the service answers, e.g. `http://127.0.0.1:3000` (the `servers` URL of its document). */
  baseUrl: string;
  /** A private (`sk_live_…`) or public (`pk_live_…`) key, sent as X-API-Key. */
  apiKey: string;
  /** Retries of answers that invite one (409 in progress, 429, 503), honouring Retry-After. */
  retry?: RetryOptions;
  fetch?: typeof fetch;
}

export type LoyaltyClient = Client<paths>;

/**
 * A typed client of the whole API (openapi-fetch over the generated `paths`): every path,
 * parameter, body, answer and error union is checked by the compiler.
 *
 * ```ts
 * const api = createLoyaltyClient({ baseUrl: 'http://127.0.0.1:3000', apiKey: process.env.LOYALTY_KEY! });
 * const { data, error } = await api.GET('/api/v1/customers/{customer_id}', { params: { path: { customer_id } } });
 * ```
 */
export function createLoyaltyClient(options: LoyaltyClientOptions): LoyaltyClient {
  const base = options.fetch ?? globalThis.fetch;
  return createClient<paths>({
    baseUrl: options.baseUrl,
    headers: { 'X-API-Key': options.apiKey },
    fetch: retryingFetch(base, options.retry),
  });
}
