import { z } from 'zod';
import { CustomerEvents, CustomerProfileSchema } from '../events/customer-events.js';
import type { WebhookEventType } from '../events/webhook-events.js';

const Timestamp = z.string().meta({ format: 'date-time', example: '2026-11-22T14:03:07.123Z' });
const CustomerId = { customer_id: z.string() };

/**
 * The `data` of each webhook event type (CONTRACT.md §10), as `webhookPayloadOf` builds it from the
 * logged event: the one source of the OpenAPI `webhooks`, docs/webhooks.md and the client's types.
 * A mapped type, so a new event type does not build until its payload is described here.
 */
export const WEBHOOK_DATA_SCHEMAS: { [T in WebhookEventType]: z.ZodObject } = {
  'customer.created': CustomerProfileSchema.extend({ customer_id: z.string(), created_at: Timestamp }),
  'points.earned': CustomerEvents.PointsEarned.extend({ ...CustomerId, created_at: Timestamp }),
  'points.deducted': CustomerEvents.PointsDeducted.extend({ ...CustomerId, created_at: Timestamp }),
  'points.adjusted': CustomerEvents.PointsAdjusted.extend({ ...CustomerId, created_at: Timestamp }),
  'event.recorded': CustomerEvents.EventRecorded.extend({ ...CustomerId, created_at: Timestamp }),
  'reward.redeemed': CustomerEvents.RewardRedeemed.extend({ ...CustomerId, created_at: Timestamp }),
  'redemption.cancelled': CustomerEvents.RedemptionCancelled.extend({ ...CustomerId, cancelled_at: Timestamp }),
  'tier.upgraded': CustomerEvents.TierUpgraded.extend({ ...CustomerId, upgraded_at: Timestamp }),
  'points.released': CustomerEvents.PointsReleased.extend({ ...CustomerId, released_at: Timestamp }),
  'points.expiring': z.object({
    ...CustomerId,
    transaction_id: z.string().meta({ description: 'The lot: the id of the credit that made it.' }),
    amount: z.number().int().meta({ description: 'The points of the lot that will expire unless spent first.' }),
    expires_at: Timestamp,
  }),
  'points.expired': CustomerEvents.PointsExpired.extend({ ...CustomerId, expired_at: Timestamp }),
  'points.reversed': CustomerEvents.PointsReversed.extend({ ...CustomerId, created_at: Timestamp }),
  'tier.downgraded': CustomerEvents.TierDowngraded.extend({ ...CustomerId, downgraded_at: Timestamp }),
};

/** What each event type is for, in one sentence (OpenAPI `webhooks`, docs/webhooks.md). */
export const WEBHOOK_DESCRIPTIONS: { [T in WebhookEventType]: string } = {
  'customer.created': 'A customer was created.',
  'points.earned': 'Points were earned (POST points/transaction with `type: earn`); `amount` is after the tier multiplier, `base_amount` before it.',
  'points.deducted': 'Points were deducted outside the reward catalogue (`type: deduct`).',
  'points.adjusted': 'Points were adjusted (`type: adjust`); `amount` may be negative.',
  'event.recorded': 'An event was recorded; `points_awarded` may be 0.',
  'reward.redeemed': 'A customer redeemed a reward.',
  'redemption.cancelled': 'A redemption was cancelled: the points and the stock unit went back.',
  'tier.upgraded': 'A customer reached a higher tier; sent after the credit that caused it was recorded.',
  'points.released':
    'Pending points became spendable (ledger type `release`); `lot_transaction_id` is the credit, `released_at` its `available_at`.',
  'points.expiring':
    'Points of a lot expire in `expiring_notice_days` or less unless spent first; sent once per lot, `transaction_id` names the lot (its credit).',
  'points.expired':
    "The remaining points of a customer's lots that expire at one instant expired (ledger type `expire`): one notification per customer and instant; `transaction_id` is the expiry's ledger line, `amount` the points together (`pending` of them were not spendable yet), `lots` each lot (its credit's id) with its points, `expired_at` the lots' `expires_at`.",
  'points.reversed':
    'All or part of a credit was reversed (ledger type `reversal`): `from_lot` came out of its lot, `from_expired` out of lifetime_expired, `lots` from the balance.',
  'tier.downgraded':
    'Rolling tier qualification: the points credited in the window fell below the held tier\'s threshold; `new_tier` is null below every threshold.',
};

const at = '2026-11-22T14:03:07.123Z';
const customer_id = 'cust_4fTz9QbLr2XcVw7NkP1a';
const silver = { id: 'tier_9kLm2NpQ4rSt6VwX8yZa', name: 'Silver', points_threshold: 500, multiplier: 1.25, benefits: ['Free delivery'] };

