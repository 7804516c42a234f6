import type { Client } from 'openapi-fetch';
import { LoyaltyApiError } from './errors.js';
import type { paths } from './generated/api.js';

type QueryOf<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } } ? NonNullable<Q> : never;
type ParamsOf<P extends keyof paths> = paths[P] extends { get: { parameters: infer Params } } ? Params : never;

/** The paths whose GET is a list (it takes `starting_after`). */
export type ListPath = {
  [P in keyof paths]: [QueryOf<P>] extends [never] ? never : 'starting_after' extends keyof QueryOf<P> ? P : never;
}[keyof paths];
/** One item of the list at `P`. */
export type ItemOf<P extends ListPath> = paths[P] extends {
  get: { responses: { 200: { content: { 'application/json': Array<infer Item> } } } };
}
  ? Item
  : never;

/** The query of the `rel="next"` link in a Link header, or null on the last page. */
function nextPageQuery(link: string | null): Record<string, string> | null {
  const next = link?.split(',').find((part) => /;\s*rel="?next"?/.test(part));
  const target = next?.match(/<([^>]+)>/)?.[1];
  return target ? Object.fromEntries(new URL(target, 'http://link.invalid').searchParams) : null;
}

/**
 * Every item of a list, page after page, following each answer's `Link: <…>; rel="next"`
 * until there is none. Throws `LoyaltyApiError` on an error answer.
 *
 * ```ts
 * for await (const txn of listAll(api, '/api/v1/customers/{customer_id}/transactions', { path: { customer_id } })) …
 * ```
 */
export async function* listAll<P extends ListPath>(api: Client<paths>, path: P, params: ParamsOf<P>): AsyncGenerator<ItemOf<P>> {
  // openapi-fetch types GET per literal path; over the union of list paths it needs this one widening.
  const get = api.GET as unknown as (path: string, init: { params: object }) => Promise<{ data?: ItemOf<P>[]; error?: never; response: Response }>;
  let query: object | undefined = (params as { query?: object }).query;
  for (;;) {
    const { data, error, response } = await get(path, { params: { ...(params as object), query } });
    if (error !== undefined || data === undefined) throw new LoyaltyApiError(response.status, error ?? (await response.json()), response);
    yield* data;
    const next = nextPageQuery(response.headers.get('link'));
    if (next === null) return;
    query = next;
  }
}
