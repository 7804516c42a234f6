import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { errors } from '../../errors.js';
import { commandContext } from './command-context.js';
import type { AppEnv } from '../env.js';
import { listResponse } from '../presenters/list-response.js';
import { guard } from '../middleware/guard.js';
import { presentEventType, presentEventTypeCreated } from '../presenters/presenters.js';
import { createRouter } from './router.js';
import { errorResponses, jsonBody, jsonResponse, PageQuerySchema } from '../schemas/common.js';
import { EventTypeCreateSchema, EventTypeNameParamSchema, EventTypeSchema, EventTypeUpdateSchema } from '../schemas/program-schemas.js';

const tags = ['Event types'];

async function eventTypeOr404(c: Context<AppEnv>, name: string) {
  const row = await c.get('queries').catalog.eventType(c.get('principal').businessId, name);
  if (!row) throw errors.eventTypeNotFound(name);
  return row;
}

export const eventTypeRoutes = createRouter()
  .openapi(
    createRoute({
      method: 'post',
      path: '/event-types',
      operationId: 'createEventType',
      tags,
      summary: 'Create an event type with its points rules',
      middleware: guard(['rewards:write']),
      request: { body: jsonBody(EventTypeCreateSchema) },
      responses: { 201: jsonResponse(EventTypeSchema, 'The new event type.'), ...errorResponses(409) },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const created = await c.get('commands').program.createEventType(commandContext(c, { status: 201, present: presentEventTypeCreated }), {
        name: body.name,
        display_name: body.display_name,
        default_points: body.default_points,
        rules: body.rules ?? [],
        metadata: body.metadata ?? {},
      });
      return c.json(presentEventTypeCreated(created), 201);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/event-types',
      operationId: 'listEventTypes',
      tags,
      summary: 'List event types',
      middleware: guard(['rewards:read']),
      request: { query: PageQuerySchema },
      responses: { 200: jsonResponse(z.array(EventTypeSchema), 'Event types, oldest first.'), ...errorResponses() },
    }),
    async (c) => {
      const { limit, starting_after } = c.req.valid('query');
      const page = await c.get('queries').catalog.eventTypes(c.get('principal').businessId, { limit, startingAfter: starting_after });
      return listResponse(c, page, presentEventType, (row) => row.id);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/event-types/{name}',
      operationId: 'getEventType',
      tags,
      summary: 'Get an event type',
      middleware: guard(['rewards:read']),
      request: { params: EventTypeNameParamSchema },
      responses: { 200: jsonResponse(EventTypeSchema, 'The event type.'), ...errorResponses(404) },
    }),
    async (c) => c.json(presentEventType(await eventTypeOr404(c, c.req.valid('param').name)), 200),
  )
  .openapi(
    createRoute({
      method: 'patch',
      path: '/event-types/{name}',
      operationId: 'updateEventType',
      tags,
      summary: 'Update an event type (its rules apply to events recorded afterwards)',
      middleware: guard(['rewards:write']),
      request: { params: EventTypeNameParamSchema, body: jsonBody(EventTypeUpdateSchema) },
      responses: { 200: jsonResponse(EventTypeSchema, 'The event type as it now stands.'), ...errorResponses(404) },
    }),
    async (c) => {
      const { name } = c.req.valid('param');
      await c.get('commands').program.updateEventType(commandContext(c), name, c.req.valid('json'));
      return c.json(presentEventType(await eventTypeOr404(c, name)), 200);
    },
  );
