import { createRoute, z } from '@hono/zod-openapi';
import { commandContext } from './command-context.js';
import { refusingDuplicates } from './duplicate-reference.js';
import { listResponse } from '../presenters/list-response.js';
import { guard } from '../middleware/guard.js';
import { presentEvent, presentEventRecorded } from '../presenters/presenters.js';
import { createRouter } from './router.js';
import { errorResponses, jsonBody, jsonResponse, pageRequest } from '../schemas/common.js';
import { EventCreateSchema, EventListQuerySchema, EventSchema } from '../schemas/program-schemas.js';

const tags = ['Events'];

export const eventRoutes = createRouter()
  .openapi(
    createRoute({
      method: 'post',
      path: '/events',
      operationId: 'recordEvent',
      tags,
      summary: 'Record an event; the event type’s rules decide its points',
      description:
        'points_awarded = floor((default_points + points of every applying rule) × the multiplier of the tier held before the event). ' +
        'An event worth 0 points is recorded too. 422 `unknown_event_type`; 422 `points_out_of_range` when the event would award more than 1,000,000,000 points, ' +
        'or take the balance or lifetime_earned past 2^53 − 1 (nothing is recorded); a reused reference: 409 `duplicate_transaction` with the original under `event`.',
      middleware: guard(['points:write']),
      request: { body: jsonBody(EventCreateSchema) },
      responses: { 201: jsonResponse(EventSchema, 'The recorded event.'), ...errorResponses(404, 409, 422) },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const recorded = await refusingDuplicates(c, body.reference, () =>
        c.get('commands').events.record(commandContext(c, { status: 201, present: presentEventRecorded }), {
          customerId: body.customer_id,
          eventType: body.event_type,
          properties: body.properties,
          reference: body.reference ?? null,
          availableAt: body.available_at,
          expiresAt: body.expires_at,
        }),
      );
      return c.json(presentEventRecorded(recorded), 201);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/events',
      operationId: 'listEvents',
      tags,
      summary: 'List recorded events',
      middleware: guard(['points:read']),
      request: { query: EventListQuerySchema },
      responses: { 200: jsonResponse(z.array(EventSchema), 'Events, oldest first.'), ...errorResponses() },
    }),
    async (c) => {
      const { limit, starting_after, created_after, created_before, ...filters } = c.req.valid('query');
      const page = await c.get('queries').catalog.events(
        c.get('principal').businessId,
        filters,
        pageRequest({ limit, starting_after, created_after, created_before }),
      );
      return listResponse(c, page, presentEvent, (row) => row.id);
    },
  );
