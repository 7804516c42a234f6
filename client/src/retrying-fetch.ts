/** When the client sends a request again, and how long it waits at most. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 4). */
  attempts?: number;
  /** The longest wait between two attempts, whatever Retry-After says (default 30 s). */
  maxDelayMs?: number;
  /** The wait when an answer that invites a retry carries no Retry-After (default 1 s). */
  defaultDelayMs?: number;
  /** How to wait (tests pass a fake one). */
  sleep?: (ms: number) => Promise<void>;
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Whether an answer says "send the same request again later": 429 `rate_limited`, 503
 * `unavailable`, and the 409s that carry `Retry-After` (`idempotency_key_in_progress`, a
 * `conflict` whose retry budget ran out). A 409 without it (a taken name) is final.
 */
function invitesRetry(response: Response): boolean {
  if (response.status === 429 || response.status === 503) return true;
  return response.status === 409 && response.headers.has('retry-after');
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date. */
function retryAfterMs(response: Response, fallbackMs: number): number {
  const value = response.headers.get('retry-after');
  if (value === null) return fallbackMs;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? fallbackMs : Math.max(0, date - Date.now());
}

/**
 * A `fetch` that sends a request again, byte for byte (its Idempotency-Key included), when the
 * answer invites a retry, waiting what `Retry-After` says. The last answer is returned as is.
 */
export function retryingFetch(base: typeof fetch, options: RetryOptions = {}): (request: Request) => Promise<Response> {
  const { attempts = 4, maxDelayMs = 30_000, defaultDelayMs = 1_000, sleep = sleepFor } = options;
  return async (request) => {
    for (let attempt = 1; ; attempt++) {
      const response = await base(attempt < attempts ? request.clone() : request);
      if (attempt >= attempts || !invitesRetry(response)) return response;
      await response.body?.cancel();
      await sleep(Math.min(maxDelayMs, retryAfterMs(response, defaultDelayMs)));
    }
  };
}
