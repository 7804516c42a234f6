import { sql, type Transaction } from 'kysely';
import { streams } from '../events/streams.js';
import type { Database } from '../db/schema.js';
import { v5 as uuidv5 } from 'uuid';
import { rowSetInsert } from '../projections/insert-rows.js';
import { type BatchSpan, CarriedByBusiness } from '../projections/carried-by-business.js';
import { defineProjector } from '../projections/projector.js';
import { type AnnouncedEvent, webhookPayloadOf } from './webhook-payloads.js';

/**
 * The webhook reactor: keeps `webhook_endpoints` and turns every announced event into one
 * `webhook_messages` row per subscribed endpoint, in the same transaction as its checkpoint — so a
 * message is queued exactly once, whatever crashes. Endpoints are read from its own table, in
 * event order, so a webhook created before an event always hears of it. When an endpoint is
 * deleted or disabled, its pending messages end `cancelled` (CONTRACT.md §10): they leave the queue.
 */
interface Batch {
  trx: Transaction<Database>;
  span: BatchSpan | undefined;
  businesses: string[];
  /** The batch's businesses' endpoints as they are at the event being applied. */
  endpoints: Map<string, Endpoint>;
  messages: Record<string, unknown>[];
}

/** The namespace of webhook message ids (a fixed UUID: changing it would change every id). */
const MESSAGE_NAMESPACE = '8d2f6b1e-3c47-4f0a-9e85-61b7c2d4a930';

/**
 * A message's id, which is its `webhook-id`: made from the event and the endpoint, so one event's
 * message to one endpoint has the same id wherever and whenever it is queued (no id generator
 * needed, and a receiver's deduplication survives anything that queues it again).
 */
export function messageId(eventId: string, webhookId: string): string {
  return `msg_${uuidv5(`${eventId}:${webhookId}`, MESSAGE_NAMESPACE).replaceAll('-', '')}`;
}

/** An event that announces a webhook: one message per active endpoint of its business subscribed to it. */
function announce(event: AnnouncedEvent, { endpoints, messages }: Batch): void {
  if (endpoints.size === 0) return; // no payload to build for nobody (the batch's businesses have no endpoint)
  const payload = webhookPayloadOf(event);
  const businessId = event.metadata.business_id;
  for (const endpoint of endpoints.values()) {
    if (endpoint.business_id !== businessId || !endpoint.active) continue;
    if (!endpoint.events.includes(payload.type) && !endpoint.events.includes('*')) continue;
    messages.push({
      id: messageId(event.eventId, endpoint.id),
      business_id: businessId,
      webhook_id: endpoint.id,
      event_type: payload.type,
      source_event_id: event.eventId,
      payload: JSON.stringify(payload),
      next_attempt_at: event.recordedAt,
      created_at: event.recordedAt,
    });
  }
}

/**
 * The endpoint no longer receives deliveries (deleted, or disabled). The batch's messages so far go
 * in first, so that the cancellation covers them too (and spares those queued after a re-enable
 * later in the batch).
 */
async function stopped(webhookId: string, { trx, messages }: Batch): Promise<void> {
  await insertMessages(trx, messages.splice(0));
  await cancelPendingMessages(trx, webhookId);
}

/**
 * The webhook reactor: keeps `webhook_endpoints` and turns every announced event into one
 * `webhook_messages` row per subscribed endpoint, in the same transaction as its checkpoint — so a
 * message is queued exactly once, whatever crashes. Endpoints are read from its own table, in
 * event order, so a webhook created before an event always hears of it. When an endpoint is
 * deleted or disabled, its pending messages end `cancelled` (CONTRACT.md §10): they leave the queue.
 */
