import type { Kysely } from 'kysely';
import type { CustomerRow, Database, LedgerEntryRow } from '../../db/schema.js';
import { fetchPage, type PageRequest } from '../page.js';

export interface CustomerFilters {
  email?: string | undefined;
  phone?: string | undefined;
  external_reference?: string | undefined;
  tier?: string | undefined;
}

export function customerQueries(db: Kysely<Database>) {
  const seqOf = (table: 'customers' | 'ledger_entries', scope: { business_id: string; customer_id?: string }) => async (id: string) => {
    let q = db.selectFrom(table).select('seq').where('id', '=', id).where('business_id', '=', scope.business_id);
    if (scope.customer_id) q = q.where('customer_id' as never, '=', scope.customer_id as never);
    return (await q.executeTakeFirst())?.seq;
  };

  return {
    get(businessId: string, customerId: string): Promise<CustomerRow | undefined> {
      return db.selectFrom('customers').selectAll().where('business_id', '=', businessId).where('id', '=', customerId).executeTakeFirst();
    },

    list(businessId: string, filters: CustomerFilters, page: PageRequest) {
      let q = db.selectFrom('customers').selectAll().where('business_id', '=', businessId);
      if (filters.email !== undefined) q = q.where('email_lower', '=', filters.email.toLowerCase());
      if (filters.phone !== undefined) q = q.where('phone', '=', filters.phone);
      if (filters.external_reference !== undefined) q = q.where('external_reference', '=', filters.external_reference);
      if (filters.tier !== undefined) q = q.where('tier_id', '=', filters.tier);
      return fetchPage(q, page, seqOf('customers', { business_id: businessId }));
    },

    ledger(businessId: string, customerId: string, page: PageRequest) {
      const q = db.selectFrom('ledger_entries').selectAll().where('business_id', '=', businessId).where('customer_id', '=', customerId);
      return fetchPage(q, page, seqOf('ledger_entries', { business_id: businessId, customer_id: customerId }));
    },

    ledgerEntry(businessId: string, id: string): Promise<LedgerEntryRow | undefined> {
      return db.selectFrom('ledger_entries').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
    },

    /** The newest balance changes, newest first (the summary's `recent_activity`). */
    recentActivity(businessId: string, customerId: string, limit = 10): Promise<LedgerEntryRow[]> {
      return db
        .selectFrom('ledger_entries')
        .selectAll()
        .where('business_id', '=', businessId)
        .where('customer_id', '=', customerId)
        .orderBy('seq', 'desc')
        .limit(limit)
        .execute();
    },
  };
}

export type CustomerQueries = ReturnType<typeof customerQueries>;
