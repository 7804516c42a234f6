import { afterAll, expect } from 'vitest';
import { freshStore, killAllProcesses, type ProcessStore } from '../e2e/process-helpers.js';

/**
 * What the command-line test files share. They were one file; as four, the suite's two workers
 * share them (each runs its commands one after another: every one is a process that opens the store).
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
