import { z } from 'zod';

export const KeyTypeSchema = z.enum(['private', 'public']);

export const ApiKeyEvents = {
  ApiKeyCreated: z.object({
    key_id: z.string(),
    business_id: z.string(),
    type: KeyTypeSchema,
    name: z.string().nullable(),
    permissions: z.array(z.string()),
    /** SHA-256 of the key; the key itself is never stored. */
    key_hash: z.string(),
    key_hint: z.string(),
  }),
  ApiKeyRevoked: z.object({ key_id: z.string() }),
};
