import { createRoute } from '@hono/zod-openapi';
import { commandContext } from './command-context.js';
import { refusingDuplicates } from './duplicate-reference.js';
import { guard } from '../middleware/guard.js';
import { presentTransactionEvent } from '../presenters/presenters.js';
import { createRouter } from './router.js';
import { errorResponses, jsonBody, jsonResponse } from '../schemas/common.js';
import { CustomerIdParamSchema } from '../schemas/customer-schemas.js';
import { PointsTransactionCreateSchema, PointsTransactionSchema } from '../schemas/points-schemas.js';

export const pointsRoutes = createRouter().openapi(
  createRoute({
    method: 'post',
    path: '/customers/{customer_id}/points/transaction',
    operationId: 'createPointsTransaction',
    tags: ['Points'],
    summary: 'Earn, deduct or adjust points',
    description:
      'A reused `reference` answers 409 `duplicate_transaction` with the original under `transaction`; ' +
      'a retry with the same `Idempotency-Key` replays the first response. 422 `insufficient_points` for a debit beyond the balance; ' +
      '422 `points_out_of_range` for a credit that would take the balance or lifetime_earned past 2^53 − 1, or an earn whose tier multiplier would credit more than 1,000,000,000 points.',
    middleware: guard(['points:write']),
    request: { params: CustomerIdParamSchema, body: jsonBody(PointsTransactionCreateSchema) },
    responses: {
      201: jsonResponse(PointsTransactionSchema, 'The transaction, with the balance right after it.'),
      ...errorResponses(404, 409, 422),
    },
  }),
  async (c) => {
    const { customer_id } = c.req.valid('param');
    const body = c.req.valid('json');
    const { services } = c.var;
    const recorded = await refusingDuplicates(c, body.reference, () =>
      services.commands.customers.recordPoints(commandContext(c, { status: 201, present: presentTransactionEvent }), customer_id, {
        pointsType: body.type,
        amount: body.amount,
        applyMultiplier: body.apply_multiplier ?? false,
        description: body.description ?? null,
        reference: body.reference ?? null,
        metadata: body.metadata ?? {},
      }),
    );
    return c.json(presentTransactionEvent(recorded), 201);
  },
);
