import { z } from 'zod';

/** What a reservation stream (`unique-…`) guards: a value that must be unique within a scope. */
export const ReservationKindSchema = z.enum(['email', 'external_reference', 'reference']);

export const ReservationEvents = {
  ReservationClaimed: z.object({
    kind: ReservationKindSchema,
    value: z.string(),
    /** The customer that holds the value. */
    owner_id: z.string(),
    /** For references: the record created under it (`transaction`, `event`, `redemption`). */
    record: z.object({ kind: z.string(), id: z.string() }).nullable(),
  }),
  ReservationReleased: z.object({ owner_id: z.string() }),
};
