import { createRoute } from '@hono/zod-openapi';
import { errors } from '../../errors.js';
import { guard } from '../middleware/guard.js';
import { createRouter } from './router.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import { CustomerIdParamSchema } from '../schemas/customer-schemas.js';
import { CustomerAuditSchema } from '../schemas/dashboard-schemas.js';

export const customerAuditRoutes = createRouter().openapi(
  createRoute({
    method: 'get',
    path: '/customers/{customer_id}/audit',
    operationId: 'auditCustomer',
    tags: ['Customers'],
    summary: "A customer's hash-chain check and read-model diff (private key), as `loyalty audit verify --customer` does",
    middleware: guard(['points:read'], { privateOnly: true }),
    request: { params: CustomerIdParamSchema },
    responses: { 200: jsonResponse(CustomerAuditSchema, 'What the check found; a broken chain or a drift is a finding, answered 200.'), ...errorResponses(404) },
  }),
  async (c) => {
    const { customer_id } = c.req.valid('param');
    const { queries, principal } = c.var;
    const customer = await queries.customers.get(principal.businessId, customer_id);
    if (!customer) throw errors.customerNotFound(customer_id);
    const report = await queries.audit(customer.id);
    return c.json(
      {
        customer_id: customer.id,
        events: report.events,
        chain_intact: report.breaks.length === 0,
        breaks: report.breaks.map((b) => ({ position: b.position, problem: b.problem })),
        read_model_matches: report.drifts.length === 0,
        drifts: report.drifts.map((d) => ({ field: d.field, log: d.log ?? null, read_model: d.readModel ?? null })),
      },
      200,
    );
  },
);
