import { z } from 'zod';

export const PlanSchema = z.enum(['free', 'unlimited']);
export type Plan = z.infer<typeof PlanSchema>;

export const BusinessEvents = {
  BusinessCreated: z.object({ business_id: z.string(), name: z.string(), plan: PlanSchema }),
  /** Counts a customer against a limited plan; only written for businesses on such a plan. */
  BusinessCustomerCounted: z.object({ customer_id: z.string(), customer_count: z.number().int() }),
  /** `loyalty businesses set-plan`; carries the customers counted from then on. */
  BusinessPlanChanged: z.object({ plan: PlanSchema, previous_plan: PlanSchema, customer_count: z.number().int() }),
};
