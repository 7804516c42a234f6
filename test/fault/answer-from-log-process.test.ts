import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import { openDatabase } from '../../src/db/database.js';
import { PostgresEventStore } from '../../src/store/postgres-event-store.js';
import { REPO_ROOT } from '../e2e/process-helpers.js';
import { PgProxy } from '../support/pg-proxy.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { createServerDatabase } from '../support/test-database.js';

const SERVER_URL = process.env.DATABASE_URL;
const SERVER_SCRIPT = path.join(REPO_ROOT, 'test/fault/answers-after-append-server.ts');

/**
 * Issue 12 item 5, the KurrentDB half, with a real crash and a lost answer: process A stores answers after the
 * append (the PostgreSQL adapter's transactional receipts off, as on KurrentDB) and is killed
 * with SIGKILL at the exact point, its write committed and its answer's record not yet sent (a
 * proxy holds that statement). The retry on another process B takes the key over at once (A is
 * known dead) and answers from A's event in the log, applying nothing again. Server only: two
 * processes share the database, which PGlite cannot.
 */
describe.skipIf(!SERVER_URL)('a write committed by a process killed before it recorded its answer, retried on another (PostgreSQL server)', () => {
  let proxy: PgProxy;
  let b: TestApp;
  let business: ProvisionedBusiness;
  let databaseUrl: string;
  let drop: () => Promise<void>;
  const children = new Set<ChildProcess>();

  beforeAll(async () => {
    const created = await createServerDatabase(SERVER_URL!);
    databaseUrl = created.url;
    drop = created.drop;
    proxy = await PgProxy.start(databaseUrl);
    b = await startTestApp({ database: await openDatabase({ databaseUrl }), runDispatcher: false });
    (b.services.store as PostgresEventStore).transactionalReceipts = false;
    business = await b.business();
  }, 120_000);

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await b?.close();
    await proxy?.close();
    await drop?.();
  });

  /** Process A: the service with answers stored after the append, on the database through the proxy. */
  async function startA(): Promise<{ child: ChildProcess; baseUrl: string }> {
    const child = spawn(process.execPath, ['--import', 'tsx', SERVER_SCRIPT], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: proxy.url(databaseUrl), LOG_LEVEL: 'silent', LOYALTY_RATE_LIMIT_RPS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let output = '';
    const baseUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`process A did not start:\n${output}`)), 60_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString('utf8');
        const url = /Listening on (\S+)/.exec(output)?.[1];
        if (url) {
          clearTimeout(timer);
          resolve(url);
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code, signal) => reject(new Error(`process A exited (${code ?? signal}):\n${output}`)));
    });
    return { child, baseUrl };
  }

  async function kill(child: ChildProcess): Promise<void> {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    children.delete(child);
  }

  const earnBody = { type: 'earn', amount: 10, description: 'order 9' };
  const earnOn = (baseUrl: string, customerId: string, idempotencyKey: string) =>
    fetch(`${baseUrl}/api/v1/customers/${customerId}/points/transaction`, {
      method: 'POST',
      headers: { 'x-api-key': business.private_key, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify(earnBody),
    });
  const earnOnB = (customerId: string, idempotencyKey: string) =>
    b.request('POST', `/api/v1/customers/${customerId}/points/transaction`, {
      key: business.private_key,
      headers: { 'idempotency-key': idempotencyKey },
      body: earnBody,
    });

  /** B's retries until A's claim is taken over (A is dead, so well within its 60 s lease). */
  async function retryOnB(customerId: string, idempotencyKey: string) {
    const started = Date.now();
    let retry = await earnOnB(customerId, idempotencyKey);
    while (retry.status === 409 && retry.body.code === 'idempotency_key_in_progress' && Date.now() - started < 20_000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      retry = await earnOnB(customerId, idempotencyKey);
    }
    return retry;
  }

  async function keyedEvents(customerId: string, idempotencyKey: string) {
    return (await b.services.store.readStream(`customer-${customerId}`)).filter((e) => e.metadata.idempotency_key === idempotencyKey);
  }

  it('answers the retry from the log with the committed transaction: one event, one ledger line', async () => {
    const a = await startA();
    const customerId = await b.newCustomer(business.private_key);
    const held = proxy.holdNextStatement(/^update "idempotency_keys" set "state"/i);
    const first = earnOn(a.baseUrl, customerId, 'killed-before-record').catch((error: unknown) => error);
    await held; // A's append committed; the record of its answer has not reached the database
    await kill(a.child);
    expect(await first).toBeInstanceOf(Error); // A never answered
    const [appended] = await keyedEvents(customerId, 'killed-before-record');
    expect(appended?.type).toBe('PointsEarned');

    const retry = await retryOnB(customerId, 'killed-before-record');
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toMatchObject({ customer_id: customerId, type: 'earn', amount: 10, balance: 10, description: 'order 9' });
    expect(retry.body.created_at).toBe(appended!.metadata.recorded_at);
    expect(await keyedEvents(customerId, 'killed-before-record')).toHaveLength(1);
    const ledger = await b.request('GET', `/api/v1/customers/${customerId}/transactions`, { key: business.private_key });
    expect(ledger.body.map((t: { id: string }) => t.id)).toEqual([retry.body.id]);

    const again = await earnOnB(customerId, 'killed-before-record');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(retry.text);
  }, 120_000);

  it('answers 503 when the answer to its COMMIT is lost, and the retry at once replays the write from the log', async () => {
    const a = await startA();
    const customerId = await b.newCustomer(business.private_key);
    const lost = proxy.loseNextCommitAnswer(/insert into events/i);
    const first = await earnOn(a.baseUrl, customerId, 'lost-commit-answer');
    await lost;
    expect(first.status).toBe(503);
    expect(((await first.json()) as { message: string }).message).toMatch(/may or may not have been applied/);

    // Not after the lease: A ended it, keeping the key, when it could not tell the outcome.
    const retry = await earnOn(a.baseUrl, customerId, 'lost-commit-answer');
    const text = await retry.text();
    expect(retry.status, text).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(JSON.parse(text)).toMatchObject({ customer_id: customerId, type: 'earn', amount: 10, balance: 10 });
    expect(await keyedEvents(customerId, 'lost-commit-answer')).toHaveLength(1);
    await kill(a.child);
  }, 120_000);

  it('applies the retry once when A was killed before its append committed', async () => {
    const a = await startA();
    const customerId = await b.newCustomer(business.private_key);
    const held = proxy.holdNextCommit(/insert into events/i);
    const first = earnOn(a.baseUrl, customerId, 'killed-before-commit').catch((error: unknown) => error);
    await held; // A's COMMIT never reaches the database: its transaction rolls back when A dies
    await kill(a.child);
    expect(await first).toBeInstanceOf(Error);

    const retry = await retryOnB(customerId, 'killed-before-commit');
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.body).toMatchObject({ type: 'earn', amount: 10, balance: 10 });
    expect(await keyedEvents(customerId, 'killed-before-commit')).toHaveLength(1);
  }, 120_000);
});
