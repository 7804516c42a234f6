import { createMiddleware } from 'hono/factory';
import { errors } from '../../errors.js';
import type { AppEnv } from '../env.js';
import { withAnswerHeaders } from './answer-headers.js';
import type { BucketPolicy, RateLimitStore, Take } from './rate-limit-store.js';
import type { Clock } from '../../clock.js';

/**
 * The `RateLimit-Policy` and `RateLimit` fields of draft-ietf-httpapi-ratelimit-headers: the
 * quota `q` is the bucket's size, refilled in full over the window `w`; `r` is what remains and
 * `t` the seconds until the bucket is full again.
 */
function rateLimitHeaders(name: string, policy: BucketPolicy, take: Take): Record<string, string> {
  const windowSeconds = Math.ceil(policy.burst / policy.rps);
  const remaining = Math.floor(take.tokens);
  const fullInSeconds = Math.ceil((policy.burst - take.tokens) / policy.rps);
  return {
    'RateLimit-Policy': `"${name}";q=${policy.burst};w=${windowSeconds}`,
    RateLimit: `"${name}";r=${remaining};t=${fullInSeconds}`,
  };
}

/** One rate limit: its name in the RateLimit headers, its bucket policy and where its buckets live. */
export interface RateLimitTier {
  name: string;
  policy: BucketPolicy;
  store: RateLimitStore;
}

/**
 * A token bucket per API key (runs right after authentication), with its own limit for public
 * keys: every browser visitor of a shop shares its public key's bucket. A request without a token
 * gets 429 `rate_limited` with `Retry-After` (seconds until the next token); every answer carries
 * the RateLimit headers.
 */
export function rateLimit(tiers: Record<'private' | 'public', RateLimitTier>, clock: Clock) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const { name, policy, store } = tiers[c.get('principal').type];
    if (policy.rps <= 0) return next();
    const take = await store.take(c.get('principal').keyId, clock.now().getTime());
    const headers = rateLimitHeaders(name, policy, take);
    if (!take.granted) {
      const retryAfterSeconds = Math.max(1, Math.ceil((1 - take.tokens) / policy.rps));
      throw errors.rateLimited(retryAfterSeconds, headers);
    }
    return withAnswerHeaders(c, Object.entries(headers), next);
  });
}
