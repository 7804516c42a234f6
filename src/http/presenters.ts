import type { ApiKeyRow, CustomerRow } from '../db/schema.js';
import type { LedgerEntry } from '../projections/customers/ledger-entry.js';
import type { StoredEvent } from '../store/event-store.js';

/** Read-model rows as the API shows them (the response schemas in `schemas/` document these). */
export function presentCustomer(row: CustomerRow) {
  return {
    id: row.id,
    email: row.email,
    phone: row.phone,
    first_name: row.first_name,
    last_name: row.last_name,
    external_reference: row.external_reference,
    metadata: row.metadata,
    points_balance: row.points_balance,
    lifetime_earned: row.lifetime_earned,
    lifetime_redeemed: row.lifetime_redeemed,
    tier: (row.tier ?? null) as null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

type LedgerLike = Omit<LedgerEntry, 'multiplier'> & { multiplier: number | string | null };

export function presentTransaction(entry: LedgerLike) {
  return {
    id: entry.id,
    customer_id: entry.customer_id,
    type: entry.type as 'earn' | 'deduct' | 'adjust',
    amount: entry.amount,
    balance: entry.balance,
    ...(entry.type === 'earn' && entry.base_amount !== null
      ? { base_amount: entry.base_amount, multiplier: Number(entry.multiplier) }
      : {}),
    description: entry.description,
    reference: entry.reference,
    metadata: entry.metadata,
    created_at: entry.created_at.toISOString(),
  };
}

export function presentKey(row: ApiKeyRow) {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    permissions: row.permissions,
    key_hint: row.key_hint,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}

export function presentStreamEvent(event: StoredEvent) {
  return {
    position: event.streamPosition,
    type: event.type,
    data: event.data as Record<string, unknown>,
    metadata: event.metadata as unknown as Record<string, unknown>,
    recorded_at: event.recordedAt.toISOString(),
  };
}
