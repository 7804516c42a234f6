import { z } from '@hono/zod-openapi';
import { CREATED_WINDOW, MetadataSchema, orderedWindow, PageQuerySchema, TimestampSchema } from './common.js';

const Email = z.string().trim().max(254).email().openapi({ example: 'ada@example.com' });
const Phone = z
  .string()
  .trim()
  .regex(/^\+?[0-9][0-9 ()./-]{2,31}$/, 'must be a phone number: digits, spaces and ()./- with an optional leading +')
  .openapi({ example: '+44 20 7946 0958' });
const Name = z.string().trim().min(1).max(100);
const ExternalReference = z.string().min(1).max(255).openapi({ description: "The caller's own user id." });

export const CustomerCreateSchema = z
  .strictObject({
    email: Email.optional(),
    phone: Phone.optional(),
    first_name: Name.optional(),
    last_name: Name.optional(),
    external_reference: ExternalReference.optional(),
    metadata: MetadataSchema.optional(),
  })
  .refine((c) => c.email !== undefined || c.phone !== undefined, {
    message: 'at least one of email and phone is required',
    path: ['email'],
  })
  .openapi('CustomerCreate');

/** PATCH: any create field; `null` clears an optional one; metadata is replaced as a whole. */
export const CustomerUpdateSchema = z
  .strictObject({
    email: Email.nullable().optional(),
    phone: Phone.nullable().optional(),
    first_name: Name.nullable().optional(),
    last_name: Name.nullable().optional(),
    external_reference: ExternalReference.nullable().optional(),
    metadata: MetadataSchema.optional(),
  })
  .openapi('CustomerUpdate');

export const CustomerTierSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    points_threshold: z.number().int(),
    multiplier: z.number(),
    benefits: z.array(z.string()),
    achieved_at: TimestampSchema,
  })
  .openapi('CustomerTier');

/** The earliest expiry among lots with points left (pending included), those points summed (CONTRACT.md §13). */
export const NextExpiringSchema = z
  .object({ amount: z.number().int(), expires_at: TimestampSchema })
  .nullable()
  .openapi('NextExpiring', { description: 'The points that expire soonest unless spent first, and when; null when no points expire.' });

export const CustomerSchema = z
  .object({
    id: z.string().openapi({ example: 'cust_4fTz9QbLr2XcVw7NkP1a' }),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    external_reference: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    points_balance: z.number().int(),
    lifetime_earned: z.number().int(),
    lifetime_redeemed: z.number().int(),
    points_pending: z.number().int().openapi({ description: 'Points credited but not spendable yet (until their `available_at`).' }),
    lifetime_expired: z.number().int(),
    next_expiring: NextExpiringSchema,
    tier: CustomerTierSchema.nullable(),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  })
  .openapi('Customer');

export const CustomerListQuerySchema = PageQuerySchema.extend({
  ...CREATED_WINDOW,
  email: z.string().optional().openapi({ description: 'Exact e-mail, case-insensitive.' }),
  phone: z.string().optional(),
  external_reference: z.string().optional(),
  tier: z.string().optional().openapi({ description: 'Tier id.' }),
}).superRefine(orderedWindow);

export const CustomerIdParamSchema = z.object({
  customer_id: z.string().openapi({ param: { name: 'customer_id', in: 'path' }, example: 'cust_4fTz9QbLr2XcVw7NkP1a' }),
});
