import type { AnsweredEvent, CommandContext } from '../events/metadata.js';
import type { AppendWrite, Checkpoint, EventStore, StoredEvent } from '../store/event-store.js';

/**
 * How much earlier than its claim an attempt's events may be stamped: the processes' clocks
 * differ a little, and a request stamps its events with the time it started. Events stamped
 * before the claim, less this, are not the attempt's (a key is reused only once its record is 24
 * hours old), and the search of a stream stops at the first one.
 */
export const CLAIM_CLOCK_SLACK_MS = 60_000;
/** Events read per page, from the end of a stream back. */
const PAGE = 100;

/** Who made the earlier attempt: the business, its Idempotency-Key, and when it claimed the key. */
export interface AttemptKey {
  businessId: string;
  idempotencyKey: string;
  claimedAt: Date;
}

/** An earlier attempt's events found in the log, as the writes of its change. */
export interface FoundAppend {
  writes: AppendWrite[];
  /** The position of the last of them (for read-your-writes). */
  position: Checkpoint;
}

/**
 * The answer an earlier attempt of this request would have given, built from the events it
 * appended, when the store does not keep answers in the append's transaction
 * (`EventStore.transactionalReceipts`) and the request took its key over from that attempt
 * (`ctx.earlierAttempt`). Null when there is nothing to rebuild: the change then runs as usual.
 *
 * Only `lock`'s streams are searched. A change that starts a stream under an id made afresh for
 * each attempt (a create) names another stream on the retry, so its first attempt is not found
 * there; and when the events found do not hold what `answer` is built from, nothing is rebuilt.
 */
export async function answerOfEarlierAttempt(
  store: Pick<EventStore, 'readStream' | 'transactionalReceipts'>,
  ctx: CommandContext,
  lock: string[],
  answer: (writes: AppendWrite[]) => AnsweredEvent,
): Promise<{ answer: AnsweredEvent; position: Checkpoint } | null> {
  const earlier = ctx.earlierAttempt;
  if (store.transactionalReceipts || !earlier || ctx.idempotencyKey === null) return null;
  const found = await appendedByAttempt(store, lock, { businessId: ctx.businessId, idempotencyKey: ctx.idempotencyKey, claimedAt: earlier.claimedAt });
  if (!found) return null;
  let answered: AnsweredEvent;
  try {
    answered = answer(found.writes);
  } catch {
    return null; // the events found are not the ones the answer is built from (see above)
  }
  return { answer: answered, position: found.position };
}

/**
 * The events appended to `streams` under `attempt`'s business and Idempotency-Key (their
 * metadata's `business_id` and `idempotency_key`), stamped no earlier than its claim (less
 * `CLAIM_CLOCK_SLACK_MS`); each stream is read from its end back, page by page, until an event
 * stamped before that. Null when there are none.
 */
export async function appendedByAttempt(store: Pick<EventStore, 'readStream'>, streams: string[], attempt: AttemptKey): Promise<FoundAppend | null> {
  const writes: AppendWrite[] = [];
  let position: Checkpoint | undefined;
  for (const stream of new Set(streams)) {
    const events = await eventsOfAttempt(store, stream, attempt);
    if (events.length === 0) continue;
    writes.push({ stream, expected: 'any', events: events.map((e) => ({ id: e.eventId, type: e.type, data: e.data, metadata: e.metadata })) });
    for (const event of events) if (!position || event.position.globalPosition > position.globalPosition) position = event.position;
  }
  return position ? { writes, position } : null;
}

/** `attempt`'s events in `stream`, oldest first. */
async function eventsOfAttempt(store: Pick<EventStore, 'readStream'>, stream: string, attempt: AttemptKey): Promise<StoredEvent[]> {
  const oldest = attempt.claimedAt.getTime() - CLAIM_CLOCK_SLACK_MS;
  const found: StoredEvent[] = [];
  let from: number | undefined;
  for (;;) {
    const page = await store.readStream(stream, { backwards: true, max: PAGE, ...(from === undefined ? {} : { from }) });
    for (const event of page) {
      if (Date.parse(event.metadata.recorded_at) < oldest) return found.reverse();
      if (event.metadata.business_id === attempt.businessId && event.metadata.idempotency_key === attempt.idempotencyKey) found.push(event);
    }
    const last = page.at(-1);
    if (page.length < PAGE || last === undefined || last.streamPosition === 0) return found.reverse();
    from = last.streamPosition - 1;
  }
}
