import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { errors } from '../../errors.js';
import { commandContext } from './command-context.js';
import type { AppEnv } from '../env.js';
import { listResponse } from '../presenters/list-response.js';
import { guard } from '../middleware/guard.js';
import { presentReward, presentRewardCreated } from '../presenters/presenters.js';
import { createRouter } from './router.js';
import { errorResponses, jsonBody, jsonResponse } from '../schemas/common.js';
import { RewardCreateSchema, RewardIdParamSchema, RewardListQuerySchema, RewardSchema, RewardUpdateSchema } from '../schemas/program-schemas.js';

const tags = ['Rewards'];

async function rewardOr404(c: Context<AppEnv>, rewardId: string) {
  const row = await c.get('queries').catalog.reward(c.get('principal').businessId, rewardId);
  if (!row) throw errors.rewardNotFound(rewardId);
  return row;
}

export const rewardRoutes = createRouter()
  .openapi(
    createRoute({
      method: 'post',
      path: '/rewards',
      operationId: 'createReward',
      tags,
      summary: 'Create a reward',
      middleware: guard(['rewards:write']),
      request: { body: jsonBody(RewardCreateSchema) },
      responses: { 201: jsonResponse(RewardSchema, 'The new reward (active).'), ...errorResponses() },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const created = await c.get('commands').rewards.create(commandContext(c, { status: 201, present: presentRewardCreated }), {
        title: body.title,
        points_cost: body.points_cost,
        reward_type: body.reward_type,
        description: body.description ?? null,
        stock_quantity: body.stock_quantity ?? null,
        metadata: body.metadata ?? {},
      });
      return c.json(presentRewardCreated(created), 201);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/rewards',
      operationId: 'listRewards',
      tags,
      summary: 'List rewards',
      middleware: guard(['rewards:read']),
      request: { query: RewardListQuerySchema },
      responses: { 200: jsonResponse(z.array(RewardSchema), 'Rewards, oldest first.'), ...errorResponses() },
    }),
    async (c) => {
      const { limit, starting_after, ...filters } = c.req.valid('query');
      const page = await c.get('queries').catalog.rewards(c.get('principal').businessId, filters, { limit, startingAfter: starting_after });
      return listResponse(c, page, presentReward, (row) => row.id);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/rewards/{reward_id}',
      operationId: 'getReward',
      tags,
      summary: 'Get a reward',
      middleware: guard(['rewards:read']),
      request: { params: RewardIdParamSchema },
      responses: { 200: jsonResponse(RewardSchema, 'The reward.'), ...errorResponses(404) },
    }),
    async (c) => c.json(presentReward(await rewardOr404(c, c.req.valid('param').reward_id)), 200),
  )
  .openapi(
    createRoute({
      method: 'patch',
      path: '/rewards/{reward_id}',
      operationId: 'updateReward',
      tags,
      summary: 'Update a reward (also `active`, and the stock left)',
      middleware: guard(['rewards:write']),
      request: { params: RewardIdParamSchema, body: jsonBody(RewardUpdateSchema) },
      responses: { 200: jsonResponse(RewardSchema, 'The reward as it now stands.'), ...errorResponses(404) },
    }),
    async (c) => {
      const { reward_id } = c.req.valid('param');
      await c.get('commands').rewards.update(commandContext(c), reward_id, c.req.valid('json'));
      return c.json(presentReward(await rewardOr404(c, reward_id)), 200);
    },
  );
