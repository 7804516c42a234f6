import { createRoute, z } from '@hono/zod-openapi';
import { errors } from '../../errors.js';
import { guard } from '../middleware/guard.js';
import { commandContext } from './command-context.js';
import { createRouter } from './router.js';
import type { AppEnv } from '../env.js';
import { listResponse } from '../presenters/list-response.js';
import {
  presentCustomer,
  presentCustomerRegistered,
  presentLot,
  presentNextExpiring,
  presentStreamEvent,
  presentTransaction,
} from '../presenters/presenters.js';
import type { CustomerProfile } from '../../events/customer-events.js';
import { errorResponses, jsonBody, jsonResponse, PageQuerySchema, pageRequest, queryInteger, WindowedPageQuerySchema } from '../schemas/common.js';
import {
  CustomerCreateSchema,
  CustomerIdParamSchema,
  CustomerListQuerySchema,
  CustomerSchema,
  CustomerUpdateSchema,
} from '../schemas/customer-schemas.js';
import { LotListQuerySchema, LotSchema, PointsTransactionSchema, StreamEventSchema, SummarySchema } from '../schemas/points-schemas.js';
import type { Context } from 'hono';

const tags = ['Customers'];

async function customerOr404(c: Context<AppEnv>, customerId: string) {
  const row = await c.get('queries').customers.get(c.get('principal').businessId, customerId);
  if (!row) throw errors.customerNotFound(customerId);
  return row;
}

