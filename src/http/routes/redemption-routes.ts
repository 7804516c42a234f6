import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { errors } from '../../errors.js';
import { commandContext } from './command-context.js';
import { refusingDuplicates } from './duplicate-reference.js';
import type { AppEnv } from '../env.js';
import { listResponse } from '../presenters/list-response.js';
import { guard } from '../middleware/guard.js';
import { presentRedemption, presentRewardRedeemed, recorded } from '../presenters/presenters.js';
import { createRouter } from './router.js';
import { errorResponses, jsonBody, jsonResponse, pageRequest, WindowedPageQuerySchema } from '../schemas/common.js';
import { CustomerIdParamSchema } from '../schemas/customer-schemas.js';
import { RedemptionCreateSchema, RedemptionParamsSchema, RedemptionSchema } from '../schemas/program-schemas.js';

const tags = ['Redemptions'];

async function redemptionOr404(c: Context<AppEnv>, customerId: string, redemptionId: string) {
  const row = await c.get('queries').catalog.redemption(c.get('principal').businessId, redemptionId);
  if (!row || row.customer_id !== customerId) throw errors.redemptionNotFound(redemptionId);
  return row;
}

export const redemptionRoutes = createRouter()
  .openapi(
    createRoute({
      method: 'post',
      path: '/customers/{customer_id}/redemptions',
      operationId: 'createRedemption',
      tags,
      summary: 'Redeem a reward',
      description:
        "Takes the reward's points_cost from the balance (lifetime_redeemed grows) and one unit of its stock, atomically. " +
        'Errors: 422 `insufficient_points`, 422 `reward_inactive`, 409 `out_of_stock`, 409 `achievement_already_granted`, 409 `duplicate_transaction`.',
      middleware: guard(['points:write']),
      request: { params: CustomerIdParamSchema, body: jsonBody(RedemptionCreateSchema) },
      responses: { 201: jsonResponse(RedemptionSchema, 'The redemption.'), ...errorResponses(404, 409, 422) },
    }),
    async (c) => {
      const { customer_id } = c.req.valid('param');
      const body = c.req.valid('json');
      const recorded = await refusingDuplicates(c, body.reference, () =>
        c.get('commands').redemptions.redeem(commandContext(c, { status: 201, present: presentRewardRedeemed }), {
          customerId: customer_id,
          rewardId: body.reward_id,
          reference: body.reference ?? null,
          metadata: body.metadata ?? {},
        }),
      );
      return c.json(presentRewardRedeemed(recorded), 201);
    },
  )
  .openapi(
    createRoute({
      method: 'post',
      path: '/customers/{customer_id}/redemptions/{redemption_id}/cancel',
      operationId: 'cancelRedemption',
      tags,
      summary: 'Cancel a redemption: the points and the stock unit go back',
      description:
        'Answers the redemption, now `cancelled`, with `balance` the customer’s balance right after the cancellation. ' +
        'Errors: 409 `redemption_already_cancelled`; 422 `points_out_of_range` when the points returned would take the balance past 2^53 − 1.',
      middleware: guard(['points:write']),
      request: { params: RedemptionParamsSchema },
      responses: { 200: jsonResponse(RedemptionSchema, 'The redemption, now cancelled.'), ...errorResponses(404, 409, 422) },
    }),
    async (c) => {
      const { customer_id, redemption_id } = c.req.valid('param');
      const cancelled = await c.get('commands').redemptions.cancel(commandContext(c), customer_id, redemption_id);
      const row = await redemptionOr404(c, customer_id, redemption_id);
      // CONTRACT.md §6: the answer's balance is the one right after the cancellation (the row keeps the redemption's).
      return c.json({ ...presentRedemption(row), balance: recorded(cancelled, 'RedemptionCancelled').data.balance }, 200);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/customers/{customer_id}/redemptions',
      operationId: 'listRedemptions',
      tags,
      summary: "A customer's redemptions",
      middleware: guard(['points:read']),
      request: { params: CustomerIdParamSchema, query: WindowedPageQuerySchema },
      responses: { 200: jsonResponse(z.array(RedemptionSchema), 'Redemptions, oldest first.'), ...errorResponses(404) },
    }),
    async (c) => {
      const { customer_id } = c.req.valid('param');
      const { queries, principal } = c.var;
      if (!(await queries.customers.get(principal.businessId, customer_id))) throw errors.customerNotFound(customer_id);
      const page = await queries.catalog.redemptions(principal.businessId, customer_id, pageRequest(c.req.valid('query')));
      return listResponse(c, page, presentRedemption, (row) => row.id);
    },
  );
