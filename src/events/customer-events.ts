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

export const CustomerEvents = {
  CustomerRegistered: CustomerProfileSchema.extend({ customer_id: z.string(), business_id: z.string() }),
  /** Carries only the fields that changed, each with its new value. */
  CustomerUpdated: CustomerProfileSchema.partial(),
  PointsEarned: PointsMovement.extend({
    base_amount: z.number().int(),
    multiplier: z.number(),
  }),
  PointsDeducted: PointsMovement,
  PointsAdjusted: PointsMovement,
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
  }),
  RedemptionCancelled: z.object({
    /** The ledger line that gives the points back. */
    transaction_id: z.string(),
    redemption_id: z.string(),
    reward_id: z.string(),
    points_cost: z.number().int(),
    balance: z.number().int(),
  }),
};
