import { createRoute } from '@hono/zod-openapi';
import { commandContext } from './command-context.js';
import { refusingDuplicates } from './duplicate-reference.js';
import { guard } from '../middleware/guard.js';
import { presentReversalEvent, presentTransactionEvent } from '../presenters/presenters.js';
import { createRouter } from './router.js';
import { errorResponses, jsonBody, jsonResponse } from '../schemas/common.js';
import { CustomerIdParamSchema } from '../schemas/customer-schemas.js';
import { PointsTransactionCreateSchema, PointsTransactionSchema, ReversalCreateSchema, TransactionParamsSchema } from '../schemas/points-schemas.js';

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
    const recorded = await refusingDuplicates(c, body.reference, () =>
      c.get('commands').customers.recordPoints(commandContext(c, { status: 201, present: presentTransactionEvent }), customer_id, {
        pointsType: body.type,
        amount: body.amount,
        applyMultiplier: body.apply_multiplier ?? false,
        description: body.description ?? null,
        reference: body.reference ?? null,
        metadata: body.metadata ?? {},
        availableAt: body.available_at,
        expiresAt: body.expires_at,
      }),
    );
    return c.json(presentTransactionEvent(recorded), 201);
  },
).openapi(
  createRoute({
    method: 'post',
    path: '/customers/{customer_id}/transactions/{transaction_id}/reverse',
    operationId: 'reverseTransaction',
    tags: ['Points'],
    summary: 'Reverse all or part of a credit (a refund)',
    middleware: guard(['points:write']),
    request: { params: TransactionParamsSchema, body: jsonBody(ReversalCreateSchema) },
    responses: {
      201: jsonResponse(PointsTransactionSchema, 'The reversal (type `reversal`), with the balance right after it.'),
      ...errorResponses(404, 409, 422),
    },
  }),
  async (c) => {
    const { customer_id, transaction_id } = c.req.valid('param');
    const body = c.req.valid('json');
    const recorded = await refusingDuplicates(c, body.reference, () =>
      c.get('commands').lifecycle.reverse(commandContext(c, { status: 201, present: presentReversalEvent }), customer_id, {
        reversedId: transaction_id,
        amount: body.amount,
        reference: body.reference ?? null,
        description: body.description ?? null,
      }),
    );
    return c.json(presentReversalEvent(recorded), 201);
  },
);
