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

/** One balance change; `balance` is the balance right after it (a running balance for auditors). */
const PointsMovement = z.object({
  transaction_id: z.string(),
  amount: z.number().int(),
  balance: z.number().int(),
  description: z.string().nullable(),
  reference: z.string().nullable(),
  metadata: Metadata,
});

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
};
