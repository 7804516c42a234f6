import { z } from 'zod';

const Metadata = z.record(z.string(), z.unknown());

export const CustomerProfileSchema = z.object({
  email: z.string().nullable(),
  phone: z.string().nullable(),
  first_name: z.string().nullable(),
  last_name: z.string().nullable(),
  external_reference: z.string().nullable(),
  metadata: Metadata,
});
export type CustomerProfile = z.infer<typeof CustomerProfileSchema>;

/** A profile with nothing set: what a customer starts from. */
export const EMPTY_PROFILE: CustomerProfile = {
  email: null,
  phone: null,
  first_name: null,
  last_name: null,
  external_reference: null,
  metadata: {},
};

/** One balance change; `balance` is the balance right after it (a running balance for auditors). */
const PointsMovement = z.object({
  transaction_id: z.string(),
  amount: z.number().int(),
  balance: z.number().int(),
  description: z.string().nullable(),
  reference: z.string().nullable(),
  metadata: Metadata,
});

/** A tier as it was when a customer reached it. */
export const TierSnapshotSchema = z.object({
  id: z.string(),
  name: z.string(),
  points_threshold: z.number().int(),
  multiplier: z.number(),
  benefits: z.array(z.string()),
});
export type TierSnapshot = z.infer<typeof TierSnapshotSchema>;

/** Points a debit took from one lot, or a cancellation gave back to it (CONTRACT.md §13). */
export const LotShareSchema = z.object({
  /** The lot: the id of the credit that made it (`txn_…` or `evt_…`). */
  transaction_id: z.string(),
  amount: z.number().int().positive(),
});
export type LotShare = z.infer<typeof LotShareSchema>;

/**
 * When a credit's lot becomes spendable and when its points expire (ISO); null: at once, never.
 * Events written before lots existed have neither, which reads as null.
 */
const LotTimes = {
  available_at: z.string().nullable().default(null),
  expires_at: z.string().nullable().default(null),
};

/**
 * The lots a debit consumed, in consumption order. Events written before lots existed have none:
 * replay plans them (oldest first, as no lot then had an expiry).
 */
const Consumed = { lots: z.array(LotShareSchema).optional() };

export const CustomerEvents = {
  CustomerRegistered: CustomerProfileSchema.extend({ customer_id: z.string(), business_id: z.string() }),
  /** Carries only the fields that changed, each with its new value. */
  CustomerUpdated: CustomerProfileSchema.partial(),
  PointsEarned: PointsMovement.extend({
    base_amount: z.number().int(),
    multiplier: z.number(),
    ...LotTimes,
  }),
  PointsDeducted: PointsMovement.extend(Consumed),
  /** A positive adjust is a credit (it makes a lot), a negative one a debit (it consumes lots). */
  PointsAdjusted: PointsMovement.extend({ ...LotTimes, ...Consumed }),
  /** Written right after the event that raised lifetime_earned past a higher tier's threshold. */
  TierUpgraded: z.object({
    previous_tier: TierSnapshotSchema.nullable(),
    new_tier: TierSnapshotSchema,
    lifetime_earned: z.number().int(),
  }),
  /** An occurrence of an event type; points_awarded may be 0 (it is recorded all the same). */
  EventRecorded: z.object({
    event_id: z.string(),
    event_type: z.string(),
    properties: Metadata,
    reference: z.string().nullable(),
    base_points: z.number().int(),
    multiplier: z.number(),
    points_awarded: z.number().int(),
    balance: z.number().int(),
    ...LotTimes,
  }),
  RewardRedeemed: z.object({
    redemption_id: z.string(),
    reward_id: z.string(),
    reward_title: z.string(),
    reward_type: z.string(),
    points_cost: z.number().int(),
    reference: z.string().nullable(),
    metadata: Metadata,
    balance: z.number().int(),
    ...Consumed,
  }),
  RedemptionCancelled: z.object({
    /** The ledger line that gives the points back. */
    transaction_id: z.string(),
    redemption_id: z.string(),
    reward_id: z.string(),
    points_cost: z.number().int(),
    balance: z.number().int(),
    /** The shares given back: the lots the redemption consumed. */
    ...Consumed,
  }),
  /** A pending lot became spendable (ledger type `release`). */
  PointsReleased: z.object({
    /** The ledger line: derived from the lot and the due instant, so it is the same on every worker. */
    transaction_id: z.string(),
    lot_transaction_id: z.string(),
    amount: z.number().int(),
    balance: z.number().int(),
    released_at: z.string(),
  }),
  /** The `points.expiring` notice of a lot was due; no ledger line. */
  PointsExpiringNotified: z.object({
    lot_transaction_id: z.string(),
    amount: z.number().int(),
    expires_at: z.string(),
  }),
  /** The remaining points of a customer's lots that expire at one instant expired (one ledger line, type `expire`). */
  PointsExpired: z.object({
    transaction_id: z.string(),
    /** Each lot and its remaining points, in consumption order (0 only in a version 1 event of a lot with none left). */
    lots: z.array(LotShareSchema.extend({ amount: z.number().int().nonnegative() })).min(1),
    /** The lots' points together. */
    amount: z.number().int(),
    /** The part of `amount` that was still pending (it leaves pending points, not the balance); null in version 1 events. */
    pending: z.number().int().nonnegative().nullable(),
    balance: z.number().int(),
    expired_at: z.string(),
  }),
  /** All or part of a credit was reversed (ledger type `reversal`), e.g. its order was refunded. */
  PointsReversed: z.object({
    transaction_id: z.string(),
    reversed_transaction_id: z.string(),
    amount: z.number().int().positive(),
    from_lot: z.number().int(),
    from_expired: z.number().int(),
    lots: z.array(LotShareSchema),
    balance: z.number().int(),
    description: z.string().nullable(),
    reference: z.string().nullable(),
    metadata: Metadata,
  }),
  /** Rolling tier qualification: the customer no longer qualifies for the held tier. */
  TierDowngraded: z.object({
    previous_tier: TierSnapshotSchema,
    new_tier: TierSnapshotSchema.nullable(),
    qualifying_points: z.number().int(),
    downgraded_at: z.string(),
  }),
};

/** The event types of a `customer-…` stream. */
export const CUSTOMER_EVENT_TYPES = Object.keys(CustomerEvents) as Array<keyof typeof CustomerEvents>;
