import type { ColumnType, Generated, Selectable } from 'kysely';

/** What a line of the points ledger records (`ledger_entries.type`). */
export type LedgerType = 'earn' | 'deduct' | 'adjust' | 'event' | 'redemption' | 'redemption_cancelled' | 'release' | 'expire' | 'reversal';

export type Timestamp = ColumnType<Date, Date | string, Date | string>;
export type Json<T = Record<string, unknown>> = ColumnType<T, string, string>;

export interface ProjectionCheckpointsTable {
  name: string;
  global_position: number;
  updated_at: Timestamp;
}

export interface BusinessesTable {
  id: string;
  name: string;
  plan: 'free' | 'unlimited';
  customer_count: number;
  created_at: Timestamp;
  seq: Generated<number>;
}

export interface ApiKeysTable {
  id: string;
  business_id: string;
  type: 'private' | 'public';
  name: string | null;
  permissions: string[];
  key_hash: string;
  key_hint: string;
  created_at: Timestamp;
  revoked_at: Timestamp | null;
  seq: Generated<number>;
}

export interface CustomersTable {
  id: string;
  business_id: string;
  email: string | null;
  email_lower: string | null;
  phone: string | null;
  first_name: string | null;
  last_name: string | null;
  external_reference: string | null;
  metadata: Json;
  points_balance: number;
  lifetime_earned: number;
  lifetime_redeemed: number;
  tier_id: string | null;
  tier: Json<Record<string, unknown> | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
  seq: Generated<number>;
  /** Points credited but not yet spendable (CONTRACT.md §13). */
  points_pending: Generated<number>;
  lifetime_expired: Generated<number>;
  /** The earliest expiry among lots with points left, and the points expiring then; null when none. */
  next_expiring_amount: number | null;
  next_expiring_at: Timestamp | null;
}

/** A credit's lot (CONTRACT.md §13; the parts of src/events/lots.ts's `Lot`). */
export interface LotsTable {
  business_id: string;
  customer_id: string;
  transaction_id: string;
  amount: number;
  remaining: number;
  spent: number;
  expired: number;
  reversed: number;
  reversed_from_lot: number;
  status: 'pending' | 'available' | 'spent' | 'expired';
  available_at: Timestamp | null;
  expires_at: Timestamp | null;
  noticed: boolean;
  /** How many times it expired (points a cancelled redemption gave back can expire again). */
  expiries: number;
  created_at: Timestamp;
  seq: Generated<number>;
}

/**
 * When a customer may next have due work: a lower bound the `due-work` reactor lowers as events
 * bring new work, and the scheduler sets to the decider's exact `nextDueAt` at `revision`.
 */
export interface CustomerDueTable {
  customer_id: string;
  business_id: string;
  due_at: Timestamp | null;
  /** The customer stream revision the scheduler's `due_at` was decided at. */
  revision: number;
  /** The `ProcessMark` of the scheduler working on it, while `claimed_until` lasts. */
  holder: string | null;
  claimed_until: Timestamp | null;
}

/** What the due-work reactor needs of a business's lifecycle policy. */
export interface DuePoliciesTable {
  business_id: string;
  expiring_notice_days: number;
  tier_mode: 'lifetime' | 'rolling';
  window_days: number | null;
}

export interface LedgerEntriesTable {
  id: string;
  business_id: string;
  customer_id: string;
  type: LedgerType;
  amount: number;
  balance: number;
  base_amount: number | null;
  multiplier: string | null;
  description: string | null;
  reference: string | null;
  metadata: Json;
  created_at: Timestamp;
  seq: Generated<number>;
  /** A debit's lot shares: as its event recorded them, or as they were planned for an event that recorded none; an expiry's lots and what each lost. */
  lots: ColumnType<Array<{ transaction_id: string; amount: number }> | null, string | null, string | null>;
  /** A credit's lot times (CONTRACT.md §13); null for debits and for credits with none. */
  available_at: Timestamp | null;
  expires_at: Timestamp | null;
  /** A reversal's credit. */
  reversed_transaction_id: string | null;
}

export interface IdempotencyKeysTable {
  business_id: string;
  key: string;
  fingerprint: string;
  state: 'running' | 'done';
  response_status: number | null;
  response_headers: Json<Record<string, string>> | null;
  response_body: string | null;
  created_at: Timestamp;
  locked_until: Timestamp;
  /** The `ProcessMark` of the process answering it while running. */
  holder: string | null;
  /** The running attempt's token: only it answers, releases or stores an answer. */
  claim_token: string | null;
}

export interface TiersTable {
  id: string;
  business_id: string;
  name: string;
  points_threshold: number;
  multiplier: string;
  benefits: Json<string[]>;
  metadata: Json;
  created_at: Timestamp;
  updated_at: Timestamp;
  seq: Generated<number>;
}

export interface EventTypesTable {
  id: string;
  business_id: string;
  name: string;
  display_name: string;
  default_points: number;
  rules: Json<unknown[]>;
  metadata: Json;
  created_at: Timestamp;
  updated_at: Timestamp;
  seq: Generated<number>;
}

export interface RewardsTable {
  id: string;
  business_id: string;
  title: string;
  points_cost: number;
  reward_type: string;
  description: string | null;
  stock_quantity: number | null;
  active: boolean;
  metadata: Json;
  redeemed_count: number;
  created_at: Timestamp;
  updated_at: Timestamp;
  seq: Generated<number>;
}

