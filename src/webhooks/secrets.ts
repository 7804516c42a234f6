import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db/schema.js';

/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** When the secrets in use stop signing after a rotation at `now`. */
const rotationExpiry = (now: Date) => new Date(now.getTime() + ROTATION_OVERLAP_MS);

export function webhookSecrets(db: Kysely<Database>) {
  return {
    async create(webhookId: string, now: Date): Promise<string> {
      const secret = newWebhookSecret();
      await db.insertInto('webhook_secrets').values({ webhook_id: webhookId, secret, created_at: now, expires_at: null }).execute();
      return secret;
    },

    /** A new secret; the ones in use keep signing for 24 hours alongside it. Returns the new secret. */
    async rotate(webhookId: string, now: Date): Promise<{ secret: string; previousExpiresAt: Date }> {
      const previousExpiresAt = rotationExpiry(now);
      const secret = newWebhookSecret();
      await db.transaction().execute(async (trx) => {
        // Two rotations at once must not both leave their secret unexpired.
        await sql`select pg_advisory_xact_lock(hashtext(${`webhook-secrets:${webhookId}`}))`.execute(trx);
        await trx
          .updateTable('webhook_secrets')
          .set({ expires_at: previousExpiresAt })
          .where('webhook_id', '=', webhookId)
          .where('expires_at', 'is', null)
          .execute();
        await trx.insertInto('webhook_secrets').values({ webhook_id: webhookId, secret, created_at: now, expires_at: null }).execute();
      });
      return { secret, previousExpiresAt };
    },

    previousExpiresAt: rotationExpiry,

    /** The secrets that sign a delivery now, newest first. */
    async signing(webhookId: string, now: Date): Promise<string[]> {
      const rows = await db
        .selectFrom('webhook_secrets')
        .select('secret')
        .where('webhook_id', '=', webhookId)
        .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
        .orderBy('created_at', 'desc')
        .execute();
      return rows.map((r) => r.secret);
    },
  };
}
