import { randomUUID } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listen } from '../../src/db/listen.js';
import { CheckpointWatcher } from '../../src/projections/checkpoint-watcher.js';
import { ProjectionRunner, PROJECTED_CHANNEL } from '../../src/projections/runner.js';
import { customersProjector } from '../../src/projections/customers/customers-projector.js';
import { APPENDED_CHANNEL } from '../../src/store/append-statements.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { openTestDatabase } from '../support/test-database.js';
import { headCheckpoint, meta } from '../store/store-test-helpers.js';

/**
 * Across processes (`serve --role api` and `--role workers`), the log and the projections tell each
 * other what moved through PostgreSQL notifications sent from their own transactions: an append
 * wakes the workers, a projection batch tells API processes how far the read models are.
 */
describe.skipIf(!process.env.DATABASE_URL)('append signals and checkpoint announcements (PostgreSQL server)', () => {
  let handle: Awaited<ReturnType<typeof openTestDatabase>>;
  let heard: pg.Client;
  const notifications: Array<{ channel: string; payload: string }> = [];
  const logger = pino({ level: 'silent' });

  beforeAll(async () => {
    handle = await openTestDatabase();
    heard = new pg.Client({ connectionString: handle.url });
    await heard.connect();
    heard.on('notification', (n) => notifications.push({ channel: n.channel, payload: n.payload ?? '' }));
    await heard.query(`listen ${APPENDED_CHANNEL}`);
    await heard.query(`listen ${PROJECTED_CHANNEL}`);
  });
  afterAll(async () => {
    await heard?.end();
    await handle?.close();
  });

  const counted = () => ({ id: randomUUID(), type: 'Counted', data: {}, metadata: meta() });
  const heardOn = (channel: string) => notifications.filter((n) => n.channel === channel);

  it('signals an append from its own transaction only when told to', async () => {
    notifications.length = 0;
    await new PostgresEventStore(handle.db).append([{ stream: `quiet-${randomUUID()}`, expected: 'no_stream', events: [counted()] }]);
    await new PostgresEventStore(handle.db, { signal: true }).append([{ stream: `loud-${randomUUID()}`, expected: 'no_stream', events: [counted()] }]);
    await expect.poll(() => heardOn(APPENDED_CHANNEL).length).toBe(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(heardOn(APPENDED_CHANNEL)).toHaveLength(1);
  });

  it('announces the lowest checkpoint as a projection batch commits, when told to', async () => {
    const store = new PostgresEventStore(handle.db);
    await store.append([{ stream: `c-${randomUUID()}`, expected: 'no_stream', events: [counted()] }]);
    const head = await headCheckpoint(store);
    notifications.length = 0;
    await new ProjectionRunner(handle.db, store, customersProjector, { announce: true }).catchUp();
    await expect.poll(() => heardOn(PROJECTED_CHANNEL).map((n) => n.payload)).toEqual([head.globalPosition.toString()]);

    await store.append([{ stream: `c-${randomUUID()}`, expected: 'no_stream', events: [counted()] }]);
    await new ProjectionRunner(handle.db, store, customersProjector).catchUp();
    await new Promise((r) => setTimeout(r, 100));
    expect(heardOn(PROJECTED_CHANNEL)).toHaveLength(1);
  });

  it('answers a waiter on an announcement, before the checkpoints it reads have moved', async () => {
    const name = `never-moves-${randomUUID()}`;
    await handle.db.insertInto('projection_checkpoints').values({ name, global_position: 0, updated_at: new Date() }).execute();
    const watcher = new CheckpointWatcher(handle.db, [name], (listener) => listen(handle.url!, PROJECTED_CHANNEL, listener, logger));
    try {
      // The first wait opens the listener; its checkpoint row stays at 0, so only an announcement can answer.
      expect(await watcher.waitFor({ globalPosition: 1n }, 300)).toBe(false);
      const waited = watcher.waitFor({ globalPosition: 1_000_000n }, 5_000);
      await heard.query(`select pg_notify($1, '1000000')`, [PROJECTED_CHANNEL]);
      expect(await waited).toBe(true);
      // What was announced answers later waiters at once, without a read.
      expect(await watcher.waitFor({ globalPosition: 999_999n }, 1)).toBe(true);
    } finally {
      await watcher.stop();
    }
  });
});
