import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  type CliResult,
  exitWithin,
  freshStore,
  killAllProcesses,
  killProcess,
  printedKeys,
  type ProcessStore,
  runCli,
  SERVER_MODE,
  type ServerProcess,
  startServer,
} from '../e2e/process-helpers.js';

/** The one JSON object that `init --json` and `businesses create --json` print. */
interface Provisioned {
  business_id: string;
  private_key: string;
  public_key: string;
}

interface ListedKey {
  id: string;
  business_id: string;
  type: string;
  name: string | null;
  key_hint: string;
  permissions: string[];
  revoked_at: string | null;
}

/** Parses the whole of stdout as one JSON value (a script would do exactly this). */
function parseStdout<T>(result: { stdout: string; stderr: string }): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON value:\n${result.stdout}\n--- stderr ---\n${result.stderr}`);
  }
}

function expectProvisioned(value: Provisioned) {
  expect(Object.keys(value).sort()).toEqual(['business_id', 'private_key', 'public_key']);
  expect(value.business_id).toMatch(/^biz_[A-Za-z0-9_-]{16,}$/);
  expect(value.private_key).toMatch(/^sk_live_[A-Za-z0-9]{32,}$/);
  expect(value.public_key).toMatch(/^pk_live_[A-Za-z0-9]{32,}$/);
}

const stores: ProcessStore[] = [];
/** `migrated`: see `freshStore` (only the first group starts from nothing: `init` on an empty store). */
async function newStore({ migrated = true }: { migrated?: boolean } = {}): Promise<ProcessStore> {
  const store = await freshStore({ migrated });
  stores.push(store);
  return store;
}

afterAll(async () => {
  await killAllProcesses();
  await Promise.all(stores.map((s) => s.dispose()));
});

describe.concurrent('the loyalty command line', () => {
  describe.sequential('init, businesses and keys', () => {
    let store: ProcessStore;
    let initRun: CliResult;
    let createRun: CliResult;
    let first: Provisioned;
    let second: Provisioned;

    beforeAll(async () => {
      store = await newStore({ migrated: false });
      initRun = await runCli(['init', '--business', 'First shop', '--plan', 'free', '--json'], store);
      first = parseStdout<Provisioned>(initRun);
      createRun = await runCli(['businesses', 'create', '--name', 'Second shop', '--json'], store);
      second = parseStdout<Provisioned>(createRun);
    }, 120_000);

    it('init --json prints exactly one JSON object: the business and its private and public keys', () => {
      expect(initRun.code, initRun.stderr).toBe(0);
      expectProvisioned(first);
    });

    it('init on a store already set up exits 1 and says so, printing no keys', async () => {
      const again = await runCli(['init', '--json'], store);
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
      const text = await runCli(['businesses', 'list'], store);
      expect(text.code, text.stderr).toBe(0);
      for (const name of ['First shop', 'Second shop']) expect(text.stdout).toContain(name);
      for (const b of [first, second]) expect(text.stdout).toContain(b.business_id);

      const json = await runCli(['businesses', 'list', '--json'], store);
      expect(json.code, json.stderr).toBe(0);
      // Exactly these two: the refused second init added nothing.
      expect(parseStdout<unknown[]>(json)).toEqual([
        expect.objectContaining({ id: first.business_id, name: 'First shop', plan: 'free' }),
        expect.objectContaining({ id: second.business_id, name: 'Second shop', plan: 'unlimited' }),
      ]);
    }, 120_000);

    it('keys create exits 1 and asks for --business when the store has several businesses', async () => {
      const result = await runCli(['keys', 'create', '--type', 'private', '--json'], store);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('--business');
      expect(result.stdout).not.toMatch(/sk_live_/);
    }, 120_000);

    it('keys create refuses an unknown permission with exit 1, naming it', async () => {
      const result = await runCli(
        ['keys', 'create', '--type', 'private', '--business', first.business_id, '--permissions', 'customers:read,points:steal', '--json'],
        store,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('points:steal');
      expect(result.stdout).not.toMatch(/sk_live_/);
    }, 120_000);

    it('keys create --permissions makes a restricted key; keys revoke marks it revoked; keys list shows both, never a secret', async () => {
      const made = await runCli(
        ['keys', 'create', '--type', 'private', '--business', second.business_id, '--permissions', 'customers:read,points:read', '--json'],
        store,
      );
      expect(made.code, made.stderr).toBe(0);
      const created = parseStdout<{ id: string; key: string; type: string; permissions: string[] }>(made);
      expect(created.id).toMatch(/^key_/);
      expect(created.key).toMatch(/^sk_live_[A-Za-z0-9]{32,}$/);
      expect(created.type).toBe('private');
      expect([...created.permissions].sort()).toEqual(['customers:read', 'points:read']);

      const revoke = await runCli(['keys', 'revoke', created.id], store);
      expect(revoke.code, revoke.stderr).toBe(0);

      const list = await runCli(['keys', 'list', '--json'], store);
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
      const result = await runCli(['migrate'], store);
      expect(result.code, result.stderr).toBe(0);
    }, 120_000);

    it('businesses set-plan moves a business to another plan and back, each shown by businesses list; the plan it is on changes nothing', async () => {
      const planOf = async (id: string) => {
        const list = await runCli(['businesses', 'list', '--json'], store);
        expect(list.code, list.stderr).toBe(0);
        return parseStdout<Array<{ id: string; plan: string }>>(list).find((b) => b.id === id)?.plan;
      };
      const up = await runCli(['businesses', 'set-plan', first.business_id, 'unlimited'], store);
      expect(up.code, up.stderr).toBe(0);
      expect(up.stdout).toBe(`Business ${first.business_id} is now on the unlimited plan (0 customers).\n`);
      expect(await planOf(first.business_id)).toBe('unlimited');

      const again = await runCli(['businesses', 'set-plan', first.business_id, 'unlimited'], store);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/already on the unlimited plan/);

      const down = await runCli(['businesses', 'set-plan', first.business_id, 'free'], store);
      expect(down.code, down.stderr).toBe(0);
      expect(down.stdout).toBe(`Business ${first.business_id} is now on the free plan (0 customers; the free plan allows 1000).\n`);
      expect(await planOf(first.business_id)).toBe('free');
    }, 120_000);

    it('businesses set-plan refuses an unknown business with exit 1 and one line naming it, and a plan that does not exist', async () => {
      const unknown = await runCli(['businesses', 'set-plan', 'biz_doesnotexist0000', 'unlimited'], store);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toBe("loyalty: No business with id 'biz_doesnotexist0000'.\n");
      expect(unknown.stdout).toBe('');

      const badPlan = await runCli(['businesses', 'set-plan', second.business_id, 'gold'], store);
      expect(badPlan.code).toBe(1);
      expect(badPlan.stderr).toMatch(/'gold' is invalid.*choices are free, unlimited/);
    }, 120_000);
  });

  describe.sequential('keys revoke and the last private key with keys:write', () => {
    let store: ProcessStore;
    let business: Provisioned;
    let firstKeyId: string;
    const listKeys = async () => {
      const list = await runCli(['keys', 'list', '--json'], store);
      expect(list.code, list.stderr).toBe(0);
      return parseStdout<ListedKey[]>(list);
    };
    const isRevoked = async (id: string) => (await listKeys()).find((k) => k.id === id)?.revoked_at !== null;

    beforeAll(async () => {
      store = await newStore();
      business = parseStdout<Provisioned>(await runCli(['init', '--json'], store));
      firstKeyId = (await listKeys()).find((k) => k.type === 'private')!.id;
    }, 120_000);

    it('revokes a private key with keys:write without --force while another one is left', async () => {
      const made = await runCli(['keys', 'create', '--type', 'private', '--json'], store);
      expect(made.code, made.stderr).toBe(0);
      const revoke = await runCli(['keys', 'revoke', firstKeyId], store);
      expect(revoke.code, revoke.stderr).toBe(0);
      expect(revoke.stdout).toBe(`Revoked ${firstKeyId}.\n`);
      expect(await isRevoked(firstKeyId)).toBe(true);
    }, 120_000);

    it('refuses the last one without --force (exit 1, the reason on stderr), and revokes it with --force', async () => {
      const last = (await listKeys()).find((k) => k.business_id === business.business_id && k.type === 'private' && k.revoked_at === null)!;
      const refused = await runCli(['keys', 'revoke', last.id], store);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      // The command's reason, then how to do it anyway: one line.
      expect(refused.stderr).toMatch(/^loyalty: \S.* Use --force to revoke it anyway\.\n$/);
      expect(await isRevoked(last.id)).toBe(false);

      const forced = await runCli(['keys', 'revoke', last.id, '--force'], store);
      expect(forced.code, forced.stderr).toBe(0);
      expect(forced.stdout).toBe(`Revoked ${last.id}.\n`);
      expect(await isRevoked(last.id)).toBe(true);
    }, 120_000);
  });

  describe('errors', () => {
    it('exits 1 on an unknown command', async () => {
      const result = await runCli(['frobnicate'], await newStore({ migrated: false }));
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/unknown command/i);
    }, 120_000);

    it('exits 1 on an unknown option', async () => {
      const result = await runCli(['init', '--no-such-option'], await newStore({ migrated: false }));
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/unknown option/i);
    }, 120_000);
  });

  describe.sequential('beside a server', () => {
    let store: ProcessStore;
    let init: CliResult;
    let made: CliResult;
    let server: ServerProcess;

    beforeAll(async () => {
      store = await newStore();
      init = await runCli(['init', '--business', 'Corner Café', '--plan', 'free'], store);
      made = await runCli(['keys', 'create', '--type', 'private', '--permissions', 'customers:read,customers:write', '--json'], store);
      server = await startServer(store);
    }, 120_000);

    afterAll(async () => {
      if (server) await killProcess(server.child);
    });

    it('init without --json prints the business name and both keys for a person to copy', () => {
      expect(init.code, init.stderr).toBe(0);
      expect(init.stdout).toContain('Corner Café');
      expect(init.stdout).toMatch(/biz_[A-Za-z0-9_-]{16,}/);
      expect(printedKeys(init.stdout).privateKey).toMatch(/^sk_live_[A-Za-z0-9]{32,}$/);
      expect(printedKeys(init.stdout).publicKey).toMatch(/^pk_live_[A-Za-z0-9]{32,}$/);
    });

    it('a key created by the command line works against a server started afterwards, with the permissions it was given', async () => {
      expect(made.code, made.stderr).toBe(0);
      const { key } = parseStdout<{ key: string }>(made);

      const created = await api(server.baseUrl, 'POST', '/api/v1/customers', { key, body: { email: 'cli@example.com' } });
      expect(created.status).toBe(201);
      const read = await api(server.baseUrl, 'GET', `/api/v1/customers/${created.body.id}`, { key });
      expect(read.status).toBe(200);
      expect(read.body.email).toBe('cli@example.com');
      // Restricted as asked: no points:write.
      const earn = await api(server.baseUrl, 'POST', `/api/v1/customers/${created.body.id}/points/transaction`, {
        key,
        body: { type: 'earn', amount: 1 },
      });
      expect(earn.status).toBe(403);
      expect(earn.body.code).toBe('insufficient_permissions');
    }, 120_000);

    it.skipIf(SERVER_MODE)(
      'refuses to open the embedded store while the server holds it, leaving the store intact (embedded store only: a PostgreSQL server is shared)',
      async () => {
        const refused = await runCli(['keys', 'create', '--type', 'private', '--json'], store);
        expect(refused.code).not.toBe(0);
        expect(refused.code).not.toBeNull();
        expect(refused.stderr).toMatch(/in use/i);
        expect(refused.stdout).not.toMatch(/sk_live_/);

        // The server still serves from the store the command did not touch, and stops cleanly.
        const customers = await api(server.baseUrl, 'GET', '/api/v1/customers', { key: printedKeys(init.stdout).privateKey! });
        expect(customers.status).toBe(200);
        server.signal('SIGTERM');
        expect(await exitWithin(server, 10_000)).toEqual({ code: 0, signal: null });
      },
      120_000,
    );
  });
});
