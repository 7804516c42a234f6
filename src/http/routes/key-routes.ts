import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { missingPermission, permissionsForNewKey } from '../../events/permissions.js';
import { errors } from '../../errors.js';
import { commandContext } from './command-context.js';
import { createRouter } from './router.js';
import type { AppEnv } from '../env.js';
import { listResponse } from '../presenters/list-response.js';
import { guard } from '../middleware/guard.js';
import { presentKey, presentKeyCreated } from '../presenters/presenters.js';
import { errorResponses, jsonBody, jsonResponse, PageQuerySchema } from '../schemas/common.js';
import { CreatedKeySchema, KeyCreateSchema, KeyIdParamSchema, KeySchema } from '../schemas/key-schemas.js';

const tags = ['API keys'];

/**
 * A key cannot create a key with a permission it does not hold (CONTRACT.md §2). Checked from the
 * body as sent, before Idempotency-Key handling, so a replay runs it for the key that sends it;
 * a body the schema will refuse is left to the schema.
 */
function mayGrant(c: Context<AppEnv>): void {
  const parsed = KeyCreateSchema.safeParse(c.get('body'));
  if (!parsed.success) return;
  const missing = missingPermission(c.get('principal').permissions, permissionsForNewKey(parsed.data.type, parsed.data.permissions));
  if (missing) throw errors.insufficientPermissions(missing);
}

/** A key revokes only keys whose permissions it holds itself (CONTRACT.md §2), replays included. */
async function mayRevoke(c: Context<AppEnv>): Promise<void> {
  const target = await c.get('queries').access.key(c.get('principal').businessId, c.req.param('key_id') ?? '');
  const missing = target && missingPermission(c.get('principal').permissions, target.permissions);
  if (missing) throw errors.insufficientPermissions(missing);
}

export const keyRoutes = createRouter()
  .openapi(
    createRoute({
      method: 'post',
      path: '/keys',
      operationId: 'createKey',
      tags,
      summary: 'Create an API key (the full key is shown once)',
      middleware: guard(['keys:write'], { authorize: mayGrant }),
      request: { body: jsonBody(KeyCreateSchema) },
      responses: { 201: jsonResponse(CreatedKeySchema, 'The key, in full this once.'), ...errorResponses() },
    }),
    async (c) => {
      const body = c.req.valid('json');
      const { commands, principal } = c.var;
      // A stored answer never holds the key (CONTRACT.md §5): a replay shows null.
      const { created, key } = await commands.apiKeys.create(
        commandContext(c, { status: 201, present: (event) => presentKeyCreated(event, null) }),
        { type: body.type, name: body.name ?? null, permissions: body.permissions ?? null },
        principal.permissions,
      );
      return c.json(presentKeyCreated(created, key), 201);
    },
  )
  .openapi(
    createRoute({
      method: 'get',
      path: '/keys',
      operationId: 'listKeys',
      tags,
      summary: 'List API keys (never the keys themselves)',
      middleware: guard(['keys:write']),
      request: { query: PageQuerySchema },
      responses: { 200: jsonResponse(z.array(KeySchema), 'Keys, oldest first, revoked ones included.'), ...errorResponses() },
    }),
    async (c) => {
      const { limit, starting_after } = c.req.valid('query');
      const page = await c.get('queries').access.keys(c.get('principal').businessId, { limit, startingAfter: starting_after });
      return listResponse(c, page, presentKey, (row) => row.id);
    },
  )
  .openapi(
    createRoute({
      method: 'delete',
      path: '/keys/{key_id}',
      operationId: 'revokeKey',
      tags,
      summary: 'Revoke an API key (effective on the next request)',
      description:
        'A key revokes only keys whose permissions it holds itself (403 `insufficient_permissions`). ' +
        "The business's last active private key with `keys:write` cannot be revoked over the API: 409 `last_private_key` " +
        '(`loyalty keys revoke --force` can). Revoking a revoked key answers 200 with the key as it stands.',
      middleware: guard(['keys:write'], { authorize: mayRevoke }),
      request: { params: KeyIdParamSchema },
      responses: { 200: jsonResponse(KeySchema, 'The key as it now stands, with revoked_at set.'), ...errorResponses(404, 409) },
    }),
    async (c) => {
      const { key_id } = c.req.valid('param');
      const { commands, queries, principal } = c.var;
      await commands.apiKeys.revoke(commandContext(c), key_id, { revoker: principal.permissions });
      const row = await queries.access.key(principal.businessId, key_id);
      if (!row) throw errors.keyNotFound(key_id);
      return c.json(presentKey(row), 200);
    },
  );
