import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { errors } from '../../errors.js';
import { commandContext } from './command-context.js';
import type { AppEnv } from '../env.js';
import { listResponse } from '../presenters/list-response.js';
import { guard } from '../middleware/guard.js';
import { presentTier, presentTierCreated } from '../presenters/presenters.js';
import { createRouter } from './router.js';
import { errorResponses, jsonBody, jsonResponse, PageQuerySchema } from '../schemas/common.js';
import { TierCreateSchema, TierIdParamSchema, TierSchema, TierUpdateSchema } from '../schemas/program-schemas.js';

const tags = ['Tiers'];

async function tierOr404(c: Context<AppEnv>, tierId: string) {
  const row = await c.get('queries').catalog.tier(c.get('principal').businessId, tierId);
  if (!row) throw errors.tierNotFound(tierId);
  return row;
}

export const tierRoutes = createRouter()
  .openapi(
    createRoute({
      method: 'post',
      path: '/tiers',
      operationId: 'createTier',
      tags,
      summary: 'Create a tier',
      description: 'Names and thresholds are unique per business (409 `conflict`).',
      middleware: guard(['rewards:write']),
      request: { body: jsonBody(TierCreateSchema) },
      responses: { 201: jsonResponse(TierSchema, 'The new tier.'), ...errorResponses(409) },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const created = await c.get('commands').program.createTier(commandContext(c, { status: 201, present: presentTierCreated }), {
        name: body.name,
        points_threshold: body.points_threshold,
        multiplier: body.multiplier,
        benefits: body.benefits ?? [],
        metadata: body.metadata ?? {},
      });
      return c.json(presentTierCreated(created), 201);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/tiers',
      operationId: 'listTiers',
      tags,
      summary: 'List tiers, lowest threshold first',
      middleware: guard(['rewards:read']),
      request: { query: PageQuerySchema },
      responses: { 200: jsonResponse(z.array(TierSchema), 'Tiers by threshold.'), ...errorResponses() },
    }),
    async (c) => {
      const { limit, starting_after } = c.req.valid('query');
      // A business has a handful of tiers: they are paged in memory, in threshold order.
      const all = await c.get('queries').catalog.tiers(c.get('principal').businessId);
      let start = 0;
      if (starting_after !== undefined) {
        start = all.findIndex((t) => t.id === starting_after) + 1;
        if (start === 0) throw errors.validation([{ path: 'starting_after', message: `no item with id '${starting_after}' in this list` }]);
      }
      const items = all.slice(start, start + limit);
      return listResponse(c, { items, hasMore: start + limit < all.length }, presentTier, (t) => t.id);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/tiers/{tier_id}',
      operationId: 'getTier',
      tags,
      summary: 'Get a tier',
      middleware: guard(['rewards:read']),
      request: { params: TierIdParamSchema },
      responses: { 200: jsonResponse(TierSchema, 'The tier.'), ...errorResponses(404) },
    }),
    async (c) => c.json(presentTier(await tierOr404(c, c.req.valid('param').tier_id)), 200),
  )
  .openapi(
    createRoute({
      method: 'patch',
      path: '/tiers/{tier_id}',
      operationId: 'updateTier',
      tags,
      summary: 'Update a tier',
      description: 'Customers keep the tier they hold; a changed threshold applies from their next earn.',
      middleware: guard(['rewards:write']),
      request: { params: TierIdParamSchema, body: jsonBody(TierUpdateSchema) },
      responses: { 200: jsonResponse(TierSchema, 'The tier as it now stands.'), ...errorResponses(404, 409) },
    }),
    async (c) => {
      const { tier_id } = c.req.valid('param');
      await tierOr404(c, tier_id);
      await c.get('commands').program.updateTier(commandContext(c), tier_id, c.req.valid('json'));
      return c.json(presentTier(await tierOr404(c, tier_id)), 200);
    },
  );
