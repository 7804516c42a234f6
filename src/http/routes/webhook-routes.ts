import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { errors } from '../../errors.js';
import { commandContext } from './command-context.js';
import type { AnsweredEvent } from '../../events/metadata.js';
import type { AppEnv } from '../env.js';
import { listResponse } from '../presenters/list-response.js';
import { presentDelivery, presentWebhook, presentWebhookCreated } from '../presenters/webhook-presenters.js';
import { guard } from '../middleware/guard.js';
import { createRouter } from './router.js';
import { errorResponses, jsonBody, jsonResponse, PageQuerySchema } from '../schemas/common.js';
import {
  DeliverySchema,
  TestMessageSchema,
  WebhookCreateSchema,
  WebhookIdParamSchema,
  WebhookSchema,
  WebhookUpdateSchema,
  WebhookWithSecretSchema,
} from '../schemas/webhook-schemas.js';

const tags = ['Webhooks'];
const middleware = guard(['webhooks:write']);

async function webhookOr404(c: Context<AppEnv>, webhookId: string) {
  const row = await c.get('queries').webhooks.endpoint(c.get('principal').businessId, webhookId);
  if (!row) throw errors.webhookNotFound(webhookId);
  return row;
}

export const webhookRoutes = createRouter()
  .openapi(
    createRoute({
      method: 'post',
      path: '/webhooks',
      operationId: 'createWebhook',
      tags,
      summary: 'Create a webhook endpoint (the signing secret is shown once)',
      description:
        'Deliveries follow Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature). URLs must be https and resolve to public addresses ' +
        '(LOYALTY_WEBHOOK_ALLOW_PRIVATE=1 lifts this for development).',
      middleware,
      request: { body: jsonBody(WebhookCreateSchema) },
      responses: { 201: jsonResponse(WebhookWithSecretSchema, 'The endpoint and its secret.'), ...errorResponses() },
    }),
    async (c) => {
      const body = c.req.valid('json');
      // A stored answer never holds the secret (CONTRACT.md §5): a replay shows null.
      const present = (event: AnsweredEvent) => presentWebhookCreated(event, null);
      const { created, secret } = await c.get('commands').webhooks.create(commandContext(c, { status: 201, present }), {
        url: body.url,
        events: body.events,
        description: body.description ?? null,
      });
      return c.json(presentWebhookCreated(created, secret), 201);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/webhooks',
      operationId: 'listWebhooks',
      tags,
      summary: 'List webhook endpoints',
      middleware,
      request: { query: PageQuerySchema },
      responses: { 200: jsonResponse(z.array(WebhookSchema), 'Endpoints, oldest first (never their secrets).'), ...errorResponses() },
    }),
    async (c) => {
      const { limit, starting_after } = c.req.valid('query');
      const page = await c.get('queries').webhooks.endpoints(c.get('principal').businessId, { limit, startingAfter: starting_after });
      return listResponse(c, page, presentWebhook, (row) => row.id);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/webhooks/{webhook_id}',
      operationId: 'getWebhook',
      tags,
      summary: 'Get a webhook endpoint',
      middleware,
      request: { params: WebhookIdParamSchema },
      responses: { 200: jsonResponse(WebhookSchema, 'The endpoint.'), ...errorResponses(404) },
    }),
    async (c) => c.json(presentWebhook(await webhookOr404(c, c.req.valid('param').webhook_id)), 200),
  )
  .openapi(
    createRoute({
      method: 'patch',
      path: '/webhooks/{webhook_id}',
      operationId: 'updateWebhook',
      tags,
      summary: 'Update a webhook endpoint (url, events, description, active)',
      description: '`active: false` stops deliveries: messages still waiting end `cancelled` and are not revived by `active: true`.',
      middleware,
      request: { params: WebhookIdParamSchema, body: jsonBody(WebhookUpdateSchema) },
      responses: { 200: jsonResponse(WebhookSchema, 'The endpoint as it now stands.'), ...errorResponses(404) },
    }),
    async (c) => {
      const { webhook_id } = c.req.valid('param');
      await c.get('commands').webhooks.update(commandContext(c), webhook_id, c.req.valid('json'));
      return c.json(presentWebhook(await webhookOr404(c, webhook_id)), 200);
    },
  )
  .openapi(
    createRoute({
      method: 'delete',
      path: '/webhooks/{webhook_id}',
      operationId: 'deleteWebhook',
      tags,
      summary: 'Delete a webhook endpoint (no further deliveries)',
      description:
        'Messages still waiting for delivery end `cancelled`. A deleted endpoint is gone: a second DELETE answers 404 `webhook_not_found`, as a GET would; ' +
        'to retry a DELETE whose answer was lost, send the same Idempotency-Key and get the first answer again.',
      middleware,
      request: { params: WebhookIdParamSchema },
      responses: { 200: jsonResponse(WebhookSchema, 'The endpoint as it now stands (deleted_at set).'), ...errorResponses(404) },
    }),
    async (c) => {
      const { webhook_id } = c.req.valid('param');
      const { commands, queries, principal } = c.var;
      await webhookOr404(c, webhook_id);
      await commands.webhooks.delete(commandContext(c), webhook_id);
      const row = await queries.webhooks.endpointEvenDeleted(principal.businessId, webhook_id);
      if (!row) throw new Error(`webhook ${webhook_id} was deleted but is not in the read model`);
      return c.json(presentWebhook(row), 200);
    },
  )
  .openapi(
    createRoute({
      method: 'post',
      path: '/webhooks/{webhook_id}/rotate-secret',
      operationId: 'rotateWebhookSecret',
      tags,
      summary: 'Rotate the signing secret (the old one keeps signing alongside for 24 hours)',
      middleware,
      request: { params: WebhookIdParamSchema },
      responses: { 200: jsonResponse(WebhookWithSecretSchema, 'The endpoint and its new secret.'), ...errorResponses(404) },
    }),
    async (c) => {
      const { webhook_id } = c.req.valid('param');
      const secret = await c.get('commands').webhooks.rotateSecret(commandContext(c), webhook_id);
      return c.json({ ...presentWebhook(await webhookOr404(c, webhook_id)), secret }, 200);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/webhooks/{webhook_id}/deliveries',
      operationId: 'listWebhookDeliveries',
      tags,
      summary: 'Every delivery attempt to this endpoint',
      middleware,
      request: { params: WebhookIdParamSchema, query: PageQuerySchema },
      responses: { 200: jsonResponse(z.array(DeliverySchema), 'Attempts, oldest first.'), ...errorResponses(404) },
    }),
    async (c) => {
      const { webhook_id } = c.req.valid('param');
      await webhookOr404(c, webhook_id);
      const { limit, starting_after } = c.req.valid('query');
      const page = await c.get('queries').webhooks.attempts(c.get('principal').businessId, webhook_id, { limit, startingAfter: starting_after });
      return listResponse(c, page, presentDelivery, (row) => row.id);
    },
  )
  .openapi(
    createRoute({
      method: 'post',
      path: '/webhooks/{webhook_id}/test',
      operationId: 'sendTestWebhook',
      tags,
      summary: 'Queue a webhook.test message to this endpoint',
      description: 'A disabled endpoint (`active: false`) receives nothing: 409 `conflict` until it is enabled again.',
      middleware,
      request: { params: WebhookIdParamSchema },
      responses: { 201: jsonResponse(TestMessageSchema, 'The queued message; its attempts show in deliveries.'), ...errorResponses(404, 409) },
    }),
    async (c) => {
      const { webhook_id } = c.req.valid('param');
      const endpoint = await webhookOr404(c, webhook_id);
      if (!endpoint.active) throw errors.conflict('This webhook endpoint is disabled; enable it (PATCH active: true) before sending a test.');
      const id = await c.get('commands').webhooks.sendTest(commandContext(c), webhook_id);
      return c.json({ id, event_type: 'webhook.test' as const, status: 'pending' as const }, 201);
    },
  );
