import { createMiddleware } from 'hono/factory';
import { errors } from '../../errors.js';
import type { AppEnv } from '../env.js';
import type { BucketPolicy, RateLimitStore, Take } from './rate-limit-store.js';

const POLICY_NAME = 'api-key';

/**
 * The `RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers: the
 * quota `q` is the bucket's size, refilled in full over the window `w`; `r` is what remains and
 * `t` the seconds until the bucket is full again.
 */
function rateLimitHeaders(policy: BucketPolicy, take: Take): Record<string, string> {
  const windowSeconds = Math.ceil(policy.burst / policy.rps);
  const remaining = Math.floor(take.tokens);
  const fullInSeconds = Math.ceil((policy.burst - take.tokens) / policy.rps);
  return {
    'RateLimit-Policy': `"${POLICY_NAME}";q=${policy.burst};w=${windowSeconds}`,
    RateLimit: `"${POLICY_NAME}";r=${remaining};t=${fullInSeconds}`,
  };
}

/**
 * A token bucket per API key (runs right after authentication). A request without a token gets
 * 429 `rate_limited` with `Retry-After` (seconds until the next token); every answer carries the
 * RateLimit headers.
 */
export function rateLimit(store: RateLimitStore, policy: BucketPolicy, now: () => number = Date.now) {
  return createMiddleware<AppEnv>(async (c, next) => {
    if (policy.rps <= 0) return next();
    const take = await store.take(c.var.principal.keyId, now());
    const headers = rateLimitHeaders(policy, take);
    if (!take.granted) {
      const retryAfterSeconds = Math.max(1, Math.ceil((1 - take.tokens) / policy.rps));
      throw errors.rateLimited(retryAfterSeconds, headers);
    }
    await next();
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  });
}