export const webhooksProjector = defineProjector<Batch>({
  name: 'webhooks',
  tables: ['webhook_endpoints', 'webhook_messages'],
  reactor: true,
  async begin(trx, events, span) {
    // Every endpoint of the batch's businesses (carried over from the last batch where it can be);
    // endpoint events below keep them current in event order, so each event is matched against
    // the endpoints as they were when it happened.
    const businesses = [...new Set(events.map((e) => e.metadata.business_id))];
    const byBusiness = await CarriedByBusiness.take(span, businesses, (missing) => endpointsOf(trx, missing), copyEndpoints);
    const endpoints = new Map([...byBusiness.values()].flatMap((list) => list ?? []).map((e) => [e.id, e]));
    return { trx, span, businesses, endpoints, messages: [] };
  },
  on: {
    async WebhookCreated({ data: w, recordedAt: at }, { trx, endpoints }) {
      await trx
        .insertInto('webhook_endpoints')
        .values({
          id: w.webhook_id,
          business_id: w.business_id,
          url: w.url,
          events: w.events,
          description: w.description,
          active: true,
          disabled_reason: null,
          deleted_at: null,
          created_at: at,
          updated_at: at,
        })
        .execute();
      endpoints.set(w.webhook_id, { id: w.webhook_id, business_id: w.business_id, events: w.events, active: true });
    },
    async WebhookUpdated({ data, streamId, recordedAt: at }, batch) {
      const { reason, ...changes } = data;
      const webhookId = streams.webhookIdOf(streamId);
      await batch.trx
        .updateTable('webhook_endpoints')
        .set({
          ...changes,
          ...(changes.active === false ? { disabled_reason: reason ?? 'disabled by the business' } : {}),
          ...(changes.active === true ? { disabled_reason: null } : {}),
          updated_at: at,
        })
        .where('id', '=', webhookId)
        .execute();
      const endpoint = batch.endpoints.get(webhookId);
      if (endpoint && changes.events !== undefined) endpoint.events = changes.events;
      if (endpoint && changes.active !== undefined) endpoint.active = changes.active;
      if (changes.active === false) await stopped(webhookId, batch);
    },
    async WebhookDeleted({ streamId, recordedAt: at }, batch) {
      const webhookId = streams.webhookIdOf(streamId);
      await batch.trx.updateTable('webhook_endpoints').set({ active: false, deleted_at: at, updated_at: at }).where('id', '=', webhookId).execute();
      const endpoint = batch.endpoints.get(webhookId);
      if (endpoint) endpoint.active = false;
      await stopped(webhookId, batch);
    },
    CustomerRegistered: announce,
    PointsEarned: announce,
    PointsDeducted: announce,
    PointsAdjusted: announce,
    EventRecorded: announce,
    RewardRedeemed: announce,
    RedemptionCancelled: announce,
    TierUpgraded: announce,
    PointsReleased: announce,
    PointsExpiringNotified: announce,
    PointsExpired: announce,
    PointsReversed: announce,
    TierDowngraded: announce,
  },
  async end({ trx, span, businesses, endpoints, messages }) {
    await insertMessages(trx, messages);
    const byBusiness = new Map<string, Endpoint[]>(businesses.map((b) => [b, []]));
    for (const endpoint of endpoints.values()) {
      const list = byBusiness.get(endpoint.business_id);
      if (!list) return; // an endpoint of a business no event of the batch named: carry nothing
      list.push(endpoint);
    }
    CarriedByBusiness.leave(span, byBusiness);
  },
});

/** The endpoints of each business, as the batch's transaction sees them, in creation order. */
async function endpointsOf(trx: Transaction<Database>, businesses: string[]): Promise<Map<string, Endpoint[]>> {
  const rows = await trx.selectFrom('webhook_endpoints').select(['id', 'business_id', 'events', 'active']).where('business_id', 'in', businesses).orderBy('seq').execute();
  const byBusiness = new Map<string, Endpoint[]>(businesses.map((b) => [b, []]));
  for (const row of rows) byBusiness.get(row.business_id)!.push({ ...row });
  return byBusiness;
}

function copyEndpoints(list: Endpoint[]): Endpoint[] {
  return list.map((e) => ({ ...e }));
}



/**
 * The endpoint was deleted or disabled: its messages still waiting (queued, or between retries)
 * end `cancelled`, in one statement. A message whose attempt is in flight is cancelled too; the
 * dispatcher records that attempt and leaves it cancelled unless it was delivered.
 */
async function cancelPendingMessages(trx: Transaction<Database>, webhookId: string): Promise<void> {
  await trx
    .updateTable('webhook_messages')
    .set({ status: 'cancelled', locked_until: null })
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'pending')
    .execute();
}

interface Endpoint {
  id: string;
  business_id: string;
  events: string[];
  active: boolean;
}

const MESSAGE_COLUMNS = {
  id: 'text',
  business_id: 'text',
  webhook_id: 'text',
  event_type: 'text',
  source_event_id: 'uuid',
  payload: 'text',
  next_attempt_at: 'timestamptz',
  created_at: 'timestamptz',
};
const insertMessages = rowSetInsert('webhook_messages', MESSAGE_COLUMNS, {
  deferred: true,
  also: { status: sql`'pending'`, attempts: sql`0`, locked_until: sql`null`, delivered_at: sql`null` },
  onConflict: sql`on conflict (webhook_id, source_event_id, event_type) do nothing`,
});
