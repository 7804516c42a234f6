import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { type SeededBusiness, seedBusiness, servedApiRoutes } from '../support/seeded-business.js';

/** Bookkeeping a refused request may legitimately touch: a stored 4xx replay, checkpoint times. */
const NOT_STATE = new Set(['idempotency_keys', 'rate_limit_buckets', 'projection_checkpoints', 'kysely_migration', 'kysely_migration_lock']);

const FIELDS = [
  'email', 'phone', 'first_name', 'last_name', 'external_reference', 'type', 'amount', 'reference', 'reward_id', 'customer_id',
  'event_type', 'properties', 'metadata', 'name', 'display_name', 'default_points', 'rules', 'points_threshold', 'multiplier',
  'benefits', 'title', 'points_cost', 'reward_type', 'stock_quantity', 'active', 'url', 'events', 'description', 'permissions',
  'apply_multiplier', 'unit_property', 'conditions',
];
/** Generated requests per route: enough to reach past validation, few enough to stay near 10 s. */
const RUNS_PER_ROUTE = 10;

/** Stand-ins for the seeded ids (known only once beforeAll ran), swapped in when a request is sent. */
const ID_PLACEHOLDERS = Array.from({ length: 14 }, (_, i) => `@id${i}`);
const QUERY_NAMES = ['limit', 'starting_after', 'email', 'phone', 'external_reference', 'tier', 'customer_id', 'event_type', 'active', 'reward_type'];

describe('fuzzing every endpoint', () => {
  let t: TestApp;
  let biz: SeededBusiness;
  let other: SeededBusiness;
  let routes: string[];
  let digestQuery: string;

  beforeAll(async () => {
    t = await startTestApp({ config: { webhookAllowPrivate: true }, runDispatcher: false });
    biz = await seedBusiness(t, 'fz');
    other = await seedBusiness(t, 'other');
    routes = servedApiRoutes(t);
    const tables = await sql<{ name: string }>`
      select table_name as name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' order by 1`.execute(t.services.db);
    digestQuery = `select ${tables.rows
      .filter((r) => !NOT_STATE.has(r.name))
      .map((r) => `(select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) from "${r.name}" x) as "${r.name}"`)
      .join(', ')}, (select count(*) from events) as event_count`;
  });
  afterAll(() => t.close());

  /** The event log's row count and a digest of every read-model table. */
  const stateDigest = async () => (await sql.raw<Record<string, string | number>>(digestQuery).execute(t.services.db)).rows[0]!;

  const ids = () => [...Object.values(biz.ids), ...Object.values(other.ids)];
  const scalar = fc.oneof(
    fc.integer(),
    fc.double(),
    fc.constantFrom(0, -1, 1e9, 1e9 + 1, Number.MAX_SAFE_INTEGER, 2 ** 63),
    fc.string(),
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.constantFrom('', ' ', '\u0000', 'earn', 'deduct', 'adjust', 'digital', 'physical', 'achievement', 'public', 'private', '*', 'http://127.0.0.1:9/x', 'a@b.co'),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom(...ID_PLACEHOLDERS),
  );
  const value = fc.oneof({ maxDepth: 2 }, scalar, fc.array(scalar, { maxLength: 4 }), fc.dictionary(fc.constantFrom(...FIELDS), scalar, { maxKeys: 3 }));
  const body = fc.oneof(
    fc.dictionary(fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...FIELDS) }, fc.string({ maxLength: 8 })), value, { maxKeys: 6 }),
    fc.jsonValue({ maxDepth: 3 }),
  );
  const rawBody = fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('{', '{"a":', 'null', '[]', '"x"', '{"email":"\\u0000"}', '{}{}'));
  const headerText = fc.string({ unit: fc.constantFrom(...'abcXYZ019 -_:;=/\t!~'.split('')), maxLength: 300 });
  const headers = fc.record(
    {
      'content-type': fc.oneof(
        { weight: 5, arbitrary: fc.constant('application/json') },
        fc.constantFrom('text/plain', 'application/json; charset=utf-8', 'multipart/form-data', '', 'application/x-www-form-urlencoded'),
      ),
      'idempotency-key': headerText,
      accept: fc.constantFrom('text/html', '*/*', 'application/xml'),
      'x-request-id': headerText,
    },
    { requiredKeys: [] },
  );
  const query = fc.oneof(
    fc.dictionary(fc.oneof(fc.constantFrom(...QUERY_NAMES), fc.string({ maxLength: 6 })), fc.oneof(fc.string({ maxLength: 12 }), fc.integer().map(String), scalar.map(String)), { maxKeys: 3 }).map(
      (q) => new URLSearchParams(q).toString(),
    ),
    fc.constantFrom('limit=0', 'limit=201', 'limit=-1', 'limit=1e2', 'limit=abc', 'starting_after=', '%zz', 'limit=1&limit=2', 'active=maybe'),
  );
  const pathId = fc.oneof(
    fc.constantFrom(...ID_PLACEHOLDERS),
    fc.string({ maxLength: 40 }),
    fc.constantFrom('..', '%2e%2e', 'cust_', 'x'.repeat(2000), '%00', "'; drop table events; --"),
  );
  const request = fc.record({ body: fc.option(body, { freq: 8 }), rawBody: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, rawBody), headers, query: fc.option(query), pathId });

  const realId = (v: unknown): unknown => {
    if (typeof v === 'string' && /^@id\d+$/.test(v)) return ids()[Number(v.slice(3))];
    if (Array.isArray(v)) return v.map(realId);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, realId(x)]));
    return v;
  };

  it('never answers 5xx, always a JSON error with a code, and a refused request changes nothing', async () => {
    let state = await stateDigest();
    const statuses = new Map<number, number>();
    for (const route of routes) {
      const [method, template] = route.split(' ') as [string, string];
      await fc.assert(
        fc.asyncProperty(request, async (r) => {
          const id = String(realId(r.pathId));
          const path = template.replace(/:([a-z_]+)/g, () => (r.pathId.startsWith('@') ? encodeURIComponent(id) : encodeURI(id)));
          const url = path + (r.query === null ? '' : `?${r.query}`);
          const hdrs: Record<string, string> = { ...r.headers };
          const sendsBody = method !== 'GET';
          const response = await t.request(method, url, {
            key: biz.private_key,
            headers: hdrs,
            ...(sendsBody && r.rawBody !== null ? { rawBody: r.rawBody } : {}),
            ...(sendsBody && r.rawBody === null && r.body !== null ? { body: realId(r.body) } : {}),
          });
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          const where = `${method} ${url} → ${response.status} ${response.text.slice(0, 300)}`;
          expect(response.status, where).toBeLessThan(500);
          if (response.status >= 400) {
            expect(response.headers.get('content-type'), where).toMatch(/^application\/json/);
            expect(response.body, where).toMatchObject({ code: expect.stringMatching(/^[a-z_]+$/), message: expect.any(String), request_id: expect.any(String) });
            expect(await stateDigest(), where).toEqual(state);
          } else {
            state = await stateDigest();
          }
        }),
        { numRuns: RUNS_PER_ROUTE },
      );
    }
    // The generators reach past validation: some requests succeed, others fail in the handlers.
    expect([...statuses.values()].reduce((a, b) => a + b)).toBe(routes.length * RUNS_PER_ROUTE);
    expect([...statuses.keys()].filter((s) => s < 300).length).toBeGreaterThan(0);
    expect([...statuses.keys()].some((s) => s === 404 || s === 409 || s === 422)).toBe(true);
  });
});