export const customerRoutes = createRouter()
  .openapi(
    createRoute({
      method: 'get',
      path: '/customers',
      operationId: 'listCustomers',
      tags,
      summary: 'List customers',
      middleware: guard(['customers:read']),
      request: { query: CustomerListQuerySchema },
      responses: { 200: jsonResponse(z.array(CustomerSchema), 'Customers, oldest first.'), ...errorResponses() },
    }),
    async (c) => {
      const { limit, starting_after, created_after, created_before, ...filters } = c.req.valid('query');
      if (c.get('principal').type === 'public' && !filters.email && !filters.phone && !filters.external_reference) {
        throw errors.publicKeyNotAllowed('A public key looks customers up by an exact email, phone or external_reference filter; listing them needs a private key.');
      }
      const page = await c.get('queries').customers.list(
        c.get('principal').businessId,
        filters,
        pageRequest({ limit, starting_after, created_after, created_before }),
      );
      return listResponse(c, page, presentCustomer, (row) => row.id);
    },
  )
  .openapi(
    createRoute({
      method: 'post',
      path: '/customers',
      operationId: 'createCustomer',
      tags,
      summary: 'Create a customer',
      middleware: guard(['customers:write']),
      request: { body: jsonBody(CustomerCreateSchema) },
      responses: { 201: jsonResponse(CustomerSchema, 'The new customer.'), ...errorResponses(409) },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const ctx = commandContext(c, { status: 201, present: presentCustomerRegistered });
      const profile: CustomerProfile = {
        email: body.email ?? null,
        phone: body.phone ?? null,
        first_name: body.first_name ?? null,
        last_name: body.last_name ?? null,
        external_reference: body.external_reference ?? null,
        metadata: body.metadata ?? {},
      };
      return c.json(presentCustomerRegistered(await c.get('commands').customers.register(ctx, profile)), 201);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/customers/{customer_id}',
      operationId: 'getCustomer',
      tags,
      summary: 'Get a customer',
      middleware: guard(['customers:read']),
      request: { params: CustomerIdParamSchema },
      responses: { 200: jsonResponse(CustomerSchema, 'The customer.'), ...errorResponses(404) },
    }),
    async (c) => c.json(presentCustomer(await customerOr404(c, c.req.valid('param').customer_id)), 200),
  )
  .openapi(
    createRoute({
      method: 'patch',
      path: '/customers/{customer_id}',
      operationId: 'updateCustomer',
      tags,
      summary: 'Update a customer',
      middleware: guard(['customers:write']),
      request: { params: CustomerIdParamSchema, body: jsonBody(CustomerUpdateSchema) },
      responses: { 200: jsonResponse(CustomerSchema, 'The customer as it now stands.'), ...errorResponses(404, 409) },
    }),
    async (c) => {
      const { customer_id } = c.req.valid('param');
      const ctx = commandContext(c);
      const changes = c.req.valid('json');
      const profile = await c.get('commands').customers.update(ctx, customer_id, changes);
      const row = await c.get('queries').customerAsWritten(c.get('principal').businessId, customer_id, profile ? { profile, at: ctx.now } : null);
      if (!row) throw errors.customerNotFound(customer_id);
      return c.json(presentCustomer(row), 200);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/customers/{customer_id}/summary',
      operationId: 'getCustomerSummary',
      tags,
      summary: "A customer's points, tier and recent activity",
      middleware: guard(['customers:read', 'points:read']),
      request: { params: CustomerIdParamSchema },
      responses: { 200: jsonResponse(SummarySchema, 'The summary.'), ...errorResponses(404) },
    }),
    async (c) => {
      const { customer_id } = c.req.valid('param');
      const customer = await c.get('queries').customers.summary(c.get('principal').businessId, customer_id, c.get('clock').now());
      if (!customer) throw errors.customerNotFound(customer_id);
      const current = presentCustomer(customer).tier;
      const next = customer.next_tier;
      // Rolling qualification: the next tier is reached by the points credited within the window.
      const qualifying = customer.qualifying_points ?? customer.lifetime_earned;
      return c.json(
        {
          customer: { id: customer.id, email: customer.email, first_name: customer.first_name, last_name: customer.last_name },
          points: {
            balance: customer.points_balance,
            lifetime_earned: customer.lifetime_earned,
            lifetime_redeemed: customer.lifetime_redeemed,
            pending: customer.points_pending,
            lifetime_expired: customer.lifetime_expired,
            next_expiring: presentNextExpiring(customer),
          },
          tier: {
            current,
            next: next
              ? {
                  id: next.id,
                  name: next.name,
                  points_threshold: next.points_threshold,
                  points_needed: Math.max(0, next.points_threshold - qualifying),
                }
              : null,
          },
          recent_activity: customer.recent_activity.map((a) => ({
            type: a.type,
            amount: a.amount,
            description: a.description,
            created_at: a.created_at.toISOString(),
          })),
        },
        200,
      );
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/customers/{customer_id}/transactions',
      operationId: 'listTransactions',
      tags,
      summary: "A customer's points ledger",
      middleware: guard(['points:read']),
      request: { params: CustomerIdParamSchema, query: WindowedPageQuerySchema },
      responses: {
        200: jsonResponse(z.array(PointsTransactionSchema), 'Every balance change, oldest first, with the balance after it.'),
        ...errorResponses(404),
      },
    }),
    async (c) => {
      const customer = await customerOr404(c, c.req.valid('param').customer_id);
      const page = await c.get('queries').customers.ledger(customer.business_id, customer.id, pageRequest(c.req.valid('query')));
      return listResponse(c, page, presentTransaction, (row) => row.id);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/customers/{customer_id}/lots',
      operationId: 'listLots',
      tags,
      summary: "A customer's point lots",
      middleware: guard(['points:read']),
      request: { params: CustomerIdParamSchema, query: LotListQuerySchema },
      responses: {
        200: jsonResponse(z.array(LotSchema), 'The lots with points left (every lot with `all=true`), oldest first.'),
        ...errorResponses(404),
      },
    }),
    async (c) => {
      const customer = await customerOr404(c, c.req.valid('param').customer_id);
      const { limit, starting_after, all } = c.req.valid('query');
      const page = await c.get('queries').customers.lots(customer.business_id, customer.id, { limit, startingAfter: starting_after }, all ?? false);
      return listResponse(c, page, presentLot, (row) => row.transaction_id);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/customers/{customer_id}/stream',
      operationId: 'getCustomerStream',
      tags,
      summary: "A customer's raw event stream (auditors; private key)",
      middleware: guard(['points:read'], { privateOnly: true }),
      request: {
        params: CustomerIdParamSchema,
        query: PageQuerySchema.extend({
          starting_after: queryInteger(0, Number.MAX_SAFE_INTEGER).optional().openapi({ type: 'integer', minimum: 0, description: 'Position of the last event seen.' }),
        }),
      },
      responses: { 200: jsonResponse(z.array(StreamEventSchema), 'Events in stream order.'), ...errorResponses(404) },
    }),
    async (c) => {
      const customer = await customerOr404(c, c.req.valid('param').customer_id);
      const { limit, starting_after } = c.req.valid('query');
      const page = await c.get('queries').customerEvents(customer.id, { limit, startingAfter: starting_after });
      return listResponse(c, page, presentStreamEvent, (e) => String(e.streamPosition));
    },
  );
