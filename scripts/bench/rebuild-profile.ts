/**
 * The rebuild's cost per event, for A/B runs on a busy machine:
 *
 *   tsx scripts/bench/rebuild-profile.ts seed EVENTS NAME     seeds database NAME as the rebuild row does (kept)
 *   tsx scripts/bench/rebuild-profile.ts seed-spends EVENTS NAME   the same size, histories interleaved, one event in ten a deduction
 *   tsx scripts/bench/rebuild-profile.ts run NAME [CLI_ROOT]  copies NAME, runs `projections rebuild` on the copy
 *
 * `run` copies the seeded database (`create database … template NAME`), runs `node CLI_ROOT/dist/cli.js
 * projections rebuild` on the copy as its own process (CLI_ROOT defaults to this checkout, so another
 * checkout's build can be measured against the same seed), and prints its wall time, its CPU (user +
 * system, from the shell that waits for it) and the CPU of the copy's PostgreSQL backends (from /proc,
 * sampled every 50 ms while it runs: up to one sample's worth of each backend's last moments is
 * missed), then checks the read models and drops the copy. REBUILD_NODE_FLAGS adds node flags
 * (e.g. `--cpu-prof --cpu-prof-dir=DIR`); REBUILD_PG_LOG=1 logs the copy's statements with their durations.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cpuMs } from './cpu-time.js';
import { databaseUrl, withClient } from './postgres.js';
import { seedCustomers, seedCustomersWithSpends } from './rebuild.js';
import { initStore, REPO_ROOT } from './service.js';

const [command, ...args] = process.argv.slice(2);

async function seed(events: number, name: string): Promise<void> {
  await withClient((c) => c.query(`create database ${name}`));
  const keys = await initStore({ databaseUrl: databaseUrl(name) });
  const customers = Math.max(1, Math.round(events / 100));
  const t0 = performance.now();
  await seedCustomers(name, keys.business_id, customers, events);
  process.stdout.write(`seeded ${name}: ${events} events over ${customers} customers in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
}

async function seedWithSpends(events: number, name: string): Promise<void> {
  await withClient((c) => c.query(`create database ${name}`));
  const keys = await initStore({ databaseUrl: databaseUrl(name) });
  const customers = Math.max(1, Math.round(events / 100));
  const t0 = performance.now();
  const balances = await seedCustomersWithSpends(name, keys.business_id, customers, events);
  process.stdout.write(`seeded ${name}: ${events} events over ${customers} customers, one in ten a deduction, in ${((performance.now() - t0) / 1000).toFixed(1)} s; balances sum ${balances}\n`);
}

async function runOnce(template: string, root: string): Promise<void> {
  const name = `wt_rebuild_run_${randomBytes(3).toString('hex')}`;
  await withClient((c) => c.query(`create database ${name} template ${template}`));
  // REBUILD_PG_LOG=1: every statement of the rebuild in the server's log, with its duration.
  if (process.env.REBUILD_PG_LOG) await withClient((c) => c.query(`alter database ${name} set log_min_duration_statement = 0`));
  try {
    const logged = await withClient(async (c) => Number((await c.query('select count(*) as n from events')).rows[0]!.n), name);
    await withClient((c) => c.query('checkpoint'));
    const backends = new Map<number, { first: number; last: number }>();
    const sample = async () => {
      const pids = await withClient(
        async (c) => (await c.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [name])).rows,
      );
      for (const { pid } of pids) {
        const ms = cpuMs(pid);
        if (ms === 0) continue;
        const seen = backends.get(pid);
        if (seen) seen.last = ms;
        else backends.set(pid, { first: 0, last: ms }); // a backend of the rebuild: all of its CPU counts
      }
    };
    const flags = (process.env.REBUILD_NODE_FLAGS ?? '').split(' ').filter(Boolean);
    const node = [process.execPath, ...flags, path.join(root, 'dist/cli.js'), 'projections', 'rebuild'].map((a) => `'${a}'`).join(' ');
    // The shell waits for node, so its children's CPU (field cutime/cstime of its own stat) is node's.
    const script = `${node} > /dev/null; s=$(cat /proc/$$/stat); echo "STAT $s"`;
    const t0 = performance.now();
    const child = spawn('sh', ['-c', script], { cwd: root, env: { ...process.env, DATABASE_URL: databaseUrl(name), LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    let running = true;
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => { running = false; resolve(code ?? -1); }));
    const poller = (async () => {
      while (running) {
        await sample().catch(() => undefined);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const code = await exited;
    const seconds = (performance.now() - t0) / 1000;
    await poller;
    if (code !== 0) throw new Error(`rebuild exited ${code}`);
    const stat = out.slice(out.indexOf('STAT ') + 5).trim();
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cliMs = ((Number(fields[13]) + Number(fields[14])) * 1000) / 100;
    const pgMs = [...backends.values()].reduce((sum, b) => sum + b.last - b.first, 0);
    const check = await withClient(
      async (c) =>
        (
          await c.query<{ customers: string; points: string; ledger: string; lots: string }>(
            `select (select count(*) from customers) as customers, (select coalesce(sum(points_balance), 0) from customers) as points,
                    (select count(*) from ledger_entries) as ledger, (select count(*) from lots) as lots`,
          )
        ).rows[0]!,
      name,
    );
    const load = (await import('node:os')).loadavg()[0]!.toFixed(1);
    process.stdout.write(
      `${root}: ${logged} events in ${seconds.toFixed(1)} s = ${Math.round(logged / seconds)} events/s; CPU CLI ${(cliMs / 1000).toFixed(1)} s + PostgreSQL ${(pgMs / 1000).toFixed(1)} s ` +
        `= ${Math.round(((cliMs + pgMs) * 1000) / logged)} ms per 1,000 events (CLI ${Math.round((cliMs * 1000) / logged)}, PG ${Math.round((pgMs * 1000) / logged)}); ` +
        `load ${load}; read models: ${check.customers} customers, ${check.ledger} ledger lines, ${check.lots} lots, balances ${check.points}\n`,
    );
  } finally {
    await withClient((c) => c.query(`drop database if exists ${name} with (force)`));
  }
}

if (command === 'seed') await seed(Number(args[0]), args[1]!);
else if (command === 'seed-spends') await seedWithSpends(Number(args[0]), args[1]!);
else if (command === 'run') await runOnce(args[0]!, path.resolve(args[1] ?? REPO_ROOT));
else throw new Error('usage: rebuild-profile.ts seed EVENTS NAME | run NAME [CLI_ROOT]');
