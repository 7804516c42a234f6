import { randomUUID } from 'node:crypto';

/** A fresh Idempotency-Key: one per logical operation. */
export const newIdempotencyKey = (): string => randomUUID();

/** Whether a failure means "the answer was lost": the request may or may not have been done. */
const answerLost = (error: unknown) => error instanceof TypeError || (error as { name?: string })?.name === 'AbortError';

/**
 * Runs one logical write under one Idempotency-Key, and runs it again with the same key when its
 * answer is lost (a network error), so it is done at most once: a retry of a write that was done
 * gets the stored answer (`Idempotent-Replayed: true`). Answers that invite a retry (409 in
 * progress, 429, 503) are already retried by the client itself, with the same key.
 *
 * ```ts
 * const txn = await idempotently((key) =>
 *   unwrap(api.POST('/api/v1/customers/{customer_id}/points/transaction', {
 *     params: { path: { customer_id }, header: { 'Idempotency-Key': key } },
 *     body: { type: 'earn', amount: 120 },
 *   })),
 * );
 * ```
 */
export async function idempotently<T>(operation: (key: string) => Promise<T>, options: { attempts?: number; key?: string } = {}): Promise<T> {
  const { attempts = 3, key = newIdempotencyKey() } = options;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation(key);
    } catch (error) {
      if (attempt >= attempts || !answerLost(error)) throw error;
    }
  }
}
