import { readFileSync } from 'node:fs';
import { Argument, Command, Option } from 'commander';
import pino from 'pino';
import { PERMISSIONS, type Permission } from '../events/permissions.js';
import { PLAN_LIMITS } from '../commands/index.js';
import { loadConfig } from '../config.js';
import { migrateToLatest } from '../db/migrations.js';
import { ApiError } from '../errors.js';
import type { CommandContext } from '../events/metadata.js';
import { counted } from '../plural.js';
import { createServices, type Services } from '../services.js';
import { registerAuditCommands } from './audit-commands.js';
import type { CliKit } from './cli-kit.js';
import { type CliIo, processIo } from './cli-io.js';
import { registerExportCommands } from './export-commands.js';
import { registerLifecycleCommands } from './lifecycle-commands.js';
import { registerProjectionCommands } from './projection-commands.js';
import { describeKeys, provisionBusiness, setBusinessPlan } from './provision.js';
import { SERVE_ROLES, type ServeRole, serve } from './serve.js';
import { cliContext } from './cli-context.js';
import { textTable } from './text-table.js';
import { CliError } from './cli-error.js';

/** The package's version (package.json sits two folders up from src/cli and from dist/cli). */
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const planOption = () => new Option('--plan <plan>', 'plan of the business').choices(['free', 'unlimited']).default('unlimited');

/** Opens the store for one command, catching the read models up (unless told not to), and always closes it. */
function servicesOpener(io: CliIo): CliKit['withServices'] {
  return async (work, { catchUp = true } = {}) => {
    const config = loadConfig(io.env);
    // stdout belongs to the command's output (scripts parse --json); logs go to stderr.
    const logger = pino({ level: config.logLevel }, io.logDestination?.() ?? io.stderr);
    const services = await createServices({ config, logger });
    try {
      if (catchUp) await services.projections.catchUp();
      return await work(services);
    } finally {
      await services.close();
    }
  };
}

export { CliError };

async function resolveBusiness(services: Services, requested: string | undefined): Promise<string> {
  const businesses = await services.queries.access.businesses();
  if (requested) {
    if (!businesses.some((b) => b.id === requested)) throw new CliError(`No business with id '${requested}'.`);
    return requested;
  }
  if (businesses.length === 1) return businesses[0]!.id;
  if (businesses.length === 0) throw new CliError('The store has no business yet; run `loyalty init` first.');
  throw new CliError('The store has several businesses; say which with --business ID.');
}

