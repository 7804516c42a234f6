import { z } from '@hono/zod-openapi';
import { ProgramSettingsSchema as ProgramSettingsData, RuleSchema } from '../../events/program-events.js';
import { RewardTypeSchema } from '../../events/reward-events.js';
import { CREATED_WINDOW, LotTimesInputSchema, LotTimesSchema, MetadataSchema, orderedWindow, PageQuerySchema, TimestampSchema } from './common.js';

/** A single amount of points: at most 1,000,000,000 (CONTRACT.md §1). */
const Points = z.number().int().min(0).max(1_000_000_000);
/** A tier threshold compares with lifetime_earned, which may grow past any single amount. */
const Threshold = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const Multiplier = z
  .number()
  .min(1)
  .max(10)
  .refine((m) => Math.abs(m * 100 - Math.round(m * 100)) < 1e-9, { message: 'must have at most two decimals' })
  .openapi({ example: 1.25 });
const Benefits = z.array(z.string().min(1).max(200)).max(50);

export const TierCreateSchema = z
  .strictObject({
    name: z.string().trim().min(1).max(100).openapi({ example: 'Gold' }),
    points_threshold: Threshold.openapi({ description: 'lifetime_earned at which a customer reaches the tier.', example: 1000 }),
    multiplier: Multiplier,
    benefits: Benefits.optional(),
    metadata: MetadataSchema.optional(),
  })
  .openapi('TierCreate');

export const TierUpdateSchema = z
  .strictObject({
    name: z.string().trim().min(1).max(100).optional(),
    points_threshold: Threshold.optional(),
    multiplier: Multiplier.optional(),
    benefits: Benefits.optional(),
    metadata: MetadataSchema.optional(),
  })
  .openapi('TierUpdate');

export const TierSchema = z
  .object({
    id: z.string().openapi({ example: 'tier_9XkQ2mP4vR7tY1wB3nL5' }),
    name: z.string(),
    points_threshold: z.number().int(),
    multiplier: z.number(),
    benefits: z.array(z.string()),
    metadata: z.record(z.string(), z.unknown()),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  })
  .openapi('Tier');

export const TierIdParamSchema = z.object({ tier_id: z.string().openapi({ param: { name: 'tier_id', in: 'path' } }) });

const Rules = z.array(RuleSchema).max(50).openapi({
  description:
    'Each rule applies when all its conditions hold on the event properties (ops eq ne gt gte lt lte in exists, dotted paths); ' +
    'it is worth points + floor(properties[unit_property] / unit_size) × points_per_unit, capped at max_points.',
});

export const EventTypeCreateSchema = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, 'must match [a-z0-9][a-z0-9_.-]{0,63}').openapi({ example: 'purchase' }),
    display_name: z.string().trim().min(1).max(100),
    default_points: Points,
    rules: Rules.optional(),
    metadata: MetadataSchema.optional(),
  })
  .openapi('EventTypeCreate');

export const EventTypeUpdateSchema = z
  .strictObject({
    display_name: z.string().trim().min(1).max(100).optional(),
    default_points: Points.optional(),
    rules: Rules.optional(),
    metadata: MetadataSchema.optional(),
  })
  .openapi('EventTypeUpdate');

export const EventTypeSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    display_name: z.string(),
    default_points: z.number().int(),
    rules: z.array(RuleSchema),
    metadata: z.record(z.string(), z.unknown()),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  })
  .openapi('EventType');

export const EventTypeNameParamSchema = z.object({ name: z.string().openapi({ param: { name: 'name', in: 'path' }, example: 'purchase' }) });

export const RewardCreateSchema = z
  .strictObject({
    title: z.string().trim().min(1).max(200),
    points_cost: Points.openapi({ description: '0 for achievements.' }),
    reward_type: RewardTypeSchema,
    description: z.string().max(2000).optional(),
    stock_quantity: z.number().int().min(0).max(1_000_000_000).nullable().optional().openapi({ description: 'null or absent: unlimited.' }),
    metadata: MetadataSchema.optional(),
  })
  .openapi('RewardCreate');

