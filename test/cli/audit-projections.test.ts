import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshStore, killAllProcesses, type ProcessStore, runCli } from '../e2e/process-helpers.js';
import { businessPoster, storeOpener } from './cli-support.js';
import { runInProcess } from './in-process.js';

/**
 * `loyalty audit …` and `loyalty projections rebuild` on one store: exit codes and output. The
 * first runs the built program as a process (exit code 1 without an exception: the process's
 * exitCode); the others run the same program in this process (test/cli/in-process.ts). (What they compute, the refusal to rebuild the webhooks reactor included, is tested
 * in process, which is much faster: test/audit, test/projections/rebuild.test.ts.)
 */
describe.sequential('loyalty audit and loyalty projections', () => {
  let store: ProcessStore;
  let customer: string;

  const withStore = storeOpener(() => store);

  beforeAll(async () => {
    store = await freshStore();
    await withStore(async (services) => {
      const post = await businessPoster(services);
      customer = (await post('/customers', { email: 'cli@example.com' })).id;
      await post(`/customers/${customer}/points/transaction`, { type: 'earn', amount: 80 });
      await post(`/customers/${customer}/points/transaction`, { type: 'deduct', amount: 30 });
    });
  }, 120_000);

  afterAll(async () => {
    await killAllProcesses();
    await store?.dispose();
  });

  /** Each test runs the program as a process, up to twice: the default 30 s is too tight on a loaded machine. */
  const PROCESS_TEST_TIMEOUT_MS = 120_000;

  it('audit verify: exit 1 naming the customer and field of a damaged balance', async () => {
    await withStore(async (services) => {
      await services.db.updateTable('customers').set({ lifetime_redeemed: 7 }).where('id', '=', customer).execute();
    });
    const run = await runCli(['audit', 'verify'], store);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout).toBe(
      `Audit found 1 problem (checked ${run.stdout.match(/checked (\d+ events in \d+ streams)/)?.[1]}, 1 customer):\n` +
        `  drift         customer ${customer} lifetime_redeemed: log 30, read model 7\n`,
    );
  }, PROCESS_TEST_TIMEOUT_MS);

  it('audit verify --json: one JSON object with the drift, exit 1', async () => {
    const run = await runInProcess(['audit', 'verify', '--json'], store);
    expect(run.code, run.stderr).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ clean: false, customers: 1, breaks: [], drifts: [{ customerId: customer, field: 'lifetime_redeemed', log: 30, readModel: 7 }] });
  }, PROCESS_TEST_TIMEOUT_MS);

  it('projections rebuild repairs it, and audit verify then exits 0 with one line', async () => {
    const rebuild = await runInProcess(['projections', 'rebuild', 'customers'], store);
    expect(rebuild.code, rebuild.stderr).toBe(0);
    expect(rebuild.stdout).toMatch(/^Rebuilt customers \(customers, ledger_entries, recorded_events, tier_changes, lots\): \d+ events replayed in [\d.]+ s, checkpoint \d+; the copies took the live tables' names\.\n$/);

    const verify = await runInProcess(['audit', 'verify', '--customer', customer], store);
    expect(verify.code, verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/^Audit clean: \d+ events in 1 stream, 1 customer; every hash chain holds and the read models match the log\.\n$/);
  }, PROCESS_TEST_TIMEOUT_MS);

  it('audit replay --json: the statement, each event with the state after it', async () => {
    const run = await runInProcess(['audit', 'replay', '--customer', customer, '--json'], store);
    expect(run.code, run.stderr).toBe(0);
    const { customer_id, statement } = JSON.parse(run.stdout);
    expect(customer_id).toBe(customer);
    expect(statement.map((l: any) => [l.position, l.type, l.change, l.balance, l.lifetime_earned, l.lifetime_redeemed])).toEqual([
      [0, 'CustomerRegistered', 'registered', 0, 0, 0],
      [1, 'PointsEarned', 'earn 80', 80, 80, 0],
      [2, 'PointsDeducted', 'deduct 30', 50, 80, 30],
    ]);
  }, PROCESS_TEST_TIMEOUT_MS);
});
