import type { Context } from 'hono';
import type { Page } from '../../projections/page.js';

/**
 * A list answer (CONTRACT.md §4): the items as a JSON array and, when more remain, an RFC 8288
 * `Link: <…?starting_after=ID>; rel="next"` header keeping the request's other query parameters.
 */
export function listResponse<Row, Item>(c: Context, page: Page<Row>, present: (row: Row) => Item, cursorOf: (row: Row) => string) {
  const last = page.items.at(-1);
  if (page.hasMore && last !== undefined) {
    const next = new URL(c.req.url);
    next.searchParams.set('starting_after', cursorOf(last));
    c.header('Link', `<${next.pathname}${next.search}>; rel="next"`);
  }
  return c.json(page.items.map(present), 200);
}
