import { type Kysely, sql } from 'kysely';
import type { DatabaseHandle } from '../../db/database.js';
import type { Database } from '../../db/schema.js';

export interface BucketPolicy {
  /** Tokens added per second. */
  rps: number;
  /** The bucket's size: the most requests a key may make at once. */
  burst: number;
}

/** One take from a key's bucket: whether the request may go on, and the tokens left after it. */
export interface Take {
  granted: boolean;
  tokens: number;
}

export interface RateLimitStore {
  take(keyId: string, nowMs: number): Promise<Take>;
}

/** The embedded store serves one process, so its buckets live in memory. */
export function memoryRateLimitStore(policy: BucketPolicy): RateLimitStore {
  const buckets = new Map<string, { tokens: number; refilledAtMs: number }>();
  return {
    async take(keyId, nowMs) {
      const bucket = buckets.get(keyId) ?? { tokens: policy.burst, refilledAtMs: nowMs };
      const elapsedMs = Math.max(0, nowMs - bucket.refilledAtMs);
      const available = Math.min(policy.burst, bucket.tokens + (elapsedMs * policy.rps) / 1000);
      const granted = available >= 1;
      buckets.set(keyId, { tokens: granted ? available - 1 : available, refilledAtMs: Math.max(bucket.refilledAtMs, nowMs) });
      return { granted, tokens: granted ? available - 1 : available };
    },
  };
}

/**
 * Buckets in PostgreSQL, shared by every process on the database: one atomic upsert refills the
 * bucket for the time elapsed and takes a token if there is one, so concurrent requests from
 * several processes never spend the same token twice.
 */
export function postgresRateLimitStore(db: Kysely<Database>, policy: BucketPolicy): RateLimitStore {
  return {
    async take(keyId, nowMs) {
      const now = Math.floor(nowMs);
      const available = sql<number>`least(${policy.burst}::float8,
        b.tokens + greatest(0, ${now}::bigint - b.refilled_at_ms) * ${policy.rps}::float8 / 1000)`;
      const { rows } = await sql<Take>`
        insert into rate_limit_buckets as b (key_id, tokens, refilled_at_ms, granted)
        values (${keyId}, ${policy.burst - 1}, ${now}, true)
        on conflict (key_id) do update set
          granted = ${available} >= 1,
          tokens = case when ${available} >= 1 then ${available} - 1 else ${available} end,
          refilled_at_ms = greatest(b.refilled_at_ms, ${now}::bigint)
        returning granted, tokens`.execute(db);
      const row = rows[0]!;
      return { granted: row.granted, tokens: Number(row.tokens) };
    },
  };
}

/** Shared buckets on a PostgreSQL server; in memory on the embedded store (one process). */
export function rateLimitStore(database: DatabaseHandle, policy: BucketPolicy): RateLimitStore {
  return database.kind === 'postgres' ? postgresRateLimitStore(database.db, policy) : memoryRateLimitStore(policy);
}
