/** The fault tests' view of the stored truth: the event log, the read models and the checkpoints, read straight from PostgreSQL. */
import pg from 'pg';
import { expect } from 'vitest';

/** Runs `work` with a client connected to `url`, then disconnects. */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The log's points events, as the read models must reflect them. */
export interface LoggedMovement {
  transactionId: string;
  customerId: string;
  amount: number;
  idempotencyKey: string | null;
}

export async function loggedMovements(client: pg.Client): Promise<LoggedMovement[]> {
  const { rows } = await client.query<LoggedMovement>(
    `select data->>'transaction_id' as "transactionId", substring(stream_id from position('-' in stream_id) + 1) as "customerId",
            (data->>'amount')::int as amount, metadata->>'idempotency_key' as "idempotencyKey"
       from events where type in ('PointsEarned', 'PointsDeducted', 'PointsAdjusted') order by global_position`,
  );
  return rows;
}

/** Projections whose checkpoint is behind the head of the log (none once they all caught up). */
export async function laggingProjections(client: pg.Client): Promise<Array<{ name: string; global_position: number; head: number }>> {
  const { rows } = await client.query(
    `select name, global_position::int, (select coalesce(max(global_position), 0)::int from events) as head
       from projection_checkpoints where global_position < (select coalesce(max(global_position), 0) from events)`,
  );
  return rows;
}

/** The ledger holds each logged transaction once, and each balance is the sum of the customer's logged earns. */
export async function expectReadModelsToMatchLog(client: pg.Client): Promise<void> {
  const movements = await loggedMovements(client);
  const { rows: ledger } = await client.query<{ id: string }>('select id from ledger_entries');
  expect(ledger.map((l) => l.id).sort()).toEqual(movements.map((m) => m.transactionId).sort());
  const { rows: customers } = await client.query<{ id: string; points_balance: number; lifetime_earned: number }>(
    'select id, points_balance::int, lifetime_earned::int from customers',
  );
  for (const customer of customers) {
    const earned = movements.filter((m) => m.customerId === customer.id).reduce((sum, m) => sum + m.amount, 0);
    expect(customer.points_balance, customer.id).toBe(earned);
    expect(customer.lifetime_earned, customer.id).toBe(earned);
  }
}
