import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a running request holds its key before a retry may take it over (a crashed process). */
const LEASE_MS = 60 * 1000;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type Claim =
  | { outcome: 'proceed' }
  | { outcome: 'replay'; response: StoredResponse }
  | { outcome: 'in_progress' }
  | { outcome: 'mismatch' };

/** Idempotency keys (CONTRACT.md §5), scoped to a business and kept 24 hours. */
export function idempotencyStore(db: Kysely<Database>) {
  return {
    /** Claims `key` for a request with this fingerprint, or says why not. Atomic under concurrency. */
    async claim(businessId: string, key: string, fingerprint: string, now = new Date()): Promise<Claim> {
      for (;;) {
        await db
          .deleteFrom('idempotency_keys')
          .where('business_id', '=', businessId)
          .where('key', '=', key)
          .where('created_at', '<', new Date(now.getTime() - IDEMPOTENCY_TTL_MS))
          .execute();
        const inserted = await db
          .insertInto('idempotency_keys')
          .values({
            business_id: businessId,
            key,
            fingerprint,
            state: 'running',
            response_status: null,
            response_headers: null,
            response_body: null,
            created_at: now,
            locked_until: new Date(now.getTime() + LEASE_MS),
          })
          .onConflict((oc) => oc.columns(['business_id', 'key']).doNothing())
          .returning('key')
          .executeTakeFirst();
        if (inserted) return { outcome: 'proceed' };
        const row = await db
          .selectFrom('idempotency_keys')
          .selectAll()
          .where('business_id', '=', businessId)
          .where('key', '=', key)
          .executeTakeFirst();
        if (!row) continue; // expired and deleted between our statements: claim again
        if (row.fingerprint !== fingerprint) return { outcome: 'mismatch' };
        if (row.state === 'done') {
          return {
            outcome: 'replay',
            response: { status: row.response_status!, headers: row.response_headers ?? {}, body: row.response_body ?? '' },
          };
        }
        if (row.locked_until.getTime() > now.getTime()) return { outcome: 'in_progress' };
        const taken = await db
          .updateTable('idempotency_keys')
          .set({ locked_until: new Date(now.getTime() + LEASE_MS) })
          .where('business_id', '=', businessId)
          .where('key', '=', key)
          .where('state', '=', 'running')
          .where('locked_until', '=', row.locked_until)
          .returning('key')
          .executeTakeFirst();
        return taken ? { outcome: 'proceed' } : { outcome: 'in_progress' };
      }
    },

    async complete(businessId: string, key: string, response: StoredResponse): Promise<void> {
      await db
        .updateTable('idempotency_keys')
        .set({
          state: 'done',
          response_status: response.status,
          response_headers: JSON.stringify(response.headers),
          response_body: response.body,
        })
        .where('business_id', '=', businessId)
        .where('key', '=', key)
        .execute();
    },

    /** Frees the key after a 5xx, so the request can be retried with it. */
    async release(businessId: string, key: string): Promise<void> {
      await db
        .deleteFrom('idempotency_keys')
        .where('business_id', '=', businessId)
        .where('key', '=', key)
        .where('state', '=', 'running')
        .execute();
    },
  };
}

export type IdempotencyStore = ReturnType<typeof idempotencyStore>;
