import { readFileSync } from 'node:fs';
import pino from 'pino';
import { afterAll, expect, inject } from 'vitest';
import { provisionBusiness } from '../../src/cli/provision.js';
import type { Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createApp } from '../../src/http/app.js';
import { createServices, type Services } from '../../src/services.js';
import { freshStore, killAllProcesses, type ProcessStore } from '../e2e/process-helpers.js';

/**
 * What the command-line test files share. They were one file; as four, the suite's two workers
 * share them. Most commands run in the test's process (./in-process.ts); a few as the built
 * program, where the process is the point.
 */

/** The one JSON object that `init --json` and `businesses create --json` print. */
export interface Provisioned {
  business_id: string;
  private_key: string;
  public_key: string;
}

export interface ListedKey {
  id: string;
  business_id: string;
  type: string;
  name: string | null;
  key_hint: string;
  permissions: string[];
  revoked_at: string | null;
}

/** Parses the whole of stdout as one JSON value (a script would do exactly this). */
export function parseStdout<T>(result: { stdout: string; stderr: string }): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON value:\n${result.stdout}\n--- stderr ---\n${result.stderr}`);
  }
}

export function expectProvisioned(value: Provisioned) {
  expect(Object.keys(value).sort()).toEqual(['business_id', 'private_key', 'public_key']);
  expect(value.business_id).toMatch(/^biz_[A-Za-z0-9_-]{16,}$/);
  expect(value.private_key).toMatch(/^sk_live_[A-Za-z0-9]{32,}$/);
  expect(value.public_key).toMatch(/^pk_live_[A-Za-z0-9]{32,}$/);
}

/**
 * Registers the file's cleanup (every process it started killed, then every store dropped) and
 * returns how to make a store. `migrated` (the default): see `freshStore`; `init` on an empty
 * store is tested from nothing in cli.test.ts.
 */
export function useStores(): (options?: { migrated?: boolean }) => Promise<ProcessStore> {
  const stores: ProcessStore[] = [];
  afterAll(async () => {
    await killAllProcesses();
    await Promise.all(stores.map((s) => s.dispose()));
  });
  return async ({ migrated = true } = {}) => {
    const store = await freshStore({ migrated });
    stores.push(store);
    return store;
  };
}

/**
 * Opens `store` in this process for `work` and closes it again (the CLI is not running then: the
 * embedded store has one owner). The embedded store's first open starts from the suite's migrated
 * template: a fresh PGlite initialisation takes seconds.
 */
export function storeOpener(store: () => ProcessStore) {
  let opened = false;
  return async function withStore(work: (services: Services) => Promise<void>, clock?: Clock): Promise<void> {
    const config = loadConfig({ ...store().env, LOG_LEVEL: 'silent' });
    const template = !config.databaseUrl && !opened ? new Blob([readFileSync(inject('pgliteTemplate'))]) : undefined;
    const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, loadDataDir: template });
    opened = true;
    const services = await createServices({ config, database, logger: pino({ level: 'silent' }), ...(clock ? { clock } : {}) });
    try {
      await work(services);
    } finally {
      await services.close();
    }
  };
}

/** A new business on `services`, and a POST through the real app with its private key (any 2xx, or the test fails). */
export async function businessPoster(services: Services): Promise<(path: string, body: unknown) => Promise<{ id: string }>> {
  const { private_key: key } = await provisionBusiness(services, 'Shop', 'unlimited');
  return apiPoster(services, key);
}

/** A POST through the real app on `services` with `key` (any 2xx, or the test fails). */
export function apiPoster(services: Services, key: string): (path: string, body: unknown) => Promise<{ id: string }> {
  const app = createApp(services);
  return async (path, body) => {
    const response = await app.request(`/api/v1${path}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const text = await response.text();
    expect(response.status, text).toBeLessThan(300);
    return JSON.parse(text) as { id: string };
  };
}
