import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { LISTEN_BACKLOG } from '../../src/cli/listen.js';
import { assertDistFresh, CLI_ENTRY } from '../support/dist-build.js';
import { createServerDatabase } from '../support/test-database.js';

/**
 * Helpers for tests that run the real `loyalty` program as a child process: the CLI, and the
 * server with its signals, crashes and restarts. The program runs from the build
 * (`node dist/cli.js …`, as installed): the global setup builds dist/ when it is older than src/,
 * and this module refuses to run a stale one (test/support/dist-build.ts).
 */

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** True when the suite runs against the PostgreSQL server of DATABASE_URL (else embedded PGlite). */
export const SERVER_MODE = Boolean(process.env.DATABASE_URL);

/** An empty store that child processes open through their environment. */
export interface ProcessStore {
  env: Record<string, string>;
  dispose(): Promise<void>;
}

/**
 * A fresh store: a new temp LOYALTY_DATA_DIR (embedded), or a new database on the server.
 *
 * `migrated: true` (embedded store): the directory starts as a copy of one that `loyalty migrate`
 * made in the global setup — an empty store whose schema is in place, as after a user's first
 * `migrate` — instead of nothing. That spares the first process on it PGlite's initdb and the
 * migrations (about 4 s of CPU each). Leave it off where the test is about a store's very first
 * start. On a server it changes nothing: the database is new and empty either way.
 */
export async function freshStore({ migrated = false }: { migrated?: boolean } = {}): Promise<ProcessStore> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const database = await createServerDatabase(serverUrl);
    return { env: { DATABASE_URL: database.url }, dispose: database.drop };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'loyalty-process-'));
  if (migrated) cpSync(inject('migratedStoreTemplate'), dir, { recursive: true });
  return { env: { LOYALTY_DATA_DIR: dir }, dispose: async () => rmSync(dir, { recursive: true, force: true }) };
}

/** The child's environment: ours without any store or port settings, plus the store's (test/cli/in-process.ts runs commands with it too). */
export function childEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of ['DATABASE_URL', 'LOYALTY_DATA_DIR', 'EVENTSTORE_URL', 'PORT', 'HOST', 'NODE_OPTIONS']) delete env[name];
  // Small pools: the suite runs two files at once, some with five server processes, on one
  // PostgreSQL server (max_connections 100); 20 connections each would run it out.
  return { ...env, LOG_LEVEL: 'warn', LOYALTY_DB_POOL_SIZE: '8', ...extra };
}

const running = new Set<ChildProcess>();
let checkedBuild = false;

function spawnLoyalty(args: string[], env: Record<string, string>): ChildProcess {
  if (!checkedBuild) assertDistFresh();
  checkedBuild = true;
  const child = spawn(process.execPath, [CLI_ENTRY, ...args], {
    cwd: REPO_ROOT,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

function exitOf(child: ChildProcess): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

/** Kills (SIGKILL) one child unless it has exited, and waits for it. */
export function killProcess(child: ChildProcess): Promise<Exit> {
  const exited = exitOf(child);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  return exited;
}

/** Kills every child this file started that is still running: call it in afterEach/afterAll. */
export async function killAllProcesses(): Promise<void> {
  await Promise.all([...running].map(killProcess));
}

export interface CliResult extends Exit {
  stdout: string;
  stderr: string;
}

/** Runs `loyalty ARGS…` to completion on the given store. */
export async function runCli(args: string[], store: ProcessStore): Promise<CliResult> {
  const child = spawnLoyalty(args, store.env);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exit = await exitOf(child);
  // 'exit' can come before the pipes are drained; 'close' comes after.
  if (child.stdout!.readable || child.stderr!.readable) await new Promise((resolve) => child.once('close', resolve));
  return { ...exit, stdout, stderr };
}

/** A port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  baseUrl: string;
  /** Everything printed on stdout so far. */
  readonly stdout: string;
  readonly stderr: string;
  exited: Promise<Exit>;
  signal(signal: NodeJS.Signals): void;
}

/** The child could not listen: its port was taken after it was found free. */
class PortTaken extends Error {}

/**
 * Starts `loyalty serve` on the store and resolves once it prints its "Listening on" line (with
 * `role: 'workers'`, which serves no API: its "Workers running" line). One process unless
 * `processes` says more (on a PostgreSQL server `serve` would otherwise use every core), or
 * `default` (no flag: what `serve` chooses on this machine): a test names the topology it means.
 */
export async function startServer(
  store: ProcessStore,
  options: { timeoutMs?: number; role?: 'all' | 'api' | 'workers'; processes?: number | 'default'; env?: Record<string, string> } = {},
): Promise<ServerProcess> {
  // A port found free can be taken before the child listens on it (by another test file's process,
  // or as the local port of an outgoing connection): then the child says so and exits, and the
  // start is tried again on another port.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServerOn(await freePort(), store, options);
    } catch (error) {
      if (attempt === 3 || !(error instanceof PortTaken)) throw error;
    }
  }
}

