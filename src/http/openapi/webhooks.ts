import type { OpenAPIHono } from '@hono/zod-openapi';
import { WEBHOOK_EVENT_TYPES } from '../../events/webhook-events.js';
import { WEBHOOK_DATA_EXAMPLES, WEBHOOK_DESCRIPTIONS, webhookBodySchema } from '../../webhooks/webhook-payload-schemas.js';
import type { AppEnv } from '../env.js';

const SIGNATURE_HEADERS = [
  { name: 'webhook-id', description: 'The message id (`msg_…`): the same on every retry of one message; receivers deduplicate on it.', example: 'msg_2ZkqP2mXv4RtY6wQ1bN3' },
  { name: 'webhook-timestamp', description: 'Seconds since the epoch when this attempt was signed.', example: '1795363563' },
  { name: 'webhook-signature', description: '`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` with the endpoint’s secret (two, space-separated, during a rotation).', example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=' },
];

const pascal = (type: string) => type.replace(/(^|[._])([a-z])/g, (_m, _s, c: string) => c.toUpperCase());

/**
 * Every webhook event type as an OpenAPI 3.1 `webhooks` entry: the POST the service sends to a
 * subscribed endpoint, its Standard Webhooks headers, its body schema and an example.
 */
export function registerWebhooks(app: OpenAPIHono<AppEnv>): void {
  for (const type of WEBHOOK_EVENT_TYPES) {
    const schema = webhookBodySchema(type).openapi(`${pascal(type)}Webhook`);
    app.openAPIRegistry.registerWebhook({
      method: 'post',
      path: type,
      operationId: `${pascal(type).replace(/^./, (c) => c.toLowerCase())}Webhook`,
      tags: ['Webhooks'],
      summary: `${type} message`,
      description: `${WEBHOOK_DESCRIPTIONS[type]} Sent to endpoints subscribed to \`${type}\` or \`*\`; signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried, 410 disables the endpoint.`,
      parameters: SIGNATURE_HEADERS.map(({ name, description, example }) => ({ name, in: 'header' as const, required: true, description, schema: { type: 'string' as const, example } })),
      request: {
        body: {
          required: true,
          content: {
            'application/json': {
              schema,
              example: { type, timestamp: '2026-11-22T14:03:07.123Z', data: WEBHOOK_DATA_EXAMPLES[type] },
            },
          },
        },
      },
      responses: {
        default: { description: 'Any 2xx within 15 s acknowledges the message; 410 Gone disables the endpoint; anything else is retried.' },
      },
    });
  }
}
