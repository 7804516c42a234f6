import type { RecordedEvent } from '../../commands/index.js';
import { recorded } from './presenters.js';
import type { WebhookEndpointRow } from '../../db/schema.js';
import type { AttemptRow } from '../../webhooks/webhook-queries.js';
import { DeliverySchema, WebhookSchema } from '../schemas/webhook-schemas.js';

/** A webhook endpoint as the API shows it (`WebhookSchema`). */
export function presentWebhook(row: Omit<WebhookEndpointRow, 'business_id' | 'seq'>) {
  return {
    id: row.id,
    url: row.url,
    events: WebhookSchema.shape.events.parse(row.events),
    description: row.description,
    active: row.active,
    disabled_reason: row.disabled_reason,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    deleted_at: row.deleted_at?.toISOString() ?? null,
  };
}

/** A new endpoint, from its `WebhookCreated`, with its signing secret (shown this once; null in a stored answer). */
export function presentWebhookCreated(event: RecordedEvent, secret: string | null) {
  const { webhook_id, business_id: _business, ...webhook } = recorded(event, 'WebhookCreated').data;
  const at = event.recordedAt;
  return { ...presentWebhook({ id: webhook_id, ...webhook, active: true, disabled_reason: null, deleted_at: null, created_at: at, updated_at: at }), secret };
}

/** A delivery attempt as the API shows it (`DeliverySchema`). */
export function presentDelivery(row: AttemptRow) {
  return {
    id: row.id,
    message_id: row.message_id,
    event_type: DeliverySchema.shape.event_type.parse(row.event_type),
    attempt: row.attempt,
    attempted_at: row.attempted_at.toISOString(),
    status_code: row.status_code,
    duration_ms: row.duration_ms,
    response_excerpt: row.response_excerpt,
    error: row.error,
    message_status: row.message_status,
    next_attempt_at: row.message_status === 'pending' ? row.next_attempt_at.toISOString() : null,
  };
}
