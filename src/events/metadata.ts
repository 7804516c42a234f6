import { z } from 'zod';
import type { AppendReceipt, StoredEvent } from '../store/event-store.js';

/** What every stored event carries besides its data: who, when, and which request caused it. */
export const EventMetadataSchema = z.object({
  event_id: z.string().uuid(),
  event_version: z.number().int().positive(),
  business_id: z.string(),
  recorded_at: z.string().datetime(),
  /** API key id, `cli`, or `system`. */
  actor: z.string(),
  request_id: z.string().nullable(),
  correlation_id: z.string().nullable(),
  causation_id: z.string().nullable(),
  idempotency_key: z.string().nullable(),
  /** Set by the event store: the hash of the stream's previous event, and this event's (see store/hash-chain.ts). */
  prev_hash: z.string().optional(),
  hash: z.string().optional(),
});

export type EventMetadata = z.infer<typeof EventMetadataSchema>;

/** An event as a change appended it: what a request's answer is built from. */
export type AnsweredEvent = Pick<StoredEvent, 'streamId' | 'type' | 'data' | 'recordedAt'>;

/** Who asks for a change, and in which request: passed from the edge into every command. */
export interface CommandContext {
  businessId: string;
  actor: string;
  requestId: string | null;
  idempotencyKey: string | null;
  now: Date;
  /**
   * The request's answer, built from the event the command appends for it (what the command
   * returns), to store with the append (`AppendOptions.receipt`). Absent without an
   * Idempotency-Key, and for commands whose route gives no answer to store with the append:
   * theirs is stored after it.
   */
  receipt?: ((event: AnsweredEvent) => AppendReceipt) | undefined;
  /**
   * This request took its Idempotency-Key over from an earlier attempt that never stored an
   * answer, made at `claimedAt` (see `src/commands/earlier-attempt.ts`). Where answers are not
   * stored in the append's transaction, that attempt's events may be in the log: the answer is
   * then built from them (`rebuilt` is told) instead of deciding again. Set only with `receipt`.
   */
  earlierAttempt?: EarlierAttempt | undefined;
}

export interface EarlierAttempt {
  claimedAt: Date;
  /** Called when the answer was built from the earlier attempt's events: nothing was decided or appended again. */
  rebuilt(): void;
}
