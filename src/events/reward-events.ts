import { z } from 'zod';

export const RewardTypeSchema = z.enum(['digital', 'physical', 'discount', 'experience', 'achievement']);

export const RewardDefinitionSchema = z.object({
  reward_id: z.string(),
  business_id: z.string(),
  title: z.string(),
  points_cost: z.number().int(),
  reward_type: RewardTypeSchema,
  description: z.string().nullable(),
  /** Units left; null means unlimited. */
  stock_quantity: z.number().int().nullable(),
  active: z.boolean(),
  metadata: z.record(z.string(), z.unknown()),
});
export type RewardDefinition = z.infer<typeof RewardDefinitionSchema>;

/** The `reward-{id}` stream: the definition and its stock. */
export const RewardEvents = {
  RewardCreated: RewardDefinitionSchema,
  RewardUpdated: RewardDefinitionSchema.omit({ reward_id: true, business_id: true }).partial(),
  /** One unit of a limited stock taken by a redemption. */
  RewardStockTaken: z.object({ redemption_id: z.string(), customer_id: z.string(), stock_quantity: z.number().int() }),
  /** A unit given back by a cancelled redemption. */
  RewardStockReturned: z.object({ redemption_id: z.string(), customer_id: z.string(), stock_quantity: z.number().int() }),
};
