import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshStore, killAllProcesses, type ProcessStore, runCli } from '../e2e/process-helpers.js';
import { businessPoster, storeOpener } from './cli-support.js';

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

  const withStore = storeOpener(() => store);

  beforeAll(async () => {
    store = await freshStore();
    const clock = { now: () => new Date(past) };
    await withStore(async (services) => {
      const post = await businessPoster(services);
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