async function startServerOn(
  port: number,
  store: ProcessStore,
  { timeoutMs = 60_000, role, processes = 1, env = {} }: { timeoutMs?: number; role?: 'all' | 'api' | 'workers'; processes?: number | 'default'; env?: Record<string, string> },
): Promise<ServerProcess> {
  const ready = role === 'workers' ? 'Workers running' : 'Listening on';
  const args = ['serve', ...(role ? ['--role', role] : []), ...(processes === 'default' ? [] : ['--processes', String(processes)])];
  const child = spawnLoyalty(args, { ...store.env, ...env, PORT: String(port), HOST: '127.0.0.1' });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exited = exitOf(child);

  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail(`did not print "${ready}" within ${timeoutMs} ms`), timeoutMs);
    const onData = () => {
      if (!stdout.includes(ready)) return;
      cleanup();
      resolve();
    };
    const onExit = (code: number | null, signal: string | null) => fail(`exited (code ${code}, signal ${signal}) before listening`);
    function cleanup() {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.off('exit', onExit);
    }
    function fail(why: string) {
      cleanup();
      child.kill('SIGKILL');
      const Failure = stderr.includes('another process is listening there') ? PortTaken : Error;
      reject(new Failure(`loyalty serve ${why}\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`));
    }
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });

  return {
    child,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
    signal: (signal) => void child.kill(signal),
  };
}

/** Resolves with the exit, or rejects if the process is still running after `ms`. */
export function exitWithin(server: ServerProcess, ms: number): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`process ${server.child.pid} still running after ${ms} ms`)), ms);
    void server.exited.then((exit) => {
      clearTimeout(timer);
      resolve(exit);
    });
  });
}

/** Resolves once new connections to the port are refused (the server stopped listening). */
export async function untilRefused(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(true));
    });
    if (refused) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`port ${port} still accepts connections after ${timeoutMs} ms`);
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

/** One real HTTP request to a server process; JSON in, parsed JSON out. */
export async function api(
  baseUrl: string,
  method: string,
  urlPath: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers['x-api-key'] = options.key;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(baseUrl + urlPath, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

/** Every item of a list endpoint, following its `Link: <…>; rel="next"` headers. */
export async function listAll(baseUrl: string, urlPath: string, key: string): Promise<any[]> {
  const items: any[] = [];
  let next: string | null = urlPath;
  while (next) {
    const page = await api(baseUrl, 'GET', next, { key });
    if (page.status !== 200) throw new Error(`GET ${next} answered ${page.status}: ${JSON.stringify(page.body)}`);
    items.push(...page.body);
    next = page.headers.get('link')?.match(/<([^>]+)>;\s*rel="next"/)?.[1] ?? null;
  }
  return items;
}

/** The keys a first start (or `init` without --json) prints. */
export function printedKeys(stdout: string): { privateKey: string | undefined; publicKey: string | undefined } {
  return { privateKey: stdout.match(/sk_live_[A-Za-z0-9]+/)?.[0], publicKey: stdout.match(/pk_live_[A-Za-z0-9]+/)?.[0] };
}

/**
 * The backlog of the socket listening on `port` (what `ss` shows as Send-Q of a listening socket):
 * how many connections the kernel holds for the server to accept.
 */
export function listenBacklog(port: number): number {
  const line = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' }).trim().split('\n')[0] ?? '';
  const sendQ = line.trim().split(/\s+/)[2];
  if (sendQ === undefined) throw new Error(`nothing listens on port ${port}: ${JSON.stringify(line)}`);
  return Number(sendQ);
}

/** The backlog `loyalty serve` asks for (LISTEN_BACKLOG), as the kernel caps it (`net.core.somaxconn`). */
export function expectedBacklog(): number {
  return Math.min(LISTEN_BACKLOG, Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8').trim()));
}

