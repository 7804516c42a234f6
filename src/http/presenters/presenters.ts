import type { RecordedEvent } from '../../commands/index.js';
import { streams } from '../../events/streams.js';
import type { ApiKeyRow, CustomerRow, LotRow, EventTypeRow, RecordedEventRow, RedemptionRow, RewardRow, TierRow } from '../../db/schema.js';
import type { EventType } from '../../events/catalogue.js';
import { decode, type DecodedOf, ofTypes } from '../../events/decode.js';
import { type CustomerAnswerRow, NO_POINTS } from '../../projections/customers/customer-as-written.js';
import { type LedgerEntry, ledgerEntryFromEvent } from '../../projections/customers/ledger-entry.js';
import type { StoredEvent } from '../../store/event-store.js';
import { KeySchema } from '../schemas/key-schemas.js';

/** The tier a customer holds, as stored on the customer row. */
export interface CustomerTier {
  id: string;
  name: string;
  points_threshold: number;
  multiplier: number;
  benefits: string[];
  achieved_at: string;
}

/** Read-model rows as the API shows them (the response schemas in `schemas/` document these). */
/** The points that expire soonest, as the customer row keeps them (CONTRACT.md §13). */
export function presentNextExpiring(row: Pick<CustomerRow, 'next_expiring_amount' | 'next_expiring_at'>) {
  return row.next_expiring_at === null || row.next_expiring_amount === null
    ? null
    : { amount: Number(row.next_expiring_amount), expires_at: row.next_expiring_at.toISOString() };
}

/** A lot as `GET /customers/{id}/lots` shows it. */
export function presentLot(row: LotRow) {
  return {
    transaction_id: row.transaction_id,
    amount: row.amount,
    remaining: row.remaining,
    reversed: row.reversed,
    status: row.status,
    available_at: row.available_at?.toISOString() ?? null,
    expires_at: row.expires_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
  };
}

