import type { Transaction } from 'kysely';
import { streams } from '../commands/streams.js';
import type { Database } from '../db/schema.js';
import type { EventData, EventType } from '../events/catalogue.js';
import { newId } from '../ids.js';
import type { Projector } from '../projections/projector.js';
import type { StoredEvent } from '../store/event-store.js';
import { webhookPayloadOf } from './webhook-payloads.js';

/**
 * The webhook reactor: keeps `webhook_endpoints` and turns every announced event into one
 * `webhook_messages` row per subscribed endpoint, in the same transaction as its checkpoint — so a
 * message is queued exactly once, whatever crashes. Endpoints are read from its own table, in
 * event order, so a webhook created before an event always hears of it.
 */
export const webhooksProjector: Projector = {
  name: 'webhooks',
  tables: ['webhook_endpoints', 'webhook_messages'],
  reactor: true,
  handles: new Set<EventType>([
    'WebhookCreated',
    'WebhookUpdated',
    'WebhookDeleted',
    'CustomerRegistered',
    'PointsEarned',
    'PointsDeducted',
    'PointsAdjusted',
    'EventRecorded',
    'RewardRedeemed',
    'RedemptionCancelled',
    'TierUpgraded',
  ]),

  async apply(event: StoredEvent, trx: Transaction<Database>) {
    const at = event.recordedAt;
    switch (event.type) {
      case 'WebhookCreated': {
        const w = event.data as EventData<'WebhookCreated'>;
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
        return;
      }
      case 'WebhookUpdated': {
        const { reason, ...changes } = event.data as EventData<'WebhookUpdated'>;
        await trx
          .updateTable('webhook_endpoints')
          .set({
            ...changes,
            ...(changes.active === false ? { disabled_reason: reason ?? 'disabled by the business' } : {}),
            ...(changes.active === true ? { disabled_reason: null } : {}),
            updated_at: at,
          })
          .where('id', '=', streams.webhookIdOf(event.streamId))
          .execute();
        return;
      }
      case 'WebhookDeleted':
        await trx
          .updateTable('webhook_endpoints')
          .set({ active: false, deleted_at: at, updated_at: at })
          .where('id', '=', streams.webhookIdOf(event.streamId))
          .execute();
        return;
    }
    const payload = webhookPayloadOf(event);
    if (!payload) return;
    const endpoints = await trx
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('business_id', '=', event.metadata.business_id)
      .where('active', '=', true)
      .where((eb) => eb.or([eb(eb.val<string>(payload.type), '=', eb.fn.any('events')), eb(eb.val('*'), '=', eb.fn.any('events'))]))
      .execute();
    if (endpoints.length === 0) return;
    await trx
      .insertInto('webhook_messages')
      .values(
        endpoints.map((endpoint) => ({
          id: newId('message'),
          business_id: event.metadata.business_id,
          webhook_id: endpoint.id,
          event_type: payload.type,
          source_event_id: event.eventId,
          payload: JSON.stringify(payload),
          status: 'pending' as const,
          attempts: 0,
          next_attempt_at: at,
          locked_until: null,
          created_at: at,
          delivered_at: null,
        })),
      )
      .onConflict((oc) => oc.columns(['webhook_id', 'source_event_id', 'event_type']).doNothing())
      .execute();
  },
};