/** The program, reading its settings from `io` and writing there (src/cli/run-cli.ts runs it). */
export function buildProgram(io: CliIo = processIo()): Command {
  const withServices = servicesOpener(io);
  const print = (json: boolean, value: unknown, text: string) => io.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);
  const program = new Command('loyalty')
    .description('Loyalty points service: an event-sourced ledger with an HTTP API.')
    .version(VERSION, '-V, --version', 'print the version')
    .showHelpAfterError()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });

  program
    .command('serve')
    .description('serve the HTTP API and/or run the workers (PORT, HOST, DATABASE_URL, EVENTSTORE_URL, LOYALTY_DATA_DIR, LOYALTY_PROCESSES)')
    .addOption(
      new Option('--role <role>', 'api: HTTP only; workers: projections and webhook delivery, no API (HTTP on PORT: /healthz, /readyz, /metrics only); all: both').choices(SERVE_ROLES).default('all'),
    )
    .option('--processes <n>', 'HTTP processes on a PostgreSQL server (default: LOYALTY_PROCESSES, else one per core); the embedded store serves with one')
    .action((opts: { role: ServeRole; processes?: string }) => serve(loadConfig(io.env), opts.role, opts.processes));

  program
    .command('migrate')
    .description('create or upgrade the database schema')
    .action(() =>
      withServices(async (services) => {
        const applied = await migrateToLatest(services.db);
        io.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Schema is up to date.\n');
      }),
    );

  program
    .command('init')
    .description('set up an empty store and print the first business’s keys, once')
    .option('--business <name>', 'name of the first business', 'My business')
    .addOption(planOption())
    .option('--json', 'print one JSON object: {business_id, private_key, public_key}')
    .action((opts: { business: string; plan: 'free' | 'unlimited'; json?: boolean }) =>
      withServices(async (services) => {
        if ((await services.queries.access.businesses()).length > 0) {
          throw new CliError('This store is already set up (it has a business). Use `loyalty businesses create` to add one.');
        }
        const created = await provisionBusiness(services, opts.business, opts.plan);
        print(!!opts.json, created, describeKeys(created, `Created business '${opts.business}' (${opts.plan}).`));
      }),
    );

  const businesses = program.command('businesses').description('manage businesses (tenants)');
  businesses
    .command('create')
    .description('add a business and print its first private and public keys, once')
    .requiredOption('--name <name>', 'name of the business')
    .addOption(planOption())
    .option('--json', 'print one JSON object: {business_id, private_key, public_key}')
    .action((opts: { name: string; plan: 'free' | 'unlimited'; json?: boolean }) =>
      withServices(async (services) => {
        const created = await provisionBusiness(services, opts.name, opts.plan);
        print(!!opts.json, created, describeKeys(created, `Created business '${opts.name}' (${opts.plan}).`));
      }),
    );
  businesses
    .command('list')
    .description('every business with its plan')
    .option('--json', 'print a JSON array')
    .action((opts: { json?: boolean }) =>
      withServices(async (services) => {
        const rows = (await services.queries.access.businesses()).map((b) => ({
          id: b.id,
          name: b.name,
          plan: b.plan,
          created_at: b.created_at.toISOString(),
        }));
        print(!!opts.json, rows, textTable(rows, { id: 'ID', plan: 'PLAN', created_at: 'CREATED', name: 'NAME' }, 'No businesses.'));
      }),
    );

  businesses
    .command('set-plan')
    .description('move a business to another plan (a free business at its limit of customers needs unlimited to add more)')
    .argument('<business_id>', 'the business')
    .addArgument(new Argument('<plan>', 'the new plan').choices(['free', 'unlimited']))
    .action((businessId: string, plan: 'free' | 'unlimited') =>
      withServices(async (services) => {
        if (!(await services.queries.access.business(businessId))) throw new CliError(`No business with id '${businessId}'.`);
        const { changed, customers } = await setBusinessPlan(services, businessId, plan);
        const limit = plan === 'free' ? `; the free plan allows ${PLAN_LIMITS.free}` : '';
        io.stdout.write(
          changed
            ? `Business ${businessId} is now on the ${plan} plan (${counted(customers, 'customer')}${limit}).\n`
            : `Business ${businessId} is already on the ${plan} plan; nothing changed.\n`,
        );
      }),
    );

  const keys = program.command('keys').description('manage API keys');
  keys
    .command('create')
    .description('create an API key and print it, once (only its hash is stored)')
    .addOption(new Option('--type <type>', 'key type').choices(['private', 'public']).makeOptionMandatory())
    .option('--permissions <list>', `comma-separated subset of: ${PERMISSIONS.join(', ')}`)
    .option('--name <name>', 'a label for the key')
    .option('--business <id>', 'business id (needed when the store has several)')
    .option('--json', 'print one JSON object: {id, type, permissions, key}')
    .action((opts: { type: 'private' | 'public'; permissions?: string; name?: string; business?: string; json?: boolean }) =>
      withServices(async (services) => {
        const permissions = opts.permissions?.split(',').map((p) => p.trim()).filter(Boolean);
        const unknown = permissions?.filter((p) => !(PERMISSIONS as readonly string[]).includes(p)) ?? [];
        if (unknown.length) throw new CliError(`Unknown permission(s): ${unknown.join(', ')}. Known: ${PERMISSIONS.join(', ')}.`);
        const businessId = await resolveBusiness(services, opts.business);
        const ctx = cliContext(services, businessId);
        const created = await services.commands.apiKeys.create(ctx, {
          type: opts.type,
          name: opts.name ?? null,
          permissions: (permissions as Permission[] | undefined) ?? null,
        });
        const row = (await services.queries.access.key(businessId, created.id))!;
        print(
          !!opts.json,
          { id: created.id, business_id: businessId, type: row.type, permissions: row.permissions, key: created.key },
          `${created.key}\n(id ${created.id}, ${row.type}, permissions: ${row.permissions.join(', ')}; shown once)`,
        );
      }),
    );
  keys
    .command('list')
    .description('every API key with its permissions and state (never the keys themselves)')
    .option('--business <id>', 'only this business')
    .option('--json', 'print a JSON array')
    .action((opts: { business?: string; json?: boolean }) =>
      withServices(async (services) => {
        const rows = (await services.queries.access.allKeys())
          .filter((k) => !opts.business || k.business_id === opts.business)
          .map((k) => ({
            id: k.id,
            business_id: k.business_id,
            type: k.type,
            name: k.name,
            key_hint: k.key_hint,
            permissions: k.permissions,
            created_at: k.created_at.toISOString(),
            revoked_at: k.revoked_at?.toISOString() ?? null,
          }));
        const shown = rows.map((k) => ({ ...k, state: k.revoked_at ? 'revoked' : 'active' }));
        const columns = { id: 'ID', business_id: 'BUSINESS', type: 'TYPE', key_hint: 'HINT', state: 'STATE', permissions: 'PERMISSIONS', name: 'NAME' };
        print(!!opts.json, rows, textTable(shown, columns, 'No keys.'));
      }),
    );
  keys
    .command('revoke <key_id>')
    .description('revoke an API key: refused on its next request')
    .option('--force', 'revoke it even if it is the business’s last active private key with keys:write')
    .action((keyId: string, opts: { force?: boolean }) =>
      withServices(async (services) => {
        const key = (await services.queries.access.allKeys()).find((k) => k.id === keyId);
        if (!key) throw new CliError(`No key with id '${keyId}'.`);
        const ctx = cliContext(services, key.business_id);
        // The revoke command's options, as far as the CLI uses them.
        const revoke: (c: CommandContext, id: string, options: { force: boolean }) => Promise<void> = services.commands.apiKeys.revoke;
        try {
          await revoke(ctx, keyId, { force: !!opts.force });
        } catch (error) {
          if (error instanceof ApiError && error.code === 'last_private_key') throw new CliError(`${error.message} Use --force to revoke it anyway.`);
          throw error;
        }
        io.stdout.write(`Revoked ${keyId}.\n`);
      }),
    );

  const kit: CliKit = { withServices, fail: (message) => new CliError(message), io };
  registerAuditCommands(program, kit);
  registerProjectionCommands(program, kit);
  registerLifecycleCommands(program, kit);
  registerExportCommands(program, kit);

  return program;
}
