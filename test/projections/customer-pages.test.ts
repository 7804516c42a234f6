import { CompiledQuery, type Kysely, type KyselyPlugin, type PluginTransformQueryArgs, type PluginTransformResultArgs, type QueryId, type RootOperationNode, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/schema.js';
import { catalogQueries } from '../../src/projections/catalog/catalog-queries.js';
import { customerQueries } from '../../src/projections/customers/customers-queries.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/**
 * The statements a query builder sent, captured as it sent them (to EXPLAIN them afterwards). A
 * builder also hands its subqueries to the plugin; only a query whose result came back was sent.
 */
class Captured implements KyselyPlugin {
  private readonly seen = new Map<QueryId, RootOperationNode>();
  readonly nodes: RootOperationNode[] = [];
  transformQuery({ node, queryId }: PluginTransformQueryArgs) {
    this.seen.set(queryId, node);
    return node;
  }
  async transformResult({ result, queryId }: PluginTransformResultArgs) {
    this.nodes.push(this.seen.get(queryId)!);
    return result;
  }
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Rows the plan's scans of `table` touched, kept or filtered out, over all their loops. */
function rowsRead(node: PlanNode, table: string): number {
  const own =
    node['Relation Name'] === table
      ? (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * node['Actual Loops']
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child, table), 0);
}

const LONG = 20_000;

// A customer with most of a table's rows: a page of its ledger, lots, redemptions or events must read about a page of
// rows, whether or not the table has statistics yet (docs/performance.md: a page of a long ledger
// was planned as a scan of the whole table, or a read of the customer's every row and a sort). The
// events list filtered by customer never was (its (business_id, customer_id, seq) index leaves the
// planner no other cheap plan); it is held here all the same.
describe("one customer's pages on a long history", () => {
  let t: TestApp;
  let key: string;
  let businessId: string;
  let long: string;

  beforeAll(async () => {
    t = await startTestApp();
    const business = await t.business();
    ({ business_id: businessId, private_key: key } = business);
    long = await t.newCustomer(key);
    const other = await t.newCustomer(key);
    for (const [customer, n] of [[long, 3], [other, 2]] as const) {
      for (let i = 1; i <= n; i++) {
        const earn = await t.request('POST', `/api/v1/customers/${customer}/points/transaction`, { key, body: { type: 'earn', amount: i, description: `earn ${i}` } });
        expect(earn.status).toBe(201);
      }
    }
    // The long history itself, written straight into the read models (the planner is what is tested).
    await sql`insert into ledger_entries (id, business_id, customer_id, type, amount, balance, description, created_at)
      select 'bulk_' || g, ${businessId}, ${long}, 'earn', 1, 6 + g, 'bulk', now() from generate_series(1, ${LONG}) g`.execute(t.services.db);
    await sql`insert into lots (business_id, customer_id, transaction_id, amount, remaining, spent, expired, reversed, reversed_from_lot, status, noticed, expiries, created_at)
      select ${businessId}, ${long}, 'bulk_' || g, 1, 1, 0, 0, 0, 0, 'available', false, 0, now() from generate_series(1, ${LONG}) g`.execute(t.services.db);
    await sql`insert into redemptions (id, business_id, customer_id, reward_id, points_cost, balance, status, created_at)
      select 'bulk_' || g, ${businessId}, ${long}, 'reward_bulk', 1, g, 'fulfilled', now() from generate_series(1, ${LONG}) g`.execute(t.services.db);
    await sql`insert into recorded_events (id, business_id, customer_id, event_type, properties, base_points, multiplier, points_awarded, balance, created_at)
      select 'bulk_' || g, ${businessId}, ${long}, 'visit', '{}', 1, 1, 1, g, now() from generate_series(1, ${LONG}) g`.execute(t.services.db);
  });
  afterAll(() => t?.close());

  const pages = async (limit: number) => {
    const captured = new Captured();
    const queries = customerQueries((t.services.db as Kysely<Database>).withPlugin(captured));
    const ledger = await queries.ledger(businessId, long, { limit });
    const lots = await queries.lots(businessId, long, { limit, startingAfter: ledger.items[1]!.id }, false);
    const catalog = catalogQueries((t.services.db as Kysely<Database>).withPlugin(captured));
    const redemptions = await catalog.redemptions(businessId, long, { limit });
    const events = await catalog.events(businessId, { customer_id: long }, { limit });
    return { ledger, lots, redemptions, events, captured };
  };

  /** EXPLAIN ANALYZE of each captured page statement: the rows it read of `table`. */
  const readOf = async (captured: Captured, table: 'ledger_entries' | 'lots' | 'redemptions' | 'recorded_events') => {
    const executor = t.services.db.getExecutor();
    const reads: number[] = [];
    for (const node of captured.nodes) {
      const compiled = executor.compileQuery(node, { queryId: 'explained' });
      if (!compiled.sql.includes(`"${table}"`) || !compiled.sql.includes(' limit ')) continue; // the page, not its cursor's lookup
      const plan = await t.services.db.executeQuery<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> | string }>(
        CompiledQuery.raw(`explain (analyze, format json) ${compiled.sql}`, [...compiled.parameters]),
      );
      const json = plan.rows[0]!['QUERY PLAN'];
      reads.push(rowsRead((typeof json === 'string' ? JSON.parse(json) : json)[0].Plan, table));
    }
    return reads;
  };

  it('answers the first pages of the ledger and the lots, oldest first', async () => {
    const { ledger, lots, redemptions, events } = await pages(3);
    expect(redemptions.items.map((row) => row.id)).toEqual(['bulk_1', 'bulk_2', 'bulk_3']);
    expect(events.items.map((row) => row.id)).toEqual(['bulk_1', 'bulk_2', 'bulk_3']);
    expect(ledger.items.map((row) => row.description)).toEqual(['earn 1', 'earn 2', 'earn 3']);
    expect(ledger.hasMore).toBe(true);
    expect(lots.items.map((row) => row.amount)).toEqual([3, 1, 1]);
    expect(lots.items[1]!.transaction_id).toBe('bulk_1');
    const answer = await t.request('GET', `/api/v1/customers/${long}/transactions?limit=2&starting_after=${ledger.items[2]!.id}`, { key });
    expect(answer.status).toBe(200);
    expect(answer.body.map((row: { description: string }) => row.description)).toEqual(['bulk', 'bulk']);
  });

  it('reads about a page of rows, before the tables have statistics and after', async () => {
    for (const analyzed of [false, true]) {
      if (analyzed) await sql`analyze ledger_entries, lots, redemptions, recorded_events`.execute(t.services.db);
      const { captured } = await pages(3);
      const ledger = await readOf(captured, 'ledger_entries');
      const lots = await readOf(captured, 'lots');
      const redemptions = await readOf(captured, 'redemptions');
      const events = await readOf(captured, 'recorded_events');
      expect({ analyzed, ledger: ledger.length, lots: lots.length, redemptions: redemptions.length, events: events.length }).toEqual({
        analyzed,
        ledger: 1,
        lots: 1,
        redemptions: 1,
        events: 1,
      });
      const small = (read: number[]) => ({ small: read[0]! <= 10, read: read[0] });
      expect({ analyzed, ledger: small(ledger), lots: small(lots), redemptions: small(redemptions), events: small(events) }).toMatchObject({
        analyzed,
        ledger: { small: true },
        lots: { small: true },
        redemptions: { small: true },
        events: { small: true },
      });
    }
  });
});
