import { createRoute } from '@hono/zod-openapi';
import type { ProgramSettingsView } from '../../commands/index.js';
import { commandContext } from './command-context.js';
import { guard } from '../middleware/guard.js';
import { createRouter } from './router.js';
import { errorResponses, jsonBody, jsonResponse } from '../schemas/common.js';
import { ProgramSettingsSchema, ProgramSettingsUpdateSchema } from '../schemas/program-schemas.js';

const tags = ['Program'];

const present = (view: ProgramSettingsView) => ({ ...view.settings, updated_at: view.updatedAt });

/** The business's points lifecycle policy (CONTRACT.md §13). */
export const programRoutes = createRouter()
  .openapi(
    createRoute({
      method: 'get',
      path: '/program',
      operationId: 'getProgramSettings',
      tags,
      summary: 'The points lifecycle policy',
      middleware: guard(['rewards:read']),
      responses: { 200: jsonResponse(ProgramSettingsSchema, 'The policy as it stands.'), ...errorResponses() },
    }),
    async (c) => c.json(present(await c.get('commands').program.settings(c.get('principal').businessId)), 200),
  )
  .openapi(
    createRoute({
      method: 'patch',
      path: '/program',
      operationId: 'updateProgramSettings',
      tags,
      summary: 'Change the points lifecycle policy',
      middleware: guard(['rewards:write']),
      request: { body: jsonBody(ProgramSettingsUpdateSchema) },
      responses: { 200: jsonResponse(ProgramSettingsSchema, 'The policy as it now stands.'), ...errorResponses() },
    }),
    async (c) => c.json(present(await c.get('commands').program.changeSettings(commandContext(c), c.req.valid('json'))), 200),
  );
