import type { Context } from 'hono';
import { ApiError } from '../../errors.js';

/**
 * 404 `not_found` for unknown paths, 405 `method_not_allowed` (with `Allow`) for known paths
 * asked with another method. `routes` is the app's route table.
 */
export function notFoundHandler(routes: () => Array<{ method: string; path: string }>) {
  let table: Array<{ pattern: RegExp; method: string }> | null = null;
  return (c: Context): never => {
    table ??= routes()
      .filter((r) => r.method !== 'ALL' && !r.path.includes('*'))
      .map((r) => ({ method: r.method, pattern: new RegExp(`^${r.path.replace(/:[^/]+/g, '[^/]+')}/?$`) }));
    const path = new URL(c.req.url).pathname;
    const allowed = [...new Set(table.filter((r) => r.pattern.test(path)).map((r) => r.method))];
    if (allowed.length > 0) {
      throw new ApiError(405, 'method_not_allowed', `${c.req.method} is not allowed here; use ${allowed.join(', ')}.`, {}, {
        Allow: allowed.join(', '),
      });
    }
    throw new ApiError(404, 'not_found', `No route for ${c.req.method} ${path}.`);
  };
}
