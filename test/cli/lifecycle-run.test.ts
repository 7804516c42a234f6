import { readFileSync } from 'node:fs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { provisionBusiness } from '../../src/cli/provision.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createApp } from '../../src/http/app.js';
import { createServices, type Services } from '../../src/services.js';
import { freshStore, killAllProcesses, type ProcessStore, runCli } from '../e2e/process-helpers.js';

const DAY = 86_400_000;

/**
 * The real `loyalty lifecycle run` process: it does the due work now and prints what it did. The
 * history is written in process first, with a clock ten days behind, so the points it earned have
 * expired by the time the CLI runs on the real one.
 */
describe.sequential('loyalty lifecycle run', () => {
  let store: ProcessStore;
  let customer: string;
  let lot: string;
  const past = Date.now() - 10 * DAY;

  let opened = false;
  async function withStore(work: (services: Services) => Promise<void>, clock?: { now(): Date }) {
    const config = loadConfig({ ...store.env, LOG_LEVEL: 'silent' });
    const template = !config.databaseUrl && !opened ? new Blob([readFileSync(inject('pgliteTemplate'))]) : undefined;
    const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, loadDataDir: template });
    opened = true;
    const services = await createServices({ config, database, logger: pino({ level: 'silent' }), ...(clock ? { clock } : {}) });
    try {
      await work(services);
    } finally {
      await services.close();
    }
  }

  beforeAll(async () => {
    store = await freshStore();
    const clock = { now: () => new Date(past) };
    await withStore(async (services) => {
      const { private_key: key } = await provisionBusiness(services, 'Shop', 'unlimited');
      const app = createApp(services);
      const post = async (path: string, body: unknown) => {
        const response = await app.request(`/api/v1${path}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
        const text = await response.text();
        expect(response.status, text).toBeLessThan(300);
        return JSON.parse(text) as { id: string };
      };
      customer = (await post('/customers', { email: 'expiring@example.com' })).id;
      lot = (await post(`/customers/${customer}/points/transaction`, { type: 'earn', amount: 25, expires_at: new Date(past + DAY).toISOString() })).id;
      await post(`/customers/${customer}/points/transaction`, { type: 'earn', amount: 5 });
    }, clock);
  }, 120_000);

  afterAll(async () => {
    await killAllProcesses();
    await store?.dispose();
  });

  it('expires what fell due and prints it, one line per piece of work', async () => {
    const run = await runCli(['lifecycle', 'run'], store);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${customer}  expired 25 points of lot ${lot} at ${new Date(past + DAY).toISOString()}\nDone: 1 piece of due work for 1 customer.\n`);
  });

  it('finds nothing more to do the second time (--json: an empty array)', async () => {
    const run = await runCli(['lifecycle', 'run', '--json'], store);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual([]);
  });

  it('left the read models showing it', async () => {
    await withStore(async (services) => {
      expect(await services.queries.customers.get((await services.queries.access.businesses())[0]!.id, customer)).toMatchObject({
        points_balance: 5,
        lifetime_earned: 30,
        lifetime_expired: 25,
        next_expiring_at: null,
      });
    });
  });
});
