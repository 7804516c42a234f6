import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { CHILD_ROLE_VARIABLE } from '../../src/cluster/cluster-messages.js';
import { descendants } from '../../test/support/process-tree.js';
import { createDatabase, databaseUrl } from './postgres.js';

const run = promisify(execFile);

/** The repository root (scripts/bench/ is two levels down). */
export const REPO_ROOT = path.resolve(import.meta.dirname, '..', '..');

/**
 * How the service is started. `dist` (the default): `node dist/cli.js …`, built by `npm run build`
 * first, which is what `npm start` runs in production. `source` (BENCH_SERVER=source): `node
 * --import tsx src/cli.ts …`, which skips the build but carries tsx's loader thread (more memory).
 */
export const SERVER_MODE: 'dist' | 'source' = process.env.BENCH_SERVER === 'source' ? 'source' : 'dist';
const CLI = SERVER_MODE === 'dist' ? ['dist/cli.js'] : ['--import', 'tsx', 'src/cli.ts'];

/** The command that runs `loyalty` as SERVER_MODE says: node and its arguments before the CLI's own. */
export const cliCommand = (): string[] => [process.execPath, ...CLI];

/** `npm run build` when the server runs from dist/. */
export async function buildService(root = REPO_ROOT): Promise<void> {
  if (SERVER_MODE !== 'dist') return;
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  try {
    await run(npm, ['run', 'build', '--silent'], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    // tsc still emits on type errors; only a missing entry point stops the bench.
    if (!existsSync(path.join(root, 'dist', 'cli.js'))) throw error;
    process.stderr.write(`[bench] npm run build reported errors; running the emitted dist/ anyway:\n${(error as { stdout?: string }).stdout ?? ''}\n`);
  }
}

/** Where the service keeps its data: a PostgreSQL server database, or an embedded PGlite directory. */
export type Store = { databaseUrl: string } | { dataDir: string };

function storeEnv(store: Store): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  delete env.LOYALTY_DATA_DIR;
  if ('databaseUrl' in store) env.DATABASE_URL = store.databaseUrl;
  else env.LOYALTY_DATA_DIR = store.dataDir;
  return env;
}

export interface Keys {
  business_id: string;
  private_key: string;
  public_key: string;
}

/** `loyalty init --json`: the first business and its keys, created before the server starts (by the checkout at `root`). */
export async function initStore(store: Store, root = REPO_ROOT): Promise<Keys> {
  const { stdout } = await run(process.execPath, [...CLI, 'init', '--json'], {
    cwd: root,
    env: { ...storeEnv(store), LOG_LEVEL: 'warn' },
  });
  return JSON.parse(stdout) as Keys;
}

/** Runs one CLI command to its end (`loyalty …` as an operator would), against `store`; its stdout. */
export async function runCli(store: Store, args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [...CLI, ...args], {
    cwd: REPO_ROOT,
    env: { ...storeEnv(store), LOG_LEVEL: 'warn' },
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

export interface ServerOptions {
  store: Store;
  /** Extra node flags, e.g. `--cpu-prof`. */
  nodeFlags?: string[];
  /**
   * HTTP processes (`serve --processes`); default 1, the rows measured so far (on PostgreSQL `serve`
   * would otherwise fork one per core, and `pid`, `rssMb` and `--cpu-prof` would see the primary only).
   * `default`: no flag, as `npm start` runs it (`servingProcesses` in src/config.ts decides).
   */
  processes?: number | 'default';
  /** Where the server's stdout and stderr go. */
  logFile: string;
  /** The checkout whose service runs (default: this one); built already, when it runs from dist/. */
  root?: string;
  /** A command the server runs under, e.g. `['valgrind', '--tool=callgrind']` (its start may then take minutes). */
  wrapper?: string[];
}

/** The service running as its own process (`loyalty serve`), on a free port of 127.0.0.1. */
export class ServerProcess {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    private readonly exited: Promise<number | null>,
  ) {}

  get pid(): number {
    return this.child.pid!;
  }

  static async start(options: ServerOptions): Promise<ServerProcess> {
    // The server writes its logs straight into the file (no pipe through the bench process, which
    // is busy generating load); its first lines tell the port it listens on.
    const out = openSync(options.logFile, 'a');
    // Only this start's lines tell its port: a log file may already hold an earlier server's.
    const from = statSync(options.logFile).size;
    const processes = options.processes === 'default' ? [] : ['--processes', String(options.processes ?? 1)];
    // BENCH_NODE_FLAGS: flags for every server of the run (its child processes inherit them), e.g. `--cpu-prof --cpu-prof-dir=DIR`.
    const flags = [...(options.nodeFlags ?? []), ...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [])];
    const command = [...(options.wrapper ?? []), process.execPath, ...flags, ...CLI, 'serve', ...processes];
    const child = spawn(command[0]!, command.slice(1), {
      cwd: options.root ?? REPO_ROOT,
      env: {
        ...storeEnv(options.store),
        PORT: '0',
        HOST: '127.0.0.1',
        // The bench drives one API key far past the default per-key limit (100 req/s): off, unless
        // BENCH_RATE_LIMIT_RPS sets a limit (a high one measures what the limiter costs a request).
        LOYALTY_RATE_LIMIT_RPS: process.env.BENCH_RATE_LIMIT_RPS ?? '0',
        ...(process.env.BENCH_LOG_LEVEL ? { LOG_LEVEL: process.env.BENCH_LOG_LEVEL } : {}),
      },
      stdio: ['ignore', out, out],
    });
    closeSync(out);
    let exitCode: number | null | undefined;
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => {
        exitCode = code;
        resolve(code);
      }),
    );
    const startSeconds = options.wrapper ? 600 : 60;
    const deadline = Date.now() + startSeconds * 1000;
    for (;;) {
      const match = /Listening on (http:\/\/\S+)/.exec((await readFile(options.logFile)).subarray(from).toString('utf8'));
      if (match) return new ServerProcess(child, match[1]!, exited);
      if (exitCode !== undefined) throw new Error(`the server exited with code ${exitCode} before listening; see ${options.logFile}`);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`the server did not start listening within ${startSeconds} s; see ${options.logFile}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Resident set size of the server, in MB (from /proc/<pid>/status): its process and, serving from several, its children. */
  async rssMb(): Promise<number> {
    let kb = 0;
    for (const pid of descendants(this.pid)) {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      kb += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
    }
    return kb / 1024;
  }

  /** The process that answers HTTP: the server's own, or, serving from several (a primary), its first HTTP child. */
  httpPid(): number {
    for (const pid of descendants(this.pid).slice(1)) {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (environ.includes(`${CHILD_ROLE_VARIABLE}=api`)) return pid;
    }
    return this.pid;
  }

  /** SIGTERM (a graceful stop: in-flight requests finish, then the store closes); SIGKILL after 20 s. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 20_000);
    const code = await this.exited;
    clearTimeout(timer);
    return code;
  }
}

/**
 * A fresh database (`createDatabase(prefix)`), its first business and keys, and the service of
 * `options.root` serving it. The caller stops the server and drops the database.
 */
export async function serveFresh(
  prefix: string,
  options: Omit<ServerOptions, 'store' | 'logFile'> & { logFile: (database: string) => string },
): Promise<{ database: string; store: Store; keys: Keys; server: ServerProcess }> {
  const database = await createDatabase(prefix);
  const store: Store = { databaseUrl: databaseUrl(database) };
  const keys = await initStore(store, options.root);
  const server = await ServerProcess.start({ ...options, store, logFile: options.logFile(database) });
  return { database, store, keys, server };
}
