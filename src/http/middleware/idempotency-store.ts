import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { holderGone } from '../../db/process-mark.js';
import type { Database } from '../../db/schema.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long a running request holds its key before a retry may take it over, when the process
 * answering it is still alive (`LOYALTY_CLAIM_LEASE_MS`): a retry takes over the key of a process
 * that died at once (`holderGone`).
 */
export const DEFAULT_LEASE_MS = 60 * 1000;
/** Expired records each claim deletes on its way: more than one, so deletion outpaces creation. */
const SWEEP_PER_CLAIM = 8;

export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export type Claim =
  /**
   * The key is this attempt's; `token` names the attempt (release, complete, a receipt).
   * `takenOver`: the key was taken over from an earlier attempt that never stored an answer (its
   * process died, or its lease ran out), which claimed it at `claimedAt`: that attempt may have
   * written before it stopped.
   */
  | { outcome: 'proceed'; token: string; takenOver?: { claimedAt: Date } }
  | { outcome: 'replay'; response: StoredResponse }
  | { outcome: 'in_progress' }
  | { outcome: 'mismatch' };

export interface ClaimOptions {
  /** The `ProcessMark` id of this process. */
  holder?: string | undefined;
  leaseMs?: number | undefined;
}

/** Idempotency keys (CONTRACT.md §5), scoped to a business; a record goes once 24 hours old. */
export function idempotencyStore(db: Kysely<Database>, options: ClaimOptions = {}) {
  const holder = options.holder ?? null;
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  return {
    /**
     * Claims `key` for a request with this fingerprint, or says why not. Atomic under concurrency.
     * One statement in the usual case: it takes the key (or its expired record) and deletes a few
     * other expired records, so keys never used again do not stay.
     */
    async claim(businessId: string, key: string, fingerprint: string, now = new Date()): Promise<Claim> {
      const expiredBefore = new Date(now.getTime() - IDEMPOTENCY_TTL_MS);
      const lockedUntil = new Date(now.getTime() + leaseMs);
      const token = randomUUID();
      const { rows } = await sql<{ key: string }>`
        with swept as (
          delete from idempotency_keys where ctid in (
            select ctid from idempotency_keys
            where created_at < ${expiredBefore} and not (business_id = ${businessId} and key = ${key})
            limit ${SWEEP_PER_CLAIM} for update skip locked))
        insert into idempotency_keys as k
          (business_id, key, fingerprint, state, response_status, response_headers, response_body, created_at, locked_until, holder, claim_token)
        values (${businessId}, ${key}, ${fingerprint}, 'running', null, null, null, ${now}, ${lockedUntil}, ${holder}::bigint, ${token})
        on conflict (business_id, key) do update set
          fingerprint = excluded.fingerprint, state = 'running', response_status = null, response_headers = null,
          response_body = null, created_at = excluded.created_at, locked_until = excluded.locked_until,
          holder = excluded.holder, claim_token = excluded.claim_token
        where k.created_at < ${expiredBefore}
        returning k.key`.execute(db);
      if (rows.length > 0) return { outcome: 'proceed', token };
      const row = await db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('business_id', '=', businessId)
        .where('key', '=', key)
        .executeTakeFirst();
      if (!row) return this.claim(businessId, key, fingerprint, now); // released between our statements
      if (row.fingerprint !== fingerprint) return { outcome: 'mismatch' };
      if (row.state === 'done') {
        return {
          outcome: 'replay',
          response: { status: row.response_status!, headers: row.response_headers ?? {}, body: row.response_body ?? '' },
        };
      }
      // Running: taken over once its lease has run out, or at once if the process answering it is gone.
      const leaseOver = row.locked_until.getTime() <= now.getTime();
      const taken = await db
        .updateTable('idempotency_keys as k')
        .set({ locked_until: lockedUntil, holder: sql`${holder}::bigint`, claim_token: token })
        .where('business_id', '=', businessId)
        .where('key', '=', key)
        .where('state', '=', 'running')
        .where('claim_token', 'is not distinct from', row.claim_token)
        .$if(!leaseOver, (q) => q.where(holderGone(sql.ref('k.holder'))))
        .returning('key')
        .executeTakeFirst();
      return taken ? { outcome: 'proceed', token, takenOver: { claimedAt: row.created_at } } : { outcome: 'in_progress' };
    },

    /** Stores the final answer of the attempt holding `token` (none if another attempt took the key over). */
    async complete(businessId: string, key: string, token: string, response: StoredResponse): Promise<void> {
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
        .where('state', '=', 'running')
        .where('claim_token', '=', token)
        .execute();
    },

    /**
     * Ends the lease of the attempt holding `token` without freeing the key: the next attempt takes
     * it over at once, told that this one may have written (`Claim.takenOver`).
     */
    async endLease(businessId: string, key: string, token: string, now = new Date()): Promise<void> {
      await db
        .updateTable('idempotency_keys')
        .set({ locked_until: now })
        .where('business_id', '=', businessId)
        .where('key', '=', key)
        .where('state', '=', 'running')
        .where('claim_token', '=', token)
        .execute();
    },

    /** Frees the key after an answer that is not kept (retryable, or refused), so the request can be retried with it. */
    async release(businessId: string, key: string, token: string): Promise<void> {
      await db
        .deleteFrom('idempotency_keys')
        .where('business_id', '=', businessId)
        .where('key', '=', key)
        .where('state', '=', 'running')
        .where('claim_token', '=', token)
        .execute();
    },
  };
}

export type IdempotencyStore = ReturnType<typeof idempotencyStore>;
