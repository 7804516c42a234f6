import { z } from '@hono/zod-openapi';
import { PERMISSIONS } from '../../events/permissions.js';
import { TimestampSchema } from './common.js';

export const KeyCreateSchema = z
  .strictObject({
    type: z.enum(['private', 'public']),
    name: z.string().trim().min(1).max(100).optional(),
    permissions: z
      .array(z.enum(PERMISSIONS))
      .min(1)
      .optional()
      .openapi({ description: 'Private keys only; all permissions when omitted. A key cannot grant what it lacks.' }),
  })
  .openapi('ApiKeyCreate');

export const KeySchema = z
  .object({
    id: z.string().openapi({ example: 'key_Q2w3E4r5T6y7U8i9O0pA' }),
    type: z.enum(['private', 'public']),
    name: z.string().nullable(),
    permissions: z.array(z.string()),
    key_hint: z.string().openapi({ example: 'sk_live_…x9Qa' }),
    created_at: TimestampSchema,
    revoked_at: TimestampSchema.nullable(),
  })
  .openapi('ApiKey');

export const CreatedKeySchema = KeySchema.extend({
  key: z.string().nullable().openapi({
    description: 'The full key. Shown only in this response; null when the answer is an Idempotency-Key replay (secrets are never stored).',
  }),
}).openapi('CreatedApiKey');

export const KeyIdParamSchema = z.object({
  key_id: z.string().openapi({ param: { name: 'key_id', in: 'path' } }),
});
