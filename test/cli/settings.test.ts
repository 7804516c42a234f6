import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, servingProcesses, workersApart } from '../../src/config.js';
import { freePort, killAllProcesses, type ProcessStore, runCli } from '../e2e/process-helpers.js';

/** An embedded store's directory plus the settings under test (the child gets no other store settings). */
const dirs: string[] = [];
function storeWith(settings: Record<string, string>): ProcessStore {
  const dir = mkdtempSync(path.join(tmpdir(), 'loyalty-settings-'));
  dirs.push(dir);
  return { env: { LOYALTY_DATA_DIR: dir, ...settings }, dispose: async () => {} };
}

afterAll(async () => {
  await killAllProcesses();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** One line on stderr, no stack trace, nothing on stdout. */
function expectOneLine(run: { stdout: string; stderr: string }, naming: string) {
  expect(run.stdout).toBe('');
  expect(run.stderr.split('\n').filter(Boolean)).toHaveLength(1);
  expect(run.stderr).toContain(naming);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

describe('settings read at start', () => {
  const invalid: Array<[string, string]> = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['PORT', '3000.5'],
    ['PORT', '0x10'],
    ['LOYALTY_RYW_TIMEOUT_MS', 'soon'],
    ['LOYALTY_RYW_TIMEOUT_MS', '99999999999'],
    ['LOYALTY_DB_TIMEOUT_MS', '0'],
    ['LOYALTY_DB_TIMEOUT_MS', '5s'],
    ['LOYALTY_DB_POOL_SIZE', '0'],
    ['LOYALTY_STATE_CACHE_LOTS', '999'],
    ['LOYALTY_STATE_CACHE_LOTS', 'lots'],
    ['LOYALTY_RATE_LIMIT_RPS', '-5'],
    ['LOYALTY_RATE_LIMIT_BURST', '0'],
    ['LOYALTY_PUBLIC_RATE_LIMIT_RPS', '1e3'],
    ['LOYALTY_PUBLIC_RATE_LIMIT_BURST', 'many'],
    ['LOYALTY_PROCESSES', '0'],
    ['LOYALTY_LIFECYCLE_KEEP', '96'],
    ['LOYALTY_LIFECYCLE_KEEP', '0.85'],
    ['LOYALTY_DB_PREPARE_THRESHOLD', '-1'],
    ['LOYALTY_PROCESSES', '2.5'],
    ['LOG_LEVEL', 'loud'],
    ['DATABASE_URL', 'localhost:5432'],
    ['DATABASE_URL', 'postgres://user:pa%ss@host/db'],
    ['DATABASE_URL', 'postgres://user:secret@[::1/db'],
    ['DATABASE_URL', 'mysql://user@host/db'],
  ];

  it.each(invalid)('refuses %s=%j with a ConfigError naming the variable', (name, value) => {
    let caught: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect(caught).toMatchObject({ variable: name, message: expect.stringContaining(name) });
    // A DATABASE_URL may carry a password: never repeated.
    if (name === 'DATABASE_URL') expect((caught as Error).message).not.toContain(value);
  });

  it('takes defaults for unset or empty variables, and valid values as given', () => {
    expect(loadConfig({ PORT: '' })).toMatchObject({ port: 3000, logLevel: 'info', readYourWritesTimeoutMs: 5000, databaseTimeoutMs: 5000, rateLimitBurst: 200 });
    expect(loadConfig({ LOYALTY_DB_TIMEOUT_MS: '2500' })).toMatchObject({ databaseTimeoutMs: 2500 });
    expect(loadConfig({ LOYALTY_DB_POOL_SIZE: '8' })).toMatchObject({ databasePoolSize: 8 });
    expect(loadConfig({})).toMatchObject({ stateCacheLots: 200_000 });
    expect(loadConfig({ LOYALTY_STATE_CACHE_LOTS: '1000000' })).toMatchObject({ stateCacheLots: 1_000_000 });
    expect(loadConfig({ PORT: '0', LOYALTY_RATE_LIMIT_RPS: '0', LOG_LEVEL: 'silent' })).toMatchObject({ port: 0, rateLimitRps: 0, logLevel: 'silent' });
    expect(loadConfig({ PORT: '65535', DATABASE_URL: 'postgresql://u:p@db.internal:6543/loyalty' })).toMatchObject({
      port: 65535,
      databaseUrl: 'postgresql://u:p@db.internal:6543/loyalty',
    });
    // The public-key limits follow the general ones unless set.
    expect(loadConfig({ LOYALTY_RATE_LIMIT_RPS: '7', LOYALTY_RATE_LIMIT_BURST: '9' })).toMatchObject({ publicRateLimitRps: 7, publicRateLimitBurst: 9 });
  });

  it('serves with --processes, else LOYALTY_PROCESSES, else one process per core on a server; with one on the embedded store', () => {
    const server = loadConfig({ DATABASE_URL: 'postgres://u@db/loyalty' });
    expect(servingProcesses(server, undefined, 8)).toBe(8);
    expect(servingProcesses(server, '3', 8)).toBe(3);
    expect(servingProcesses({ ...server, processes: 2 }, undefined, 8)).toBe(2);
    expect(servingProcesses({ ...server, processes: 2 }, '5', 8)).toBe(5);
    expect(servingProcesses(loadConfig({}), undefined, 8)).toBe(1);
    expect(servingProcesses(loadConfig({ LOYALTY_PROCESSES: '1' }), '1', 8)).toBe(1);
    expect(() => servingProcesses(server, '0', 8)).toThrow(ConfigError);
    expect(() => servingProcesses(loadConfig({}), '2', 8)).toThrow(/--processes 2 needs a PostgreSQL server/);
    expect(() => servingProcesses(loadConfig({ LOYALTY_PROCESSES: '2' }), undefined, 8)).toThrow(/LOYALTY_PROCESSES 2 needs a PostgreSQL server/);
  });

  it('runs the workers apart beside several HTTP processes, and beside one only when nobody chose the count and there is a core to spare', () => {
    const local = loadConfig({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/loyalty' });
    expect(workersApart(local, undefined, 2)).toBe(true); // one HTTP process by default, the workers apart
    expect(workersApart(local, undefined, 8)).toBe(true);
    expect(workersApart(local, undefined, 1)).toBe(false); // one core: one process
    expect(workersApart(local, '1', 2)).toBe(false); // one process, asked for
    expect(workersApart({ ...local, processes: 1 }, undefined, 2)).toBe(false); // LOYALTY_PROCESSES=1
    expect(workersApart(local, '2', 2)).toBe(true);
    expect(workersApart(loadConfig({}), undefined, 8)).toBe(false); // the embedded store: one process
  });

  it('leaves a core to a PostgreSQL server on the same machine, unless told otherwise', () => {
    for (const url of ['postgres://postgres@127.0.0.1:5432/loyalty', 'postgres://localhost/loyalty', 'postgres://u@[::1]:5432/x', 'postgres:///loyalty?host=/var/run/postgresql', 'postgres:///loyalty']) {
      const local = loadConfig({ DATABASE_URL: url });
      expect(servingProcesses(local, undefined, 8), url).toBe(7);
      expect(servingProcesses(local, undefined, 2), url).toBe(1);
      expect(servingProcesses(local, undefined, 1), url).toBe(1);
      expect(servingProcesses(local, '2', 2), url).toBe(2);
      expect(servingProcesses({ ...local, processes: 2 }, undefined, 2), url).toBe(2);
    }
    expect(servingProcesses(loadConfig({ DATABASE_URL: 'postgres://u@db.internal:5432/loyalty' }), undefined, 2)).toBe(2);
    expect(servingProcesses(loadConfig({ DATABASE_URL: 'postgres://u@10.0.0.5/loyalty' }), undefined, 8)).toBe(8);
  });
});

describe.concurrent('loyalty serve and migrate refuse what they cannot start with', () => {
  it.each([
    ['serve', 'PORT', 'abc'],
    ['serve', 'PORT', '70000'],
    ['serve', 'LOYALTY_RATE_LIMIT_RPS', 'fast'],
    ['serve', 'DATABASE_URL', 'postgres://user:secret@[::1/db'],
    ['serve', 'EVENTSTORE_URL', 'not a url'],
    ['serve', 'EVENTSTORE_URL', 'kurrentdb://admin:secret@[::1'],
    ['migrate', 'DATABASE_URL', 'not a url'],
  ])('%s with %s=%j: exit 2, one line naming the variable', async (command, name, value) => {
    const run = await runCli([command], storeWith({ [name]: value }));
    expect(run.code, run.stderr).toBe(2);
    expectOneLine(run, name);
    expect(run.stderr).not.toContain('secret');
  }, 60_000);

  it.each(['serve', 'migrate'])('%s with a well-formed DATABASE_URL nobody answers: exit 1, one line naming it and where', async (command) => {
    const port = await freePort();
    const run = await runCli([command], storeWith({ DATABASE_URL: `postgres://loyalty:secret@127.0.0.1:${port}/loyalty` }));
    expect(run.code, run.stderr).toBe(1);
    expectOneLine(run, 'DATABASE_URL');
    expect(run.stderr).toContain(`127.0.0.1:${port}`);
    expect(run.stderr).not.toContain('secret');
  }, 60_000);

  it('serve with a well-formed EVENTSTORE_URL nobody answers: exit 1, one line naming it and where, never its password', async () => {
    const port = await freePort();
    const run = await runCli(['serve'], storeWith({ EVENTSTORE_URL: `kurrentdb://admin:secret@127.0.0.1:${port}?tls=false` }));
    expect(run.code, run.stderr).toBe(1);
    expectOneLine(run, 'EVENTSTORE_URL');
    expect(run.stderr).toContain(`KurrentDB at 127.0.0.1:${port}`);
    expect(run.stderr).not.toContain('secret');
  }, 60_000);

  it.each(['api', 'workers'])('serve --role %s on the embedded store: exit 2, saying a PostgreSQL server is needed', async (role) => {
    const run = await runCli(['serve', '--role', role], storeWith({}));
    expect(run.code, run.stderr).toBe(2);
    expectOneLine(run, 'DATABASE_URL');
    expect(run.stderr).toMatch(/PGlite/);
  }, 60_000);
});
