import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  type CliResult,
  exitWithin,
  killProcess,
  printedKeys,
  type ProcessStore,
  runCli,
  SERVER_MODE,
  type ServerProcess,
  startServer,
} from '../e2e/process-helpers.js';
import { parseStdout, useStores } from './cli-support.js';
import { runInProcess } from './in-process.js';

const newStore = useStores();

describe('the loyalty command line', () => {
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
      // What the store is given runs in this process (./in-process.ts); the server is the built program.
      init = await runInProcess(['init', '--business', 'Corner Café', '--plan', 'free'], store);
      made = await runInProcess(['keys', 'create', '--type', 'private', '--permissions', 'customers:read,customers:write', '--json'], store);
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
