import { createRoute } from '@hono/zod-openapi';
import { guard } from '../middleware/guard.js';
import { presentKey } from '../presenters/presenters.js';
import { createRouter } from './router.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import { MeSchema } from '../schemas/dashboard-schemas.js';

export const meRoutes = createRouter().openapi(
  createRoute({
    method: 'get',
    path: '/me',
    operationId: 'getMe',
    tags: ['API keys'],
    summary: 'The key this request is signed with: its type, permissions and business (any key)',
    middleware: guard([]),
    responses: { 200: jsonResponse(MeSchema, 'The signed-in key (never the key itself) and its business.'), ...errorResponses() },
  }),
  async (c) => {
    const { queries, principal } = c.var;
    const [key, business] = await Promise.all([
      queries.access.key(principal.businessId, principal.keyId),
      queries.access.business(principal.businessId),
    ]);
    // The key authenticated this request, so both rows exist; a revocation racing it is a 401 like any other.
    if (!key || !business) throw new Error(`key ${principal.keyId} authenticated but is not in the read model`);
    const { revoked_at: _revoked, ...shown } = presentKey(key);
    return c.json(
      { ...shown, business: { id: business.id, name: business.name, plan: business.plan, created_at: business.created_at.toISOString() } },
      200,
    );
  },
);
