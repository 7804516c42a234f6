import { type Kysely, sql } from 'kysely';
import type { DatabaseHandle } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import { batched } from '../../db/batched.js';

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
 * Buckets in PostgreSQL, shared by every process on the database: one atomic upsert refills each
 * bucket for the time elapsed and takes as many tokens as it has for the requests asking, so
 * concurrent requests from several processes never spend the same token twice. The requests that
 * ask at once (see `batched`) share one statement: on one key, the first ones asked get the
 * tokens there are, in order.
 */
export function postgresRateLimitStore(db: Kysely<Database>, policy: BucketPolicy): RateLimitStore {
  const takes = batched(async (asked: Array<{ keyId: string; nowMs: number }>) => {
    const keys = new Map<string, { count: number; nowMs: number }>();
    for (const { keyId, nowMs } of asked) {
      const key = keys.get(keyId);
      if (key) (key.count++, (key.nowMs = Math.max(key.nowMs, nowMs)));
      else keys.set(keyId, { count: 1, nowMs });
    }
    const available = sql<number>`least(${policy.burst}::float8,
      b.tokens + greatest(0, excluded.refilled_at_ms - b.refilled_at_ms) * ${policy.rps}::float8 / 1000)`;
    const { rows } = await sql<{ key_id: string; taken: number; tokens: number }>`
      insert into rate_limit_buckets as b (key_id, tokens, refilled_at_ms, taken)
      select key_id, ${policy.burst}::float8 - least(asking, ${policy.burst}), now_ms, least(asking, ${policy.burst})
      from unnest(${[...keys.keys()]}::text[], ${[...keys.values()].map((k) => k.count)}::int4[], ${[...keys.values()].map((k) => Math.floor(k.nowMs))}::int8[])
        as a(key_id, asking, now_ms)
      on conflict (key_id) do update set
        taken = least(excluded.taken, floor(${available})),
        tokens = ${available} - least(excluded.taken, floor(${available})),
        refilled_at_ms = greatest(b.refilled_at_ms, excluded.refilled_at_ms)
      returning key_id, taken, tokens`.execute(db);
    const after = new Map(rows.map((row) => [row.key_id, { taken: row.taken, tokens: Number(row.tokens), given: 0 }]));
    return asked.map(({ keyId }): Take => {
      const key = after.get(keyId)!;
      if (key.given >= key.taken) return { granted: false, tokens: key.tokens };
      key.given++;
      return { granted: true, tokens: key.tokens + key.taken - key.given };
    });
  });
  return { take: (keyId, nowMs) => takes({ keyId, nowMs }) };
}

/** Shared buckets on a PostgreSQL server; in memory on the embedded store (one process). */
export function rateLimitStore(database: DatabaseHandle, policy: BucketPolicy): RateLimitStore {
  return database.kind === 'postgres' ? postgresRateLimitStore(database.db, policy) : memoryRateLimitStore(policy);
}
