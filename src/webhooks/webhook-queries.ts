import { type Kysely, sql } from 'kysely';
import type { Database, WebhookEndpointRow, WebhookMessageRow } from '../db/schema.js';
import { errors } from '../errors.js';
import { fetchPage, type Page, type PageRequest } from '../projections/page.js';

/** A webhook message due this long ago and still unclaimed means delivery is not keeping up, or not running. */
const OVERDUE_MS = 60_000;

export function webhookQueries(db: Kysely<Database>) {
  const endpoint = (businessId: string, id: string): Promise<WebhookEndpointRow | undefined> =>
    db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('id', '=', id)
      .where('deleted_at', 'is', null)
      .executeTakeFirst();

  return {
    endpoint,
    /** Messages waiting for delivery. */
    async queueDepth(): Promise<number> {
      const row = await db
        .selectFrom('webhook_messages')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'pending')
        .executeTakeFirst();
      return Number(row?.n ?? 0);
    },
    /**
     * The delivery queue as any process sees it in the database, wherever the workers run: messages
     * pending, and those `overdue` (due over a minute ago and claimed by no dispatcher). A running
     * dispatcher claims a due message within a poll, so overdue messages mean its loop is not running
     * or not keeping up.
     */
    async backlog(now: Date): Promise<{ pending: number; overdue: number }> {
      const { rows } = await sql<{ pending: number | string; overdue: number | string }>`
        select count(*) as pending,
               count(*) filter (where next_attempt_at < ${new Date(now.getTime() - OVERDUE_MS)} and (locked_until is null or locked_until < ${now})) as overdue
          from webhook_messages where status = 'pending'`.execute(db);
      return { pending: Number(rows[0]?.pending ?? 0), overdue: Number(rows[0]?.overdue ?? 0) };
    },
    /** An endpoint of the business, deleted or not (a DELETE answers with the endpoint as it now stands). */
    endpointEvenDeleted: (businessId: string, id: string): Promise<WebhookEndpointRow | undefined> =>
      db.selectFrom('webhook_endpoints').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst(),
    endpoints(businessId: string, page: PageRequest) {
      const q = db.selectFrom('webhook_endpoints').selectAll().where('business_id', '=', businessId).where('deleted_at', 'is', null);
      return fetchPage(q, page, async (id) => (await endpoint(businessId, id))?.seq);
    },
    /** Every attempt to deliver to one endpoint, oldest first, with its message's event type. Cursor: an attempt id. */
    async attempts(businessId: string, webhookId: string, page: PageRequest): Promise<Page<AttemptRow>> {
      let q = db
        .selectFrom('webhook_attempts as a')
        .innerJoin('webhook_messages as m', 'm.id', 'a.message_id')
        .select([
          'a.id',
          'a.seq',
          'a.message_id',
          'm.event_type',
          'a.attempt',
          'a.attempted_at',
          'a.status_code',
          'a.duration_ms',
          'a.response_excerpt',
          'a.error',
          'm.status as message_status',
          'm.next_attempt_at',
        ])
        .where('a.business_id', '=', businessId)
        .where('a.webhook_id', '=', webhookId);
      if (page.startingAfter !== undefined) {
        // Keyset on the hidden write order: the cursor's seq, found within the same endpoint.
        const cursor = await db
          .selectFrom('webhook_attempts')
          .select('seq')
          .where('business_id', '=', businessId)
          .where('webhook_id', '=', webhookId)
          .where('id', '=', page.startingAfter)
          .executeTakeFirst();
        if (!cursor) throw errors.validation([{ path: 'starting_after', message: `no item with id '${page.startingAfter}' in this list` }]);
        q = q.where('a.seq', '>', cursor.seq);
      }
      const rows = await q.orderBy('a.seq').limit(page.limit + 1).execute();
      return { items: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
    },
    /** Queues a `webhook.test` message for one endpoint. */
    async enqueueTest(businessId: string, webhookId: string, id: string, now: Date): Promise<void> {
      const payload = { type: 'webhook.test', timestamp: now.toISOString(), data: { webhook_id: webhookId } };
      await db
        .insertInto('webhook_messages')
        .values({
          id,
          business_id: businessId,
          webhook_id: webhookId,
          event_type: 'webhook.test',
          source_event_id: null,
          payload: JSON.stringify(payload),
          status: 'pending',
          attempts: 0,
          next_attempt_at: now,
          locked_until: null,
          created_at: now,
          delivered_at: null,
        })
        .execute();
    },
  };
}

export interface AttemptRow {
  id: string;
  seq: number;
  message_id: string;
  event_type: string;
  attempt: number;
  attempted_at: Date;
  status_code: number | null;
  duration_ms: number;
  response_excerpt: string | null;
  error: string | null;
  message_status: WebhookMessageRow['status'];
  next_attempt_at: Date;
}

export type WebhookQueries = ReturnType<typeof webhookQueries>;
