import { type Kysely, sql } from 'kysely';
import type { ApiKeyRow, BusinessRow, Database } from '../../db/schema.js';
import { fetchPage, type PageRequest } from '../page.js';
import { precompiled } from '../../db/precompiled-query.js';

export interface Principal {
  keyId: string;
  businessId: string;
  type: 'private' | 'public';
  permissions: string[];
  keyHash: string;
}

export function accessQueries(db: Kysely<Database>) {
  const key = (businessId: string, keyId: string): Promise<ApiKeyRow | undefined> =>
    db.selectFrom('api_keys').selectAll().where('business_id', '=', businessId).where('id', '=', keyId).executeTakeFirst();

  // Every request runs it, and it is never cached (a revoked key fails on the very next request).
  const liveKeyByHash = precompiled(db, (param) =>
    db
      .selectFrom('api_keys')
      .select(['id', 'business_id', 'type', 'permissions', 'key_hash'])
      .where('key_hash', '=', param('keyHash'))
      .where('revoked_at', 'is', null),
  );

  return {
    key,

    /** The live (not revoked) key with this hash, or undefined. */
    async principalByKeyHash(keyHash: string): Promise<Principal | undefined> {
      const [row] = await liveKeyByHash({ keyHash });
      return row && { keyId: row.id, businessId: row.business_id, type: row.type, permissions: row.permissions, keyHash: row.key_hash };
    },

    keys(businessId: string, page: PageRequest) {
      const q = db.selectFrom('api_keys').selectAll().where('business_id', '=', businessId);
      return fetchPage(q, page, async (id) => (await key(businessId, id))?.seq);
    },

    /**
     * Ids of the business's active private keys holding keys:write, oldest first: the candidates
     * the revoke command checks on the event log before revoking one of them.
     */
    async keyManagerIds(businessId: string): Promise<string[]> {
      const rows = await db
        .selectFrom('api_keys')
        .select('id')
        .where('business_id', '=', businessId)
        .where('type', '=', 'private')
        .where('revoked_at', 'is', null)
        .where(sql<boolean>`${'keys:write'} = any(permissions)`)
        .orderBy('seq')
        .execute();
      return rows.map((row) => row.id);
    },

    /** Keys of every business (CLI). */
    allKeys(): Promise<ApiKeyRow[]> {
      return db.selectFrom('api_keys').selectAll().orderBy('seq').execute();
    },

    businesses(): Promise<BusinessRow[]> {
      return db.selectFrom('businesses').selectAll().orderBy('seq').execute();
    },

    business(id: string): Promise<BusinessRow | undefined> {
      return db.selectFrom('businesses').selectAll().where('id', '=', id).executeTakeFirst();
    },
  };
}

export type AccessQueries = ReturnType<typeof accessQueries>;