export const RewardUpdateSchema = z
  .strictObject({
    title: z.string().trim().min(1).max(200).optional(),
    points_cost: Points.optional(),
    reward_type: RewardTypeSchema.optional(),
    description: z.string().max(2000).nullable().optional(),
    stock_quantity: z.number().int().min(0).max(1_000_000_000).nullable().optional(),
    active: z.boolean().optional(),
    metadata: MetadataSchema.optional(),
  })
  .openapi('RewardUpdate');

export const RewardSchema = z
  .object({
    id: z.string().openapi({ example: 'rew_3mN8bV1cX6zL4kJ2hG9f' }),
    title: z.string(),
    points_cost: z.number().int(),
    reward_type: RewardTypeSchema,
    description: z.string().nullable(),
    stock_quantity: z.number().int().nullable(),
    active: z.boolean(),
    redeemed_count: z.number().int(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
  })
  .openapi('Reward');

export const RewardIdParamSchema = z.object({ reward_id: z.string().openapi({ param: { name: 'reward_id', in: 'path' } }) });

export const RewardListQuerySchema = PageQuerySchema.extend({
  active: z.enum(['true', 'false']).transform((v) => v === 'true').optional(),
  reward_type: RewardTypeSchema.optional(),
});

const Reference = z.string().min(1).max(255).optional().openapi({ description: 'Unique per customer across transactions, events and redemptions.' });

export const RedemptionCreateSchema = z
  .strictObject({ reward_id: z.string().min(1), reference: Reference, metadata: MetadataSchema.optional() })
  .openapi('RedemptionCreate');

export const RedemptionSchema = z
  .object({
    id: z.string().openapi({ example: 'red_5tR2yU8iO1pA4sD7fG0h' }),
    customer_id: z.string(),
    reward_id: z.string(),
    points_cost: z.number().int(),
    balance: z
      .number()
      .int()
      .openapi({ description: "The customer's balance right after the redemption; in the answer to a cancel, right after the cancellation." }),
    status: z.enum(['completed', 'cancelled']),
    reference: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: TimestampSchema,
    cancelled_at: TimestampSchema.nullable(),
  })
  .openapi('Redemption');

export const RedemptionParamsSchema = z.object({
  customer_id: z.string().openapi({ param: { name: 'customer_id', in: 'path' } }),
  redemption_id: z.string().openapi({ param: { name: 'redemption_id', in: 'path' } }),
});

export const EventCreateSchema = z
  .strictObject({
    customer_id: z.string().min(1),
    event_type: z.string().min(1).max(64),
    properties: MetadataSchema.default({}).openapi({ description: 'Details of the occurrence, read by the rules.', example: { amount: 120 } }),
    reference: Reference,
    ...LotTimesInputSchema,
  })
  .openapi('EventCreate');

export const EventSchema = z
  .object({
    id: z.string().openapi({ example: 'evt_7uI9oP2aS5dF8gH1jK4l' }),
    customer_id: z.string(),
    event_type: z.string(),
    properties: z.record(z.string(), z.unknown()),
    reference: z.string().nullable(),
    points_awarded: z.number().int(),
    base_points: z.number().int(),
    multiplier: z.number(),
    balance: z.number().int(),
    available_at: LotTimesSchema.available_at,
    expires_at: LotTimesSchema.expires_at,
    created_at: TimestampSchema,
  })
  .openapi('Event');

export const EventListQuerySchema = PageQuerySchema.extend({
  ...CREATED_WINDOW,
  customer_id: z.string().optional(),
  event_type: z.string().optional(),
}).superRefine(orderedWindow);

/** The points lifecycle policy (CONTRACT.md §13), as GET and PATCH /program answer it. */
export const ProgramSettingsSchema = ProgramSettingsData.extend({
  updated_at: TimestampSchema.nullable().openapi({ description: 'When the policy last changed; null while it is the default.' }),
}).openapi('ProgramSettings');

/** A PATCH of the policy: any field; `tier_qualification` merges field by field. */
export const ProgramSettingsUpdateSchema = ProgramSettingsData.partial()
  .extend({ tier_qualification: ProgramSettingsData.shape.tier_qualification.partial().optional() })
  .openapi('ProgramSettingsUpdate');