export interface RedemptionsTable {
  id: string;
  business_id: string;
  customer_id: string;
  reward_id: string;
  points_cost: number;
  balance: number;
  status: 'completed' | 'cancelled';
  reference: string | null;
  metadata: Json;
  created_at: Timestamp;
  cancelled_at: Timestamp | null;
  seq: Generated<number>;
}

export interface RecordedEventsTable {
  id: string;
  business_id: string;
  customer_id: string;
  event_type: string;
  properties: Json;
  reference: string | null;
  base_points: number;
  multiplier: string;
  points_awarded: number;
  balance: number;
  /** The credit's lot times (CONTRACT.md §13); null when none. */
  available_at: Timestamp | null;
  expires_at: Timestamp | null;
  created_at: Timestamp;
  seq: Generated<number>;
}

export interface TierChangesTable {
  business_id: string;
  customer_id: string;
  previous_tier_id: string | null;
  /** Null: a downgrade below every threshold. */
  new_tier_id: string | null;
  /** Upgrades: lifetime_earned when reached; null for downgrades. */
  lifetime_earned: number | null;
  changed_at: Timestamp;
  seq: Generated<number>;
  direction: Generated<'upgrade' | 'downgrade'>;
  /** Downgrades: the points credited within the rolling window. */
  qualifying_points: number | null;
}

export interface WebhookEndpointsTable {
  id: string;
  business_id: string;
  url: string;
  events: string[];
  description: string | null;
  active: boolean;
  disabled_reason: string | null;
  deleted_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  seq: Generated<number>;
}

/** Signing secrets: credentials, kept out of the event log. Several may sign during a rotation. */
export interface WebhookSecretsTable {
  webhook_id: string;
  secret: string;
  created_at: Timestamp;
  expires_at: Timestamp | null;
}

export interface WebhookMessagesTable {
  id: string;
  business_id: string;
  webhook_id: string;
  event_type: string;
  /** The domain event it came from (null for test sends); with the webhook, unique. */
  source_event_id: string | null;
  payload: string;
  /** `cancelled`: its endpoint was deleted or disabled before it was delivered. */
  status: 'pending' | 'delivered' | 'failed' | 'cancelled';
  attempts: number;
  next_attempt_at: Timestamp;
  locked_until: Timestamp | null;
  /** The `ProcessMark` of the dispatcher delivering it while claimed. */
  holder: string | null;
  created_at: Timestamp;
  delivered_at: Timestamp | null;
  seq: Generated<number>;
}

export interface WebhookAttemptsTable {
  /** `att_…`, random (migration 0011). */
  id: string;
  /** Write order: the deliveries list's order and keyset; never shown (it would count attempts). */
  seq: Generated<number>;
  message_id: string;
  webhook_id: string;
  business_id: string;
  attempt: number;
  attempted_at: Timestamp;
  status_code: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
}

/** Token buckets of the rate limiter, shared by processes on one server (migration 0008). */
export interface RateLimitBucketsTable {
  key_id: string;
  tokens: number;
  refilled_at_ms: number;
  /** Written by versions before migration 0016 only. */
  granted: Generated<boolean>;
  /** How many of the requests the last statement asked for got a token. */
  taken: Generated<number>;
}

export interface AggregateSnapshotsTable {
  stream_id: string;
  state_version: number;
  revision: number;
  state: Json<unknown>;
  taken_at: Timestamp;
}

/** Points moved per business and UTC day (`daily-points` projector). */
export interface DailyPointsTable {
  business_id: string;
  /** `YYYY-MM-DD` (a `date` column, read back as text). */
  day: string;
  issued: number;
  redeemed: number;
  expired: number;
}

/**
 * Every table outside the event log. The log's own tables (`events`, `streams`) are the PostgreSQL
 * event store's business: they are declared in src/store/log-tables.ts, so only the store can name them.
 */
export interface Database {
  projection_checkpoints: ProjectionCheckpointsTable;
  businesses: BusinessesTable;
  api_keys: ApiKeysTable;
  customers: CustomersTable;
  ledger_entries: LedgerEntriesTable;
  idempotency_keys: IdempotencyKeysTable;
  aggregate_snapshots: AggregateSnapshotsTable;
  tiers: TiersTable;
  event_types: EventTypesTable;
  rewards: RewardsTable;
  redemptions: RedemptionsTable;
  recorded_events: RecordedEventsTable;
  tier_changes: TierChangesTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_secrets: WebhookSecretsTable;
  webhook_messages: WebhookMessagesTable;
  webhook_attempts: WebhookAttemptsTable;
  rate_limit_buckets: RateLimitBucketsTable;
  daily_points: DailyPointsTable;
  lots: LotsTable;
  customer_due: CustomerDueTable;
  due_policies: DuePoliciesTable;
}

export type CustomerRow = Selectable<CustomersTable>;
export type LedgerEntryRow = Selectable<LedgerEntriesTable>;
export type LotRow = Selectable<LotsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type BusinessRow = Selectable<BusinessesTable>;
export type TierRow = Selectable<TiersTable>;
export type EventTypeRow = Selectable<EventTypesTable>;
export type RewardRow = Selectable<RewardsTable>;
export type RedemptionRow = Selectable<RedemptionsTable>;
export type RecordedEventRow = Selectable<RecordedEventsTable>;
export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type WebhookMessageRow = Selectable<WebhookMessagesTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;
