import { z } from '@hono/zod-openapi';
import { ERROR_CODES, type ErrorCode } from '../../error-codes.js';
import { EventSchema, RedemptionSchema } from '../schemas/program-schemas.js';
import { PointsTransactionSchema } from '../schemas/points-schemas.js';

/** The fields some codes add to the error body (CONTRACT.md §3, §5), typed for clients. */
const EXTRAS: Partial<Record<ErrorCode, z.ZodRawShape>> = {
  validation_error: {
    details: z.array(z.object({ path: z.string(), message: z.string() })).openapi({
      description: 'Every problem found, as `{path, message}`.',
      example: [{ path: 'amount', message: 'must be greater than 0' }],
    }),
  },
  duplicate_transaction: {
    transaction: PointsTransactionSchema.optional().openapi({ description: 'The original, when the reference was used by a points transaction.' }),
    event: EventSchema.optional().openapi({ description: 'The original, when the reference was used by an event.' }),
    redemption: RedemptionSchema.optional().openapi({ description: 'The original, when the reference was used by a redemption.' }),
  },
  customer_exists: { customer_id: z.string().openapi({ description: 'The customer that holds the email or external_reference.', example: 'cust_4fTz9QbLr2XcVw7NkP1a' }) },
  insufficient_points: { balance: z.number().int().openapi({ description: 'The balance the debit met.', example: 120 }) },
};

const pascal = (code: string) => code.replace(/(^|_)([a-z])/g, (_m, _s, c: string) => c.toUpperCase());

const cache = new Map<ErrorCode, z.ZodObject>();

/** The body of one error code, as an OpenAPI component named after it (`InsufficientPointsError`). */
export function errorSchemaOf(code: ErrorCode): z.ZodObject {
  const known = cache.get(code);
  if (known) return known;
  const { when } = ERROR_CODES[code];
  const schema = z
    .object({
      code: z.literal(code),
      message: z.string().openapi({ description: 'For people; may change. Branch on `code`.', example: when }),
      request_id: z.string().openapi({ example: 'req_V1StGXR8Z5jdHi6BmyT' }),
      ...EXTRAS[code],
    })
    .openapi(`${pascal(code)}Error`, { description: `\`${code}\` (${ERROR_CODES[code].status}): ${when}` });
  cache.set(code, schema);
  return schema;
}

/** The body of a response that can carry any of `codes`: one schema, or a union told apart by `code`. */
export function errorBodyOf(codes: ErrorCode[]) {
  const [first, ...rest] = codes.map(errorSchemaOf);
  if (!first) throw new Error('an error response needs at least one code');
  return rest.length === 0 ? first : z.discriminatedUnion('code', [first, ...rest]);
}
