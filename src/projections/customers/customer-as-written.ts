import type { CustomerRow } from '../../db/schema.js';
import { type CustomerProfile, EMPTY_PROFILE } from '../../events/customer-events.js';
import { streams } from '../../events/streams.js';
import type { EventStore } from '../../store/event-store.js';
import type { CustomerQueries } from './customers-queries.js';

/** The columns a customer answer is built from (a read-model row, or one built from a write the read model has not caught up with). */
export type CustomerAnswerRow = Pick<
  CustomerRow,
  | 'id'
  | 'email'
  | 'phone'
  | 'first_name'
  | 'last_name'
  | 'external_reference'
  | 'metadata'
  | 'points_balance'
  | 'lifetime_earned'
  | 'lifetime_redeemed'
  | 'points_pending'
  | 'lifetime_expired'
  | 'next_expiring_amount'
  | 'next_expiring_at'
  | 'tier'
  | 'created_at'
  | 'updated_at'
>;

/** A customer's points and tier before anything happened to them. */
export const NO_POINTS = {
  points_balance: 0,
  lifetime_earned: 0,
  lifetime_redeemed: 0,
  points_pending: 0,
  lifetime_expired: 0,
  next_expiring_amount: null,
  next_expiring_at: null,
  tier: null,
} as const satisfies Partial<CustomerAnswerRow>;

/** A write of a customer's profile: the whole profile after it, and when it was recorded. */
export interface ProfileWritten {
  profile: CustomerProfile;
  at: Date;
}

/**
 * The customer as a write of its profile just left it (`written`; null when the write changed
 * nothing). The read model has it once read-your-writes settled; when that wait timed out (the
 * write is stored all the same), the answer is the row as it stands with the profile written, or,
 * when not even the registration is projected yet, built as the projector will build it: a stored
 * write is never answered 404 or with the old profile. Undefined: no such customer.
 *
 * @example
 * const row = await asWritten(businessId, customerId, profile ? { profile, at: ctx.now } : null);
 */
export function customerAsWritten(customers: Pick<CustomerQueries, 'get'>, reads: Pick<EventStore, 'readStream'>) {
  return async (businessId: string, customerId: string, written: ProfileWritten | null): Promise<CustomerAnswerRow | undefined> => {
    const row = await customers.get(businessId, customerId);
    if (!written || (row && row.updated_at >= written.at)) return row ?? (await customers.get(businessId, customerId));
    const registeredAt = row ? row.created_at : ((await reads.readStream(streams.customer(customerId), { max: 1 }))[0]?.recordedAt ?? written.at);
    const base: CustomerAnswerRow = row ?? { id: customerId, ...EMPTY_PROFILE, ...NO_POINTS, created_at: registeredAt, updated_at: registeredAt };
    return { ...base, ...written.profile, updated_at: written.at };
  };
}
