import { z } from 'zod';

const Metadata = z.record(z.string(), z.unknown());

/** A dotted path into an event's `properties`, e.g. `order.total`. */
export const PropertyPathSchema = z
  .string()
  .regex(/^[A-Za-z0-9_$-]+(\.[A-Za-z0-9_$-]+)*$/, 'must be a dotted property path such as order.total');

export const ConditionOpSchema = z.enum(['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'exists']);

export const ConditionSchema = z
  .strictObject({
    property: PropertyPathSchema,
    op: ConditionOpSchema,
    /** Compared value; an array for `in`; for `exists` a boolean (default true). */
    value: z.unknown().optional(),
  })
  .superRefine((c, ctx) => {
    if (c.op === 'in' && !Array.isArray(c.value)) ctx.addIssue({ code: 'custom', path: ['value'], message: 'must be an array for op "in"' });
    if (c.op === 'exists' && c.value !== undefined && typeof c.value !== 'boolean') {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'must be a boolean for op "exists"' });
    }
    if (['gt', 'gte', 'lt', 'lte'].includes(c.op) && typeof c.value !== 'number' && typeof c.value !== 'string') {
      ctx.addIssue({ code: 'custom', path: ['value'], message: `must be a number or a string for op "${c.op}"` });
    }
    if ((c.op === 'eq' || c.op === 'ne') && c.value === undefined) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: `is required for op "${c.op}"` });
    }
  });

/**
 * A points rule of an event type (CONTRACT.md §8): when every condition holds on the event's
 * properties, it is worth `points` + floor(properties[unit_property] / unit_size) × points_per_unit,
 * capped at `max_points`.
 */
export const RuleSchema = z
  .strictObject({
    conditions: z.array(ConditionSchema).max(20).optional(),
    points: z.number().int().min(0).max(1_000_000_000).optional(),
    points_per_unit: z.number().min(0).max(1_000_000).optional(),
    unit_property: PropertyPathSchema.optional(),
    unit_size: z.number().positive().max(1_000_000_000).optional(),
    max_points: z.number().int().min(0).max(1_000_000_000).optional(),
    description: z.string().max(500).optional(),
  })
  .superRefine((r, ctx) => {
    if ((r.points_per_unit === undefined) !== (r.unit_property === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['unit_property'], message: 'points_per_unit and unit_property go together' });
    }
    if (r.points === undefined && r.points_per_unit === undefined) {
      ctx.addIssue({ code: 'custom', path: ['points'], message: 'a rule needs points or points_per_unit' });
    }
  });

export type Rule = z.infer<typeof RuleSchema>;
export type Condition = z.infer<typeof ConditionSchema>;

export const TierDefinitionSchema = z.object({
  tier_id: z.string(),
  name: z.string(),
  points_threshold: z.number().int(),
  multiplier: z.number(),
  benefits: z.array(z.string()),
  metadata: Metadata,
});
export type TierDefinition = z.infer<typeof TierDefinitionSchema>;

export const EventTypeDefinitionSchema = z.object({
  event_type_id: z.string(),
  name: z.string(),
  display_name: z.string(),
  default_points: z.number().int(),
  rules: z.array(RuleSchema),
  metadata: Metadata,
});
export type EventTypeDefinition = z.infer<typeof EventTypeDefinitionSchema>;

const DAYS_MAX = 36_500;

/** A business's points lifecycle policy (CONTRACT.md §13); the defaults are the behaviour of §7. */
export const ProgramSettingsSchema = z.strictObject({
  points_expiry_days: z.number().int().min(1).max(DAYS_MAX).nullable(),
  pending_days: z.number().int().min(0).max(DAYS_MAX),
  expiring_notice_days: z.number().int().min(1).max(DAYS_MAX),
  tier_qualification: z.strictObject({
    mode: z.enum(['lifetime', 'rolling']),
    window_days: z.number().int().min(1).max(DAYS_MAX).nullable(),
  }),
});
export type ProgramSettings = z.infer<typeof ProgramSettingsSchema>;

export const DEFAULT_PROGRAM_SETTINGS: ProgramSettings = {
  points_expiry_days: null,
  pending_days: 0,
  expiring_notice_days: 7,
  tier_qualification: { mode: 'lifetime', window_days: null },
};

/** Tiers and event types of one business live in its `program-{business_id}` stream. */
export const ProgramEvents = {
  TierCreated: TierDefinitionSchema,
  /** Carries the tier id and only the fields that changed. */
  TierUpdated: TierDefinitionSchema.partial().extend({ tier_id: z.string() }),
  EventTypeCreated: EventTypeDefinitionSchema,
  EventTypeUpdated: EventTypeDefinitionSchema.partial().extend({ name: z.string() }),
  /** The whole policy after a change; it applies to credits made from `changed_at` on. */
  ProgramSettingsChanged: ProgramSettingsSchema.extend({ changed_at: z.string() }),
};
