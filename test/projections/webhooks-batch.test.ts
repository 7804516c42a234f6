import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams } from '../../src/events/streams.js';
import type { EventMetadata } from '../../src/events/metadata.js';
import { ProjectionRunner } from '../../src/projections/runner.js';
import type { NewEvent } from '../../src/store/event-store.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { webhooksProjector } from '../../src/webhooks/webhooks-projector.js';
import { openTestDatabase } from '../support/test-database.js';

type TestDatabase = Awaited<ReturnType<typeof openTestDatabase>>;
let handle: TestDatabase;
let store: PostgresEventStore;

beforeAll(async () => {
  handle = await openTestDatabase();
  store = new PostgresEventStore(handle.db);
});
afterAll(() => handle?.close());

const BUSINESS = 'biz_hooks';
const CUSTOMER = 'cus_hooks';

function event(type: string, data: Record<string, unknown>, business = BUSINESS): NewEvent {
  const id = randomUUID();
  const metadata: EventMetadata = {
    event_id: id,
    event_version: 1,
    business_id: business,
    recorded_at: new Date().toISOString(),
    actor: 'test',
    request_id: null,
    correlation_id: null,
    causation_id: null,
    idempotency_key: null,
  };
  return { id, type, data, metadata };
}

const points = (transaction: string, balance: number) => ({ transaction_id: transaction, amount: 1, balance, description: null, reference: null, metadata: {} });
const earned = (transaction: string, balance: number) => event('PointsEarned', { ...points(transaction, balance), base_amount: 1, multiplier: 1 });
const created = (webhookId: string, events: string[], business = BUSINESS) =>
  event('WebhookCreated', { webhook_id: webhookId, business_id: business, url: `https://example.com/${webhookId}`, events, description: null }, business);

describe('webhooks reactor, one batch', () => {
  it('matches each event against the endpoints as they were at that event, though the batch reads them once', async () => {
    // Appended in this order, so that one batch holds all of it.
    const writes = [
      { stream: streams.webhook('whk_a'), events: [created('whk_a', ['points.earned'])] },
      { stream: streams.customer(CUSTOMER), events: [earned('txn_1', 1)] },
      { stream: streams.webhook('whk_b'), events: [created('whk_b', ['*'])] },
      { stream: streams.webhook('whk_other'), events: [created('whk_other', ['*'], 'biz_other')] },
      { stream: streams.webhook('whk_a'), events: [event('WebhookUpdated', { events: ['points.deducted'] })] },
      { stream: streams.customer(CUSTOMER), events: [earned('txn_2', 2), event('PointsDeducted', points('txn_3', 1))] },
      { stream: streams.webhook('whk_b'), events: [event('WebhookDeleted', {})] },
      { stream: streams.customer(CUSTOMER), events: [earned('txn_4', 2)] },
    ];
    for (const { stream, events } of writes) await store.append([{ stream, expected: 'any', events }]);
    const runner = new ProjectionRunner(handle.db, store, webhooksProjector, { batchSize: 1000 });
    await runner.catchUp();

    const messages = await handle.db
      .selectFrom('webhook_messages')
      .select(['webhook_id', 'event_type', 'payload'])
      .orderBy('seq')
      .execute();
    const seen = messages.map((m) => `${m.webhook_id} ${m.event_type} ${(JSON.parse(m.payload) as { data: { transaction_id: string } }).data.transaction_id}`);
    expect(seen).toEqual([
      'whk_a points.earned txn_1', // whk_b did not exist yet
      'whk_b points.earned txn_2', // whk_a now listens to deductions only
      'whk_a points.deducted txn_3',
      'whk_b points.deducted txn_3',
      // txn_4: whk_b is deleted, whk_a does not listen to earns; whk_other is another business's
    ]);
    const endpoints = await handle.db.selectFrom('webhook_endpoints').select(['id', 'events', 'active']).orderBy('seq').execute();
    expect(endpoints).toEqual([
      { id: 'whk_a', events: ['points.deducted'], active: true },
      { id: 'whk_b', events: ['*'], active: false },
      { id: 'whk_other', events: ['*'], active: true },
    ]);
  });

  it('cancels in one batch the messages queued before a disable or delete, and spares those after a re-enable', async () => {
    const business = 'biz_stops';
    const customer = 'cus_stops';
    const earnedHere = (transaction: string, balance: number) => {
      const e = earned(transaction, balance);
      return { ...e, metadata: { ...e.metadata, business_id: business } };
    };
    const writes = [
      { stream: streams.webhook('whk_c'), events: [created('whk_c', ['*'], business)] },
      { stream: streams.webhook('whk_d'), events: [created('whk_d', ['*'], business)] },
      { stream: streams.customer(customer), events: [earnedHere('txn_c1', 1)] },
      { stream: streams.webhook('whk_c'), events: [event('WebhookUpdated', { active: false }, business)] },
      { stream: streams.webhook('whk_d'), events: [event('WebhookDeleted', {}, business)] },
      { stream: streams.webhook('whk_c'), events: [event('WebhookUpdated', { active: true }, business)] },
      { stream: streams.customer(customer), events: [earnedHere('txn_c2', 2)] },
    ];
    for (const { stream, events } of writes) await store.append([{ stream, expected: 'any', events }]);
    await new ProjectionRunner(handle.db, store, webhooksProjector, { batchSize: 1000 }).catchUp();

    const messages = await handle.db
      .selectFrom('webhook_messages')
      .select(['webhook_id', 'status', 'payload'])
      .where('business_id', '=', business)
      .orderBy('seq')
      .execute();
    expect(messages.map((m) => `${m.webhook_id} ${(JSON.parse(m.payload) as { data: { transaction_id: string } }).data.transaction_id} ${m.status}`)).toEqual([
      'whk_c txn_c1 cancelled', // disabled after it was queued
      'whk_d txn_c1 cancelled', // deleted after it was queued
      'whk_c txn_c2 pending', // enabled again before this one
    ]);
  });
});

