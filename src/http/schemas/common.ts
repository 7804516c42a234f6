import { z } from '@hono/zod-openapi';
import { MAX_BODY_SIZE_TEXT } from '../middleware/body-size.js';

const MAX_METADATA_BYTES = 8 * 1024;

/** Free-form caller data: any JSON object of at most 8 KiB serialized. */
export const MetadataSchema = z
  .record(z.string(), z.unknown())
  .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= MAX_METADATA_BYTES, {
    message: `must be at most ${MAX_METADATA_BYTES} bytes when serialized`,
  })
  .openapi({ description: 'Free-form key/value data, at most 8 KiB serialized.', example: { source: 'pos' } });

export const TimestampSchema = z.string().openapi({ example: '2026-11-22T14:03:07.123Z', format: 'date-time' });

/** An instant a request sets (ISO 8601 with `Z` or an offset); that it lies in the future is checked when the command decides. */
export const InstantInputSchema = z.string().datetime({ offset: true, message: 'must be an ISO 8601 date-time, e.g. 2027-01-31T00:00:00.000Z' });

/** `available_at` and `expires_at` of a credit (CONTRACT.md §13), as earn, adjust and events take them. */
export const LotTimesInputSchema = {
  available_at: InstantInputSchema.optional().openapi({
    description: 'When the points become spendable (in the future); until then they are pending. Default: now + the program\'s pending_days.',
    example: '2026-12-01T00:00:00.000Z',
  }),
  expires_at: InstantInputSchema.nullable()
    .optional()
    .openapi({
      description:
        'When the points expire (in the future, after available_at); null: never. Default: the program\'s points_expiry_days after the points become available.',
      example: '2027-12-01T00:00:00.000Z',
    }),
};

/** A credit's lot times in an answer (null when none). */
export const LotTimesSchema = {
  available_at: TimestampSchema.nullable().openapi({ description: 'When the points became or become spendable; null: at once (and for debits).' }),
  expires_at: TimestampSchema.nullable().openapi({ description: 'When the points expire; null: never (and for debits).' }),
};

/** A whole number written in decimal digits in a query string (`0x10`, `1e2`, `+5` and ` 7` are refused). */
export const queryInteger = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,15}$/, 'must be a whole number in decimal digits')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** `?limit=&starting_after=` of every list endpoint (CONTRACT.md §4). */
export const PageQuerySchema = z.strictObject({
  limit: queryInteger(1, 200).default(50).openapi({ type: 'integer', minimum: 1, maximum: 200, description: 'Page size (1–200, default 50).' }),
  starting_after: z.string().min(1).optional().openapi({ description: 'Id of the last item of the previous page.' }),
});

const windowBound = (description: string) =>
  z.iso
    .datetime({ offset: true })
    .transform((value) => new Date(value))
    .optional()
    .openapi({ type: 'string', format: 'date-time', description, example: '2026-11-01T00:00:00.000Z' });

/**
 * `?created_after=&created_before=` of the lists analysts and integrators read by date (customers,
 * transactions, events, redemptions): RFC 3339 times (`Z` or an offset), both exclusive. Add them
 * with `.extend(CREATED_WINDOW)` and check the pair with `.superRefine(orderedWindow)`.
 */
export const CREATED_WINDOW = {
  created_after: windowBound('Only items created after this instant (exclusive), e.g. `2026-11-01T00:00:00Z`.'),
  created_before: windowBound('Only items created before this instant (exclusive); must be later than `created_after`.'),
};

/** A window whose end is not after its start would be empty: refused, so a swapped pair is noticed. */
export function orderedWindow(query: { created_after?: Date | undefined; created_before?: Date | undefined }, ctx: z.RefinementCtx): void {
  if (query.created_after && query.created_before && query.created_before <= query.created_after) {
    ctx.addIssue({ code: 'custom', path: ['created_before'], message: 'must be later than created_after' });
  }
}

/** `PageQuerySchema` with the creation window (transactions, redemptions). */
export const WindowedPageQuerySchema = PageQuerySchema.extend(CREATED_WINDOW).superRefine(orderedWindow);

/** The page of a list with a creation window, as the read-model queries take it. */
export const pageRequest = (query: { limit: number; starting_after?: string | undefined; created_after?: Date | undefined; created_before?: Date | undefined }) => ({
  limit: query.limit,
  startingAfter: query.starting_after,
  createdAfter: query.created_after,
  createdBefore: query.created_before,
});

export const ErrorSchema = z
  .object({
    code: z.string().openapi({ example: 'validation_error' }),
    message: z.string(),
    request_id: z.string().openapi({ example: 'req_V1StGXR8Z5jdHi6BmyT' }),
    details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .passthrough()
  .openapi('Error');

/**
 * The error statuses a route can answer. The document's error responses are built by
 * `withContract` (src/http/openapi/route-contract.ts) from the route's codes in OPERATIONS; these
 * statuses only matter for a route missing there (it then gets every code of them).
 */
export function errorResponses(...statuses: Array<400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 503>) {
  const descriptions: Record<number, string> = {
    400: 'Invalid JSON or a field missing, mistyped, out of range or unknown.',
    401: 'Missing, invalid or ambiguous API key.',
    403: 'The key lacks a permission, is public on a write, or a plan limit was reached.',
    404: 'Unknown id (including another business’s).',
    409: 'Conflict (see the error code).',
    413: `Body over ${MAX_BODY_SIZE_TEXT}.`,
    415: 'Body sent without Content-Type: application/json.',
    422: 'The request is valid but cannot be carried out (see the error code).',
    503: 'A store is unreachable; nothing was written.',
  };
  return Object.fromEntries(
    [...new Set([400, 401, 403, 503, ...statuses])].map((s) => [
      s,
      { description: descriptions[s]!, content: { 'application/json': { schema: ErrorSchema } } },
    ]),
  );
}

export const jsonBody = <T extends z.ZodType>(schema: T, description?: string) => ({
  required: true,
  ...(description ? { description } : {}),
  content: { 'application/json': { schema } },
});

export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { 'application/json': { schema } },
});
