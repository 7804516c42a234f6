import { z } from '@hono/zod-openapi';
import { MetadataSchema, TimestampSchema } from './common.js';

/** `GET /api/v1/me`: the key a request is signed with, and its business. */
export const MeSchema = z
  .object({
    id: z.string().openapi({ example: 'key_Q2w3E4r5T6y7U8i9O0pA' }),
    type: z.enum(['private', 'public']),
    name: z.string().nullable(),
    key_hint: z.string().openapi({ example: 'sk_live_…x9Qa' }),
    permissions: z.array(z.string()).openapi({ example: ['customers:read', 'points:read', 'rewards:read'] }),
    created_at: TimestampSchema,
    business: z.object({
      id: z.string().openapi({ example: 'biz_8Hj2Kd9Lm3Np5Qr7St1V' }),
      name: z.string().openapi({ example: 'Corner Coffee' }),
      plan: z.enum(['free', 'unlimited']),
      created_at: TimestampSchema,
    }),
  })
  .openapi('Me');

const Day = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date written YYYY-MM-DD')
  .refine((s) => !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s), 'is not a calendar date');

export const MAX_STATS_DAYS = 366;

export const StatsQuerySchema = z.strictObject({
  from: Day.optional().openapi({ description: 'First UTC day, inclusive (default: 29 days before `to`).', example: '2026-10-26' }),
  to: Day.optional().openapi({ description: 'Last UTC day, inclusive (default: today).', example: '2026-11-24' }),
});

const DaySchema = z
  .object({
    date: z.string().openapi({ example: '2026-11-24' }),
    issued: z.number().int().openapi({ description: 'Credits made that day (earn, event, adjust) minus reversals made that day.' }),
    redeemed: z.number().int().openapi({ description: 'Deducts and redemptions that day minus the redemptions cancelled that day.' }),
    expired: z.number().int().openapi({ description: 'Points expired that day.' }),
  })
  .openapi('StatsDay');

export const StatsSchema = z
  .object({
    from: z.string().openapi({ example: '2026-10-26' }),
    to: z.string().openapi({ example: '2026-11-24' }),
    days: z.array(DaySchema).openapi({ description: 'Every day of the range, oldest first; zeros where nothing moved.' }),
    customers: z.number().int().openapi({ description: 'Customers now.' }),
    outstanding: z.number().int().openapi({ description: "Points held by the business's customers now (balances plus pending points)." }),
    tiers: z
      .array(
        z.object({
          tier_id: z.string().nullable(),
          name: z.string().nullable(),
          points_threshold: z.number().int().nullable(),
          customers: z.number().int(),
        }),
      )
      .openapi({ description: 'Customers per tier now, by threshold; the first entry (tier_id null) counts customers without a tier.' }),
  })
  .openapi('Stats');

export const RulePreviewSchema = z
  .strictObject({
    properties: MetadataSchema.openapi({ description: 'The properties of an imagined event.', example: { amount: 120 } }),
  })
  .openapi('RulePreviewRequest');

export const RulePreviewResultSchema = z
  .object({
    event_type: z.string().openapi({ example: 'purchase' }),
    default_points: z.number().int(),
    rules: z
      .array(
        z.object({
          index: z.number().int().openapi({ description: 'Position of the rule in the event type (0-based).' }),
          description: z.string().nullable(),
          applies: z.boolean().openapi({ description: 'Whether every condition of the rule holds.' }),
          points: z.number().int().openapi({ description: 'What the rule gives (0 when it does not apply).' }),
        }),
      )
      .openapi({ description: 'Every rule, in order.' }),
    points: z.number().int().openapi({ description: 'The total an event with these properties would award to a customer with no tier.' }),
  })
  .openapi('RulePreview');

const ChainBreakSchema = z.object({ position: z.number().int(), problem: z.string() });
const DriftSchema = z.object({
  field: z.string().openapi({ example: 'points_balance' }),
  log: z.unknown().openapi({ description: 'What folding the stream gives.' }),
  read_model: z.unknown().openapi({ description: 'What the read model holds.' }),
});

export const CustomerAuditSchema = z
  .object({
    customer_id: z.string(),
    events: z.number().int().openapi({ description: 'Events of the stream checked.' }),
    chain_intact: z.boolean().openapi({ description: "Every event's hash matches its content and its predecessor's hash." }),
    breaks: z.array(ChainBreakSchema).openapi({ description: 'Where the hash chain does not hold.' }),
    read_model_matches: z.boolean().openapi({ description: 'Folding the stream gives what the read models hold.' }),
    drifts: z.array(DriftSchema),
  })
  .openapi('CustomerAudit');