describe('webhooks reactor, endpoints carried between batches', () => {
  const business = 'biz_carried';
  const customer = 'cus_carried';
  const here = (e: NewEvent) => ({ ...e, metadata: { ...e.metadata, business_id: business } });
  const append = (stream: string, ...events: NewEvent[]) => store.append([{ stream, expected: 'any', events: events.map(here) }]);
  const queued = async () =>
    (await handle.db.selectFrom('webhook_messages').select(['webhook_id', 'payload']).where('business_id', '=', business).orderBy('seq').execute()).map(
      (m) => `${m.webhook_id} ${(JSON.parse(m.payload) as { data: { transaction_id: string } }).data.transaction_id}`,
    );

  it('sees the changes another process applied between two of its batches, and its own of the batch before', async () => {
    // Two runners on one database: two processes taking turns at the reactor.
    const first = new ProjectionRunner(handle.db, store, webhooksProjector, { batchSize: 1000 });
    const second = new ProjectionRunner(handle.db, store, webhooksProjector, { batchSize: 1000 });
    await first.catchUp();

    await append(streams.webhook('whk_e'), created('whk_e', ['*'], business));
    await append(streams.customer(customer), earned('txn_e1', 1));
    await first.catchUp(); // carries whk_e, active
    await append(streams.webhook('whk_e'), event('WebhookUpdated', { active: false }));
    await second.catchUp(); // the other process disables it
    await append(streams.customer(customer), earned('txn_e2', 2));
    await first.catchUp(); // must not send txn_e2 to the disabled endpoint
    await append(streams.webhook('whk_f'), created('whk_f', ['*'], business));
    await first.catchUp(); // its own change, carried to its next batch
    await append(streams.customer(customer), earned('txn_e3', 3));
    await first.catchUp();

    expect(await queued()).toEqual(['whk_e txn_e1', 'whk_f txn_e3']);
  });
});
