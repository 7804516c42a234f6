import { createRoute } from '@hono/zod-openapi';
import { errors } from '../../errors.js';
import { guard } from '../middleware/guard.js';
import { createRouter } from './router.js';
import { errorResponses, jsonResponse } from '../schemas/common.js';
import { MAX_STATS_DAYS, StatsQuerySchema, StatsSchema } from '../schemas/dashboard-schemas.js';

const DAY_MS = 86_400_000;
const dayOf = (date: Date) => date.toISOString().slice(0, 10);
const shift = (day: string, days: number) => dayOf(new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS));

/** `from`/`to` with their defaults (the 30 days up to today, UTC); 400 when reversed or longer than 366 days. */
export function statsRange(query: { from?: string | undefined; to?: string | undefined }, now: Date): { from: string; to: string } {
  const to = query.to ?? (query.from ? shift(query.from, 29) : dayOf(now));
  const from = query.from ?? shift(to, -29);
  const days = (Date.parse(to) - Date.parse(from)) / DAY_MS + 1;
  if (days < 1) throw errors.validation([{ path: 'query.from', message: 'must not be after to' }]);
  if (days > MAX_STATS_DAYS) throw errors.validation([{ path: 'query.to', message: `the range may span at most ${MAX_STATS_DAYS} days` }]);
  return { from, to };
}

export const statsRoutes = createRouter().openapi(
  createRoute({
    method: 'get',
    path: '/stats',
    operationId: 'getStats',
    tags: ['Customers'],
    summary: 'Points issued, redeemed and expired per day, points outstanding and customers per tier (private key)',
    description:
      'Days are UTC and inclusive; by default the last 30 days up to today, at most 366. Computed from the read models: ' +
      'the days from one row per day with movement, what stands now from the customers.',
    middleware: guard(['points:read'], { privateOnly: true }),
    request: { query: StatsQuerySchema },
    responses: { 200: jsonResponse(StatsSchema, 'The figures.'), ...errorResponses() },
  }),
  async (c) => {
    const { from, to } = statsRange(c.req.valid('query'), c.get('clock').now());
    const { stats } = c.get('queries');
    const businessId = c.get('principal').businessId;
    const [days, standing, tiers] = await Promise.all([stats.days(businessId, from, to), stats.standing(businessId), stats.tiers(businessId)]);
    return c.json({ from, to, days, ...standing, tiers }, 200);
  },
);
