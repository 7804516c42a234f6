import { beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, type ProcessStore, runCli } from '../e2e/process-helpers.js';
import { expectProvisioned, type ListedKey, parseStdout, type Provisioned, useStores } from './cli-support.js';
import { runInProcess } from './in-process.js';

const newStore = useStores();

describe('the loyalty command line', () => {
  describe.sequential('init, businesses and keys', () => {
    let store: ProcessStore;
    let initRun: CliResult;
    let createRun: CliResult;
    let first: Provisioned;
    let second: Provisioned;

    beforeAll(async () => {
      store = await newStore({ migrated: false });
      // The built program, as a process, on an empty store: its very first start. The other commands
      // run in this process (test/cli/in-process.ts): what they print and exit with is the point.
      initRun = await runCli(['init', '--business', 'First shop', '--plan', 'free', '--json'], store);
      first = parseStdout<Provisioned>(initRun);
      createRun = await runInProcess(['businesses', 'create', '--name', 'Second shop', '--json'], store);
      second = parseStdout<Provisioned>(createRun);
    }, 120_000);

    it('init --json prints exactly one JSON object: the business and its private and public keys', () => {
      expect(initRun.code, initRun.stderr).toBe(0);
      expectProvisioned(first);
    });

    it('init on a store already set up exits 1 and says so, printing no keys', async () => {
      const again = await runInProcess(['init', '--json'], store);
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/already set up/i);
      expect(again.stdout).not.toMatch(/sk_live_|pk_live_/);
    }, 120_000);

    it('businesses create --json prints the new business and its keys as one JSON object', () => {
      expect(createRun.code, createRun.stderr).toBe(0);
      expectProvisioned(second);
      expect(second.business_id).not.toBe(first.business_id);
    });

    it('businesses list shows both businesses with the names and plans given, as text and as JSON, and nothing else', async () => {
      const text = await runInProcess(['businesses', 'list'], store);
      expect(text.code, text.stderr).toBe(0);
      for (const name of ['First shop', 'Second shop']) expect(text.stdout).toContain(name);
      for (const b of [first, second]) expect(text.stdout).toContain(b.business_id);

      const json = await runInProcess(['businesses', 'list', '--json'], store);
      expect(json.code, json.stderr).toBe(0);
      // Exactly these two: the refused second init added nothing.
      expect(parseStdout<unknown[]>(json)).toEqual([
        expect.objectContaining({ id: first.business_id, name: 'First shop', plan: 'free' }),
        expect.objectContaining({ id: second.business_id, name: 'Second shop', plan: 'unlimited' }),
      ]);
    }, 120_000);

    it('keys create exits 1 and asks for --business when the store has several businesses', async () => {
      const result = await runInProcess(['keys', 'create', '--type', 'private', '--json'], store);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('--business');
      expect(result.stdout).not.toMatch(/sk_live_/);
    }, 120_000);

    it('keys create refuses an unknown permission with exit 1, naming it', async () => {
      const result = await runInProcess(
        ['keys', 'create', '--type', 'private', '--business', first.business_id, '--permissions', 'customers:read,points:steal', '--json'],
        store,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('points:steal');
      expect(result.stdout).not.toMatch(/sk_live_/);
    }, 120_000);

    it('keys create --permissions makes a restricted key; keys revoke marks it revoked; keys list shows both, never a secret', async () => {
      const made = await runInProcess(
        ['keys', 'create', '--type', 'private', '--business', second.business_id, '--permissions', 'customers:read,points:read', '--json'],
        store,
      );
      expect(made.code, made.stderr).toBe(0);
      const created = parseStdout<{ id: string; key: string; type: string; permissions: string[] }>(made);
      expect(created.id).toMatch(/^key_/);
      expect(created.key).toMatch(/^sk_live_[A-Za-z0-9]{32,}$/);
      expect(created.type).toBe('private');
      expect([...created.permissions].sort()).toEqual(['customers:read', 'points:read']);

      const revoke = await runInProcess(['keys', 'revoke', created.id], store);
      expect(revoke.code, revoke.stderr).toBe(0);

      const list = await runInProcess(['keys', 'list', '--json'], store);
      expect(list.code, list.stderr).toBe(0);
      const keys = parseStdout<ListedKey[]>(list);
      const listed = keys.find((k) => k.id === created.id);
      expect(listed).toMatchObject({ business_id: second.business_id, type: 'private' });
      expect([...listed!.permissions].sort()).toEqual(['customers:read', 'points:read']);
      expect(listed!.revoked_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      // Only that key is revoked: the four keys printed by init and businesses create stay active.
      expect(keys.filter((k) => k.revoked_at === null)).toHaveLength(4);
      expect(keys.filter((k) => k.revoked_at !== null).map((k) => k.id)).toEqual([created.id]);
      for (const k of keys) expect(k).not.toHaveProperty('key');
      for (const secret of [created.key, first.private_key, first.public_key, second.private_key, second.public_key]) {
        expect(list.stdout).not.toContain(secret);
      }
    }, 120_000);

    it('migrate exits 0 on a store that is already migrated', async () => {
      const result = await runInProcess(['migrate'], store);
      expect(result.code, result.stderr).toBe(0);
    }, 120_000);
  });
});
