import { readFileSync } from 'node:fs';
import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/test-app.js';

const doc = readFileSync(new URL('../../docs/read-models.md', import.meta.url), 'utf8');

/** The example queries of docs/read-models.md, by the name after ```sql, exactly as documented. */
const examples = new Map([...doc.matchAll(/```sql ([\w-]+)\n([\s\S]*?)```/g)].map((m) => [m[1]!, m[2]!]));

/** Every `### \`name\`` section's column table: column → type, as documented. */
function documentedColumns(): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  for (const line of doc.split('\n')) {
    const heading = /^#{3,4} `([\w.]+)`$/.exec(line);
    if (heading) sections.set(heading[1]!, (current = new Map()));
    const row = /^\| `(\w+)` \| ([\w\s[\]]+?) \|/.exec(line);
    if (row && current) current.set(row[1]!, row[2]!);
  }
  return sections;
}

const typeName = (c: { data_type: string; udt_name: string }) =>
  ({ 'timestamp with time zone': 'timestamptz', ARRAY: `${c.udt_name.slice(1)}[]` })[c.data_type] ?? c.data_type;

describe('analytics views and the example queries of docs/read-models.md', () => {
  let t: TestApp;
  let businessId: string;
  const run = async (name: string, id = businessId) => {
    const query = examples.get(name);
    if (!query) throw new Error(`docs/read-models.md has no \`\`\`sql ${name} block`);
    return (await t.services.db.executeQuery(CompiledQuery.raw(query, [id]))).rows as Array<Record<string, unknown>>;
  };

  beforeAll(async () => {
    t = await startTestApp();
    const { business_id, private_key: key } = await t.business();
    businessId = business_id;
    const post = async (path: string, body?: unknown) => {
      const response = await t.request('POST', `/api/v1${path}`, { key, body });
      expect(response.status, response.text).toBeLessThan(300);
      return response.body as { id: string };
    };
    for (const [name, points_threshold] of [['Bronze', 0], ['Silver', 500], ['Gold', 2000]] as const) {
      await post('/tiers', { name, points_threshold, multiplier: 1 });
    }
    await post('/event-types', { name: 'visit', display_name: 'Visit', default_points: 10 });
    const coffee = await post('/rewards', { title: 'Coffee', points_cost: 100, reward_type: 'digital' });
    const mug = await post('/rewards', { title: 'Mug', points_cost: 200, reward_type: 'physical' });
    const [ada, bob, cy] = await Promise.all(['ada', 'bob', 'cy', 'dee'].map((n) => post('/customers', { email: `${n}@example.com` })));
    const points = (c: { id: string }, type: string, amount: number) => post(`/customers/${c.id}/points/transaction`, { type, amount });
    const redeem = (c: { id: string }, reward: { id: string }) => post(`/customers/${c.id}/redemptions`, { reward_id: reward.id });

    // ada: 600 earned (straight to Silver), 50 deducted, Coffee ×2 (one cancelled), Mug: balance 250
    await points(ada!, 'earn', 600);
    await points(ada!, 'deduct', 50);
    const cancelled = await redeem(ada!, coffee);
    await redeem(ada!, coffee);
    await redeem(ada!, mug);
    await post(`/customers/${ada!.id}/redemptions/${cancelled.id}/cancel`);
    // bob: 300 earned (Bronze), Coffee: balance 200
    await points(bob!, 'earn', 300);
    await redeem(bob!, coffee);
    // cy: 100 earned, +40 adjusted, one 10-point visit (Bronze): balance 150. dee: nothing, no tier.
    await points(cy!, 'earn', 100);
    await points(cy!, 'adjust', 40);
    await post('/events', { customer_id: cy!.id, event_type: 'visit' });

    // Another business's activity must not show in this one's numbers.
    const other = await t.business();
    const stranger = await t.request('POST', '/api/v1/customers', { key: other.private_key, body: { email: 'x@example.com' } });
    await t.request('POST', `/api/v1/customers/${stranger.body.id}/points/transaction`, { key: other.private_key, body: { type: 'earn', amount: 999 } });
  });
  afterAll(() => t.close());

  it('expiry and liability per day: the last day ends at the balances (nothing expired or pending here)', async () => {
    const rows = await run('daily-liability');
    const total = (k: string) => rows.reduce((sum, r) => sum + Number(r[k]), 0);
    expect([total('issued'), total('redeemed'), total('expired')]).toEqual([1050, 450, 0]);
    expect(Number(rows.at(-1)!.outstanding_points)).toBe(600);
  });

  it('outstanding points liability', async () => {
    const rows = await run('points-liability');
    expect(rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)])))).toEqual([
      { customers: 4, customers_with_points: 3, outstanding_points: 600, lifetime_earned: 1050, lifetime_redeemed: 450 },
    ]);
  });

  it('tier distribution, tiers nobody holds included', async () => {
    const rows = await run('tier-distribution');
    expect(rows.map((r) => [r.tier, Number(r.customers), Number(r.share)])).toEqual([
      ['(no tier)', 1, 0.25],
      ['Bronze', 2, 0.5],
      ['Silver', 1, 0.25],
      ['Gold', 0, 0],
    ]);
  });

  it('redemptions per reward per month, cancelled ones left out', async () => {
    const rows = await run('redemptions-per-reward-per-month');
    const month = new Date().toISOString().slice(0, 7);
    expect(rows.map((r) => [r.month, r.reward_title, Number(r.redemptions), Number(r.points_spent)])).toEqual([
      [month, 'Coffee', 2, 200],
      [month, 'Mug', 1, 200],
    ]);
  });

  it('top earners of the last 30 days', async () => {
    const rows = await run('top-earners');
    expect(rows.map((r) => [r.email, Number(r.earned_last_30_days), Number(r.points_balance)])).toEqual([
      ['ada@example.com', 600, 250],
      ['bob@example.com', 300, 200],
      ['cy@example.com', 150, 150],
    ]);
  });

  it('every view answers, and the ledger view signs what leaves the balance', async () => {
    const views = await sql<{ name: string }>`select table_name as name from information_schema.views where table_schema = 'analytics'`.execute(t.services.db);
    expect(views.rows.length).toBeGreaterThanOrEqual(14);
    for (const { name } of views.rows) {
      await sql`select * from ${sql.id('analytics', name)} where business_id = ${businessId}`.execute(t.services.db);
    }
    const net = await sql<{ net: number }>`select sum(points_change) as net from analytics.points_ledger where business_id = ${businessId}`.execute(t.services.db);
    expect(Number(net.rows[0]!.net)).toBe(600);
  });

  it('documents every table, view and column that exists, with its type', async () => {
    const columns = await sql<{ table_schema: string; table_name: string; column_name: string; data_type: string; udt_name: string }>`
      select table_schema, table_name, column_name, data_type, udt_name
      from information_schema.columns
      where (table_schema = 'analytics' or table_schema = current_schema()) and table_name not like 'kysely_migration%'
      order by table_schema, table_name, ordinal_position`.execute(t.services.db);
    const actual = new Map<string, Map<string, string>>();
    for (const c of columns.rows) {
      const name = c.table_schema === 'analytics' ? `analytics.${c.table_name}` : c.table_name;
      if (!actual.has(name)) actual.set(name, new Map());
      actual.get(name)!.set(c.column_name, typeName(c));
    }
    const documented = documentedColumns();
    expect([...documented.keys()].sort()).toEqual([...actual.keys()].sort());
    for (const [name, cols] of actual) expect(Object.fromEntries(documented.get(name)!), name).toEqual(Object.fromEntries(cols));
  });
});
