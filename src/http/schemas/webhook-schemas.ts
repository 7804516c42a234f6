import { z } from '@hono/zod-openapi';
import { WEBHOOK_EVENT_TYPES } from '../../events/webhook-events.js';
import { TimestampSchema } from './common.js';

const Url = z.string().max(2048).openapi({ example: 'https://example.com/hooks/loyalty' });
const Events = z
  .array(z.enum([...WEBHOOK_EVENT_TYPES, '*']))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length + 1)
  .openapi({ description: `Event names, or ["*"] for all: ${WEBHOOK_EVENT_TYPES.join(', ')}.` });

export const WebhookCreateSchema = z
  .strictObject({ url: Url, events: Events, description: z.string().max(500).optional() })
  .openapi('WebhookCreate');

export const WebhookUpdateSchema = z
  .strictObject({
    url: Url.optional(),
    events: Events.optional(),
    description: z.string().max(500).nullable().optional(),
    active: z.boolean().optional(),
  })
  .openapi('WebhookUpdate');

export const WebhookSchema = z
  .object({
    id: z.string().openapi({ example: 'whk_2wE4rT6yU8iO0pA1sD3f' }),
    url: z.string(),
    events: z.array(z.enum([...WEBHOOK_EVENT_TYPES, '*'])),
    description: z.string().nullable(),
    active: z.boolean(),
    disabled_reason: z.string().nullable().openapi({ description: 'Why the service disabled it (e.g. a 410 Gone), if it did.' }),
    created_at: TimestampSchema,
    updated_at: TimestampSchema,
    deleted_at: TimestampSchema.nullable(),
  })
  .openapi('Webhook');

export const WebhookWithSecretSchema = WebhookSchema.extend({
  secret: z.string().nullable().openapi({
    description: 'The signing secret (whsec_…). Shown only in this response; null when the answer is an Idempotency-Key replay (secrets are never stored).',
  }),
}).openapi('WebhookWithSecret');

export const WebhookIdParamSchema = z.object({ webhook_id: z.string().openapi({ param: { name: 'webhook_id', in: 'path' } }) });

export const DeliverySchema = z
  .object({
    id: z.string().openapi({ example: 'att_7hJ2kL9mN4pQ6rS8tV1w' }),
    message_id: z.string().openapi({ description: 'The webhook-id header: stable across retries of one message.' }),
    event_type: z.enum([...WEBHOOK_EVENT_TYPES, 'webhook.test']),
    attempt: z.number().int(),
    attempted_at: TimestampSchema,
    status_code: z.number().int().nullable(),
    duration_ms: z.number().int(),
    response_excerpt: z.string().nullable(),
    error: z.string().nullable(),
    message_status: z.enum(['pending', 'delivered', 'failed', 'cancelled']).openapi({
      description: 'pending (waiting or retrying), delivered, failed (retries exhausted, or 410), cancelled (the endpoint was disabled or deleted first).',
    }),
    next_attempt_at: TimestampSchema.nullable(),
  })
  .openapi('WebhookDelivery');

export const TestMessageSchema = z
  .object({ id: z.string().openapi({ example: 'msg_1qA2wS3eD4rF5tG6yH7u' }), event_type: z.literal('webhook.test'), status: z.literal('pending') })
  .openapi('WebhookTestMessage');
