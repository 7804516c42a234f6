import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { holderGone } from '../../db/process-mark.js';
import type { Database } from '../../db/schema.js';
import { batched } from '../../db/batched.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long a running request holds its key before a retry may take it over, when the process
 * answering it is still alive (`LOYALTY_CLAIM_LEASE_MS`): a retry takes over the key of a process
 * that died at once (`holderGone`).
 */
export const DEFAULT_LEASE_MS = 60 * 1000;
/**
 * Expired records are deleted by the claims themselves, a chunk at a time: at most one sweep a
 * second per process, and another at once after a sweep that found a whole chunk (so deletion
 * keeps up with any rate of new keys). Not in the claim's own statement: a sweep joined to every
 * claim made each one scan the table whenever PostgreSQL held a plan made while the table was small
 * (a new database: 481 earns/s instead of 1,480 in docs/performance.md).
 */
const SWEEP_CHUNK = 500;
const SWEEP_EVERY_MS = 1000;

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
  let lastSweepMs = -Infinity;
  let sweeping = false;
  /** Deletes a chunk of expired records, beside the claim that calls it (see SWEEP_CHUNK). */
  const sweep = (expiredBefore: Date, nowMs: number) => {
    if (sweeping || nowMs - lastSweepMs < SWEEP_EVERY_MS) return;
    sweeping = true;
    lastSweepMs = nowMs;
    sql`delete from idempotency_keys where ctid = any(array(
          select ctid from idempotency_keys where created_at < ${expiredBefore}
          order by created_at limit ${SWEEP_CHUNK} for update skip locked))`
      .execute(db)
      .then(
        (result) => {
          if (Number(result.numAffectedRows ?? 0) >= SWEEP_CHUNK) lastSweepMs = -Infinity;
        },
        () => {}, // the next sweep tries again; the claim beside it reports what is wrong with the database
      )
      .finally(() => (sweeping = false));
  };
  /**
   * Takes each key asked for (or its expired record) for its attempt, the keys asked for at once in
   * one statement (see `batched`): true where taken. A key asked for twice at once goes in once;
   * the later ask finds it held, as it would a moment later.
   */
  const take = batched(async (asked: Array<{ businessId: string; key: string; fingerprint: string; now: Date; lockedUntil: Date; token: string }>) => {
    const seen = new Set<string>();
    const first = asked.filter((a) => {
      const id = `${a.businessId}\u0000${a.key}`;
      return !seen.has(id) && seen.add(id);
    });
    const column = <T>(pick: (a: (typeof asked)[number]) => T) => first.map(pick);
    const { rows } = await sql<{ claim_token: string }>`
      insert into idempotency_keys as k (business_id, key, fingerprint, state, created_at, locked_until, holder, claim_token)
      select business_id, key, fingerprint, 'running', created_at, locked_until, ${holder}::bigint, claim_token
      from unnest(${column((a) => a.businessId)}::text[], ${column((a) => a.key)}::text[], ${column((a) => a.fingerprint)}::text[],
                  ${column((a) => a.now)}::timestamptz[], ${column((a) => a.lockedUntil)}::timestamptz[], ${column((a) => a.token)}::text[])
        as a(business_id, key, fingerprint, created_at, locked_until, claim_token)
      on conflict (business_id, key) do update set
        fingerprint = excluded.fingerprint, state = 'running', response_status = null, response_headers = null,
        response_body = null, created_at = excluded.created_at, locked_until = excluded.locked_until,
        holder = excluded.holder, claim_token = excluded.claim_token
      where k.created_at < excluded.created_at - make_interval(secs => ${IDEMPOTENCY_TTL_MS / 1000})
      returning k.claim_token`.execute(db);
    const taken = new Set(rows.map((r) => r.claim_token));
    return asked.map((a) => taken.has(a.token));
  });
  return {
    /**
     * Claims `key` for a request with this fingerprint, or says why not. Atomic under concurrency.
     * One statement in the usual case, shared with the claims made at the same time: it takes the
     * key (or its expired record); beside it, now and then, a sweep deletes expired records, so
     * keys never used again do not stay.
     */
    async claim(businessId: string, key: string, fingerprint: string, now = new Date()): Promise<Claim> {
      const expiredBefore = new Date(now.getTime() - IDEMPOTENCY_TTL_MS);
      const lockedUntil = new Date(now.getTime() + leaseMs);
      const token = randomUUID();
      sweep(expiredBefore, now.getTime());
      if (await take({ businessId, key, fingerprint, now, lockedUntil, token })) return { outcome: 'proceed', token };
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