/** One realistic `data` per event type (checked against its schema by test/webhooks/webhook-payload-schemas.test.ts). */
export const WEBHOOK_DATA_EXAMPLES: { [T in WebhookEventType]: Record<string, unknown> } = {
  'customer.created': {
    customer_id, email: 'ada@example.com', phone: null, first_name: 'Ada', last_name: 'Lovelace',
    external_reference: 'user-1042', metadata: { source: 'signup-form' }, created_at: at,
  },
  'points.earned': {
    customer_id, transaction_id: 'txn_8ZkqP2mXv4RtY6wQ1bN3', amount: 150, balance: 620, description: 'Order #7731',
    reference: 'order-7731', metadata: { store: 'berlin-1' }, base_amount: 120, multiplier: 1.25, created_at: at,
  },
  'points.deducted': {
    customer_id, transaction_id: 'txn_3HbN5mQ7sV9xZ1cE4gJ6', amount: 200, balance: 420, description: 'Gift card top-up',
    reference: 'giftcard-88', metadata: {}, created_at: at,
  },
  'points.adjusted': {
    customer_id, transaction_id: 'txn_6PdR8tW0yB2eG4iK6mO8', amount: -50, balance: 370, description: 'Correction: returned item',
    reference: null, metadata: { ticket: 'SUP-311' }, created_at: at,
  },
  'event.recorded': {
    customer_id, event_id: 'evt_7uI9oP2aS5dF8gH1jK4l', event_type: 'purchase', properties: { amount: 120, currency: 'EUR' },
    reference: 'order-7732', base_points: 120, multiplier: 1.25, points_awarded: 150, balance: 520, created_at: at,
  },
  'reward.redeemed': {
    customer_id, redemption_id: 'red_5tR2yU8iO1pA4sD7fG0h', reward_id: 'rew_2qW4eR6tY8uI0oP1aS3d', reward_title: 'Free coffee',
    reward_type: 'physical', points_cost: 100, reference: 'pos-7733', metadata: {}, balance: 420, created_at: at,
  },
  'redemption.cancelled': {
    customer_id, transaction_id: 'txn_1XcV3bN5mA7sD9fG2hJ4', redemption_id: 'red_5tR2yU8iO1pA4sD7fG0h',
    reward_id: 'rew_2qW4eR6tY8uI0oP1aS3d', points_cost: 100, balance: 520, cancelled_at: at,
  },
  'tier.upgraded': { customer_id, previous_tier: null, new_tier: silver, lifetime_earned: 620, upgraded_at: at },
  'points.released': {
    customer_id, transaction_id: 'txn_2b9c5d1e8f3a4b7c9d0e1f2a', lot_transaction_id: 'txn_8ZkqP2mXv4RtY6wQ1bN3', amount: 150, balance: 770,
    released_at: '2026-11-29T14:03:07.123Z',
  },
  'points.expiring': { customer_id, transaction_id: 'txn_8ZkqP2mXv4RtY6wQ1bN3', amount: 150, expires_at: '2027-11-29T14:03:07.123Z' },
  'points.expired': {
    customer_id, transaction_id: 'txn_5e6f7a8b9c0d1e2f3a4b5c6d',
    lots: [{ transaction_id: 'txn_8ZkqP2mXv4RtY6wQ1bN3', amount: 150 }, { transaction_id: 'txn_3HgF6dS9aQ2wE5rT8yU1', amount: 40 }],
    amount: 190, pending: 0, balance: 470, expired_at: '2027-11-29T14:03:07.123Z',
  },
  'points.reversed': {
    customer_id, transaction_id: 'txn_4KpL6nM8qR0sT2uV4wX6', reversed_transaction_id: 'txn_8ZkqP2mXv4RtY6wQ1bN3', amount: 150, from_lot: 100,
    from_expired: 0, lots: [{ transaction_id: 'txn_7YhG5fD3sA1qW9eR7tY5', amount: 50 }], balance: 470, description: 'Order #7731 refunded',
    reference: 'refund-7731', metadata: {}, created_at: at,
  },
  'tier.downgraded': {
    customer_id, previous_tier: silver, new_tier: null, qualifying_points: 320, downgraded_at: '2027-02-20T14:03:07.123Z',
  },
};

/** The whole body of a webhook message of `type`: `{type, timestamp, data}`. */
export function webhookBodySchema(type: WebhookEventType) {
  return z.object({
    type: z.literal(type),
    timestamp: Timestamp.meta({ description: 'When the event was recorded.' }),
    data: WEBHOOK_DATA_SCHEMAS[type],
  });
}
