import { OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { errors } from '../../errors.js';
import type { AppEnv } from '../env.js';
import { validationError } from '../errors/error-response.js';
import { declaredCodesCheck, routeErrorCodes, withContract } from '../openapi/route-contract.js';

const TARGET_PREFIX: Record<string, string[]> = { query: ['query'], param: ['path'], header: ['header'] };

/**
 * A router whose failed validations become our 400 `validation_error` (every route file uses one).
 * A trailing slash names the same resource (`strict: false`). Each route also refuses what its
 * definition does not declare: any query parameter on a route without a query schema, and any
 * body other than none or `{}` on a route without a body schema (CONTRACT.md §3). Its OpenAPI
 * entry gets the contract every route shares (error codes, headers, Idempotency-Key: see
 * `withContract`).
 */
export function createRouter() {
  const router = new OpenAPIHono<AppEnv>({
    strict: false,
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.error, TARGET_PREFIX[result.target] ?? []);
    },
  });
  const register = router.openapi;
  router.openapi = ((route: RouteConfig, ...rest: unknown[]) => {
    const documented = withContract(route);
    const middleware = [declaredCodesCheck(route, routeErrorCodes(route)), ...asArray(route.middleware), refuseUndeclared(route)];
    return (register as (...args: unknown[]) => unknown)({ ...documented, middleware }, ...rest);
  }) as typeof register;
  return router;
}

const asArray = (middleware: RouteConfig['middleware']): MiddlewareHandler[] =>
  middleware === undefined ? [] : Array.isArray(middleware) ? (middleware as MiddlewareHandler[]) : [middleware as MiddlewareHandler];

function refuseUndeclared(route: RouteConfig): MiddlewareHandler<AppEnv> {
  const takesQuery = route.request?.query !== undefined;
  const takesBody = route.request?.body !== undefined;
  return async (c, next) => {
    if (!takesQuery && c.req.url.includes('?')) {
      const names = [...new URL(c.req.url).searchParams.keys()];
      if (names.length > 0) throw errors.validation(names.map((name) => ({ path: `query.${name}`, message: 'unknown query parameter' })));
    }
    if (!takesBody) {
      const body = c.get('body');
      const empty = body === undefined || (body !== null && typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0);
      if (!empty) throw errors.validation([{ path: '(body)', message: 'this route takes no body (send none, or {})' }]);
    }
    await next();
  };
}
