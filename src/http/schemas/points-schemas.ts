import { z } from '@hono/zod-openapi';
import { LotTimesInputSchema, LotTimesSchema, MetadataSchema, PageQuerySchema, TimestampSchema } from './common.js';
import { CustomerTierSchema, NextExpiringSchema } from './customer-schemas.js';

const MAX_AMOUNT = 1_000_000_000;

/** The kinds of ledger line (CONTRACT.md §9 `recent_activity`). */
export const LedgerTypeSchema = z.enum(['earn', 'deduct', 'adjust', 'event', 'redemption', 'redemption_cancelled', 'release', 'expire', 'reversal']);

export const PointsTransactionCreateSchema = z
  .strictObject({
    type: z.enum(['earn', 'deduct', 'adjust']).openapi({ description: 'earn and deduct take amount > 0; adjust takes amount ≠ 0.' }),
    amount: z.number().int().min(-MAX_AMOUNT).max(MAX_AMOUNT),
    description: z.string().max(500).optional(),
    reference: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .openapi({ description: 'Unique per customer across transactions, events and redemptions, forever.' }),
    metadata: MetadataSchema.optional(),
    apply_multiplier: z.boolean().optional().openapi({ description: "earn only: multiply by the customer's tier multiplier." }),
    ...LotTimesInputSchema,
  })
  .superRefine((t, ctx) => {
    if (t.type === 'adjust' ? t.amount === 0 : t.amount <= 0) {
      ctx.addIssue({ code: 'custom', path: ['amount'], message: t.type === 'adjust' ? 'must not be 0' : 'must be greater than 0' });
    }
    if (t.apply_multiplier !== undefined && t.type !== 'earn') {
      ctx.addIssue({ code: 'custom', path: ['apply_multiplier'], message: 'only allowed when type is earn' });
    }
    const debit = t.type === 'deduct' || (t.type === 'adjust' && t.amount < 0);
    for (const field of ['available_at', 'expires_at'] as const) {
      if (debit && t[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'only a credit (earn, positive adjust) takes one' });
    }
  })
  .openapi('PointsTransactionCreate');

export const PointsTransactionSchema = z
  .object({
    id: z.string().openapi({ example: 'txn_8ZkqP2mXv4RtY6wQ1bN3' }),
    customer_id: z.string(),
    type: LedgerTypeSchema.openapi({
      description: 'A ledger line; POST answers earn, deduct or adjust.',
    }),
    amount: z.number().int().openapi({ description: 'Points moved; type says the direction (deduct and redemption take points away).' }),
    balance: z.number().int().openapi({ description: 'The balance right after this transaction.' }),
    base_amount: z.number().int().optional().openapi({ description: 'earn: the amount before the multiplier.' }),
    multiplier: z.number().optional().openapi({ description: 'earn: the multiplier applied.' }),
    description: z.string().nullable(),
    reference: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    available_at: LotTimesSchema.available_at,
    expires_at: LotTimesSchema.expires_at,
    reversed_transaction_id: z.string().optional().openapi({ description: 'reversal: the credit reversed.' }),
    created_at: TimestampSchema,
  })
  .openapi('PointsTransaction');

/** A credit's lot (CONTRACT.md §13). */
export const LotSchema = z
  .object({
    transaction_id: z.string().openapi({ description: 'The credit that made the lot (`txn_…` or `evt_…`); the list\'s cursor.' }),
    amount: z.number().int().openapi({ description: 'Points credited.' }),
    remaining: z.number().int().openapi({ description: 'Points still in the lot (spendable once available).' }),
    reversed: z.number().int().openapi({ description: 'Points reversals of this credit took back.' }),
    status: z.enum(['pending', 'available', 'spent', 'expired']),
    available_at: TimestampSchema.nullable().openapi({ description: 'While pending: when it becomes spendable.' }),
    expires_at: TimestampSchema.nullable().openapi({ description: 'When its remaining points expire; null: never.' }),
    created_at: TimestampSchema,
  })
  .openapi('Lot');

export const LotListQuerySchema = PageQuerySchema.extend({
  all: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .openapi({ description: 'Also lots with nothing left (spent, expired, fully reversed).' }),
});

export const TransactionParamsSchema = z.object({
  customer_id: z.string().openapi({ param: { name: 'customer_id', in: 'path' }, example: 'cust_4fTz9QbLr2XcVw7NkP1a' }),
  transaction_id: z.string().openapi({ param: { name: 'transaction_id', in: 'path' }, example: 'txn_8ZkqP2mXv4RtY6wQ1bN3' }),
});

export const ReversalCreateSchema = z
  .strictObject({
    amount: z.number().int().min(1).max(MAX_AMOUNT).optional().openapi({ description: 'Points to reverse; default: all of the credit not reversed yet.' }),
    reference: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .openapi({ description: 'Unique per customer across transactions, events and redemptions, forever (e.g. the refund id).' }),
    description: z.string().max(500).optional(),
  })
  .openapi('ReversalCreate');

export const SummarySchema = z
  .object({
    customer: z.object({
      id: z.string(),
      email: z.string().nullable(),
      first_name: z.string().nullable(),
      last_name: z.string().nullable(),
    }),
    points: z.object({
      balance: z.number().int(),
      lifetime_earned: z.number().int(),
      lifetime_redeemed: z.number().int(),
      pending: z.number().int().openapi({ description: 'Points credited but not spendable yet.' }),
      lifetime_expired: z.number().int(),
      next_expiring: NextExpiringSchema,
    }),
    tier: z.object({
      current: CustomerTierSchema.nullable(),
      next: z.object({ id: z.string(), name: z.string(), points_threshold: z.number().int(), points_needed: z.number().int() }).nullable(),
    }),
    recent_activity: z.array(
      z.object({ type: LedgerTypeSchema, amount: z.number().int(), description: z.string().nullable(), created_at: TimestampSchema }),
    ),
  })
  .openapi('CustomerSummary');

export const StreamEventSchema = z
  .object({
    position: z.number().int(),
    type: z.string().openapi({ description: 'The event type as logged (PointsEarned, TierUpgraded, …): see docs/events.md.', example: 'PointsEarned' }),
    data: z.record(z.string(), z.unknown()),
    metadata: z.record(z.string(), z.unknown()),
    recorded_at: TimestampSchema,
  })
  .openapi('StreamEvent');
