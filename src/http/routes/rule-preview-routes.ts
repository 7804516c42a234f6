import { createRoute } from '@hono/zod-openapi';
import { conditionHolds, eventPoints, rulePoints } from '../../commands/index.js';
import { errors } from '../../errors.js';
import type { Rule } from '../../events/program-events.js';
import { guard } from '../middleware/guard.js';
import { createRouter } from './router.js';
import { errorResponses, jsonBody, jsonResponse } from '../schemas/common.js';
import { RulePreviewResultSchema, RulePreviewSchema } from '../schemas/dashboard-schemas.js';
import { EventTypeNameParamSchema } from '../schemas/program-schemas.js';

export const rulePreviewRoutes = createRouter().openapi(
  createRoute({
    method: 'post',
    path: '/event-types/{name}/preview',
    operationId: 'previewEventType',
    tags: ['Event types'],
    summary: "What an event of this type would award, rule by rule (records nothing)",
    description:
      'The points each rule gives for these properties and the total, for a customer with no tier (multiplier 1). ' +
      'Nothing is recorded, so public keys may call it and no Idempotency-Key is needed. ' +
      'A total over 1,000,000,000 answers 422 `points_out_of_range`, as recording the event would.',
    middleware: guard(['rewards:read'], { recordsNothing: true }),
    request: { params: EventTypeNameParamSchema, body: jsonBody(RulePreviewSchema) },
    responses: { 200: jsonResponse(RulePreviewResultSchema, 'The points, rule by rule.'), ...errorResponses(404, 422) },
  }),
  async (c) => {
    const { name } = c.req.valid('param');
    const { properties } = c.req.valid('json');
    const row = await c.get('queries').catalog.eventType(c.get('principal').businessId, name);
    if (!row) throw errors.eventTypeNotFound(name);
    const rules = row.rules as Rule[];
    const { awarded } = eventPoints({ default_points: row.default_points, rules }, properties, 1);
    return c.json(
      {
        event_type: row.name,
        default_points: row.default_points,
        rules: rules.map((rule, index) => ({
          index,
          description: rule.description ?? null,
          applies: (rule.conditions ?? []).every((condition) => conditionHolds(condition, properties)),
          points: rulePoints(rule, properties),
        })),
        points: awarded,
      },
      200,
    );
  },
);