export function presentCustomer(row: CustomerAnswerRow) {
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
    points_pending: row.points_pending,
    lifetime_expired: row.lifetime_expired,
    next_expiring: presentNextExpiring(row),
    tier: (row.tier ?? null) as CustomerTier | null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

type LedgerLike = Omit<LedgerEntry, 'multiplier'> & { multiplier: number | string | null };

export function presentTransaction(entry: LedgerLike) {
  return {
    id: entry.id,
    customer_id: entry.customer_id,
    type: entry.type,
    amount: entry.amount,
    balance: entry.balance,
    ...(entry.type === 'earn' && entry.base_amount !== null
      ? { base_amount: entry.base_amount, multiplier: Number(entry.multiplier) }
      : {}),
    description: entry.description,
    reference: entry.reference,
    metadata: entry.metadata,
    available_at: iso(entry.available_at),
    expires_at: iso(entry.expires_at),
    ...(entry.type === 'reversal' && entry.reversed_transaction_id !== null ? { reversed_transaction_id: entry.reversed_transaction_id } : {}),
    created_at: entry.created_at.toISOString(),
  };
}

export function presentKey(row: Pick<ApiKeyRow, 'id' | 'type' | 'name' | 'permissions' | 'key_hint' | 'created_at' | 'revoked_at'>) {
  return {
    id: row.id,
    type: row.type,
    name: row.name,
    permissions: KeySchema.shape.permissions.parse(row.permissions),
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

export function presentTier(row: Omit<TierRow, 'business_id' | 'seq'>) {
  return {
    id: row.id,
    name: row.name,
    points_threshold: row.points_threshold,
    multiplier: Number(row.multiplier),
    benefits: row.benefits,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentEventType(row: Omit<EventTypeRow, 'business_id' | 'seq'>) {
  return {
    id: row.id,
    name: row.name,
    display_name: row.display_name,
    default_points: row.default_points,
    rules: row.rules as Record<string, unknown>[],
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentReward(row: Omit<RewardRow, 'business_id' | 'seq'>) {
  return {
    id: row.id,
    title: row.title,
    points_cost: row.points_cost,
    reward_type: row.reward_type as 'digital' | 'physical' | 'discount' | 'experience' | 'achievement',
    description: row.description,
    stock_quantity: row.stock_quantity,
    active: row.active,
    redeemed_count: row.redeemed_count,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentRedemption(row: Omit<RedemptionRow, 'business_id' | 'seq'>) {
  return {
    id: row.id,
    customer_id: row.customer_id,
    reward_id: row.reward_id,
    points_cost: row.points_cost,
    balance: row.balance,
    status: row.status,
    reference: row.reference,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    cancelled_at: row.cancelled_at?.toISOString() ?? null,
  };
}

export function presentEvent(row: Omit<RecordedEventRow, 'business_id' | 'seq' | 'multiplier'> & { multiplier: number | string }) {
  return {
    id: row.id,
    customer_id: row.customer_id,
    event_type: row.event_type,
    properties: row.properties,
    reference: row.reference,
    points_awarded: row.points_awarded,
    base_points: row.base_points,
    multiplier: Number(row.multiplier),
    balance: row.balance,
    available_at: iso(row.available_at),
    expires_at: iso(row.expires_at),
    created_at: row.created_at.toISOString(),
  };
}

const iso = (at: Date | null) => at?.toISOString() ?? null;

/*
 * The answers to commands that record something, built from the event just appended rather than
 * read back from the read model (which may not have caught up yet): the same rows the projectors
 * will derive from it.
 */

/** The appended event, decoded as a reader of the log would (its type narrowed to `types`). */
export function recorded<T extends EventType>(event: RecordedEvent, ...types: T[]): DecodedOf<RecordedEvent, T> {
  const decoded = decode(event);
  if (!decoded || !ofTypes(types)(decoded)) throw new Error(`expected ${types.join(' or ')}, got ${event.type}`);
  return decoded;
}

export function presentTransactionEvent(event: RecordedEvent) {
  const decoded = recorded(event, 'PointsEarned', 'PointsDeducted', 'PointsAdjusted', 'RedemptionCancelled');
  const entry = ledgerEntryFromEvent(decoded);
  if (!entry) throw new Error(`${event.type} makes no ledger line`);
  return presentTransaction(entry);
}

/** The answer to a reversal: its ledger line (type `reversal`), naming the credit reversed. */
export function presentReversalEvent(event: RecordedEvent) {
  return presentTransaction(ledgerEntryFromEvent(recorded(event, 'PointsReversed'))!);
}

export function presentEventRecorded(event: RecordedEvent) {
  const { data } = recorded(event, 'EventRecorded');
  return presentEvent({
    id: data.event_id,
    customer_id: streams.customerIdOf(event.streamId),
    event_type: data.event_type,
    properties: data.properties,
    reference: data.reference,
    points_awarded: data.points_awarded,
    base_points: data.base_points,
    multiplier: data.multiplier,
    balance: data.balance,
    available_at: data.available_at === null ? null : new Date(data.available_at),
    expires_at: data.expires_at === null ? null : new Date(data.expires_at),
    created_at: event.recordedAt,
  });
}

export function presentRewardRedeemed(event: RecordedEvent) {
  const { data } = recorded(event, 'RewardRedeemed');
  return presentRedemption({
    id: data.redemption_id,
    customer_id: streams.customerIdOf(event.streamId),
    reward_id: data.reward_id,
    points_cost: data.points_cost,
    balance: data.balance,
    status: 'completed',
    reference: data.reference,
    metadata: data.metadata,
    created_at: event.recordedAt,
    cancelled_at: null,
  });
}

/** A new customer: its registration, with no points yet. */
export function presentCustomerRegistered(event: RecordedEvent) {
  const { customer_id, business_id: _business, ...profile } = recorded(event, 'CustomerRegistered').data;
  const at = event.recordedAt;
  return presentCustomer({ id: customer_id, ...profile, ...NO_POINTS, created_at: at, updated_at: at });
}

export function presentTierCreated(event: RecordedEvent) {
  const { tier_id, multiplier, ...tier } = recorded(event, 'TierCreated').data;
  return presentTier({ id: tier_id, ...tier, multiplier: String(multiplier), created_at: event.recordedAt, updated_at: event.recordedAt });
}

export function presentEventTypeCreated(event: RecordedEvent) {
  const { event_type_id, ...eventType } = recorded(event, 'EventTypeCreated').data;
  return presentEventType({ id: event_type_id, ...eventType, created_at: event.recordedAt, updated_at: event.recordedAt });
}

export function presentRewardCreated(event: RecordedEvent) {
  const { reward_id, business_id: _business, ...reward } = recorded(event, 'RewardCreated').data;
  return presentReward({ id: reward_id, ...reward, redeemed_count: 0, created_at: event.recordedAt, updated_at: event.recordedAt });
}

/** A new key, from its `ApiKeyCreated`, with the key itself (shown this once; null in a stored answer). */
export function presentKeyCreated(event: RecordedEvent, key: string | null) {
  const { key_id, type, name, permissions, key_hint } = recorded(event, 'ApiKeyCreated').data;
  return { ...presentKey({ id: key_id, type, name, permissions, key_hint, created_at: event.recordedAt, revoked_at: null }), key };
}
