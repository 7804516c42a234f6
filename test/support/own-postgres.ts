import { execFile, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe } from 'vitest';
import { freePort, SERVER_MODE } from '../e2e/process-helpers.js';

/**
 * A throwaway PostgreSQL cluster for fault-injection tests: `initdb` into a temp directory, a
 * postmaster on a free 127.0.0.1 port (its Unix socket inside the directory, trust auth), and
 * stop / start / destroy so a test can take the database away from a running service.
 *
 * initdb refuses to run as root, so as root every binary runs as the `postgres` user (`runuser`)
 * and the directory is handed to that user.
 *
 * Speed: `initdb --no-sync` and `fsync=off`. That is safe for these tests, including
 * `stop('immediate')`: an immediate stop kills the server without a checkpoint, and the next start
 * replays the WAL (crash recovery). Every committed transaction's WAL was written to the OS
 * before the commit returned, and the OS (which does not crash here) keeps it in its page cache
 * whether or not it reached the disk; fsync only matters when the machine itself goes down.
 */

const PG_ROOT = '/usr/lib/postgresql';
const execFileAsync = promisify(execFile);

function binDir(): string | null {
  if (!existsSync(PG_ROOT)) return null;
  const versions = readdirSync(PG_ROOT)
    .filter((v) => existsSync(path.join(PG_ROOT, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(PG_ROOT, versions[0], 'bin') : null;
}

const asRoot = process.getuid?.() === 0;

/** Why no cluster can be started on this machine, or null when one can. */
export function ownPostgresUnavailable(): string | null {
  if (!binDir()) return `no PostgreSQL server binaries (initdb) under ${PG_ROOT}`;
  if (asRoot && spawnSync('runuser', ['-u', 'postgres', '--', 'true']).status !== 0) {
    return 'running as root, and `runuser -u postgres` is not available (initdb refuses root)';
  }
  return null;
}

/**
 * `describe` for tests that bring their own cluster. They run the same in both CI passes, so they
 * run in the embedded one only; where no cluster can be started they are skipped. Either way the
 * reason is in the suite's name and printed.
 */
export function describeWithOwnCluster(name: string, tests: () => void): void {
  const reason = ownPostgresUnavailable() ?? (SERVER_MODE ? 'it starts its own PostgreSQL cluster, so it runs in the embedded pass only' : null);
  if (reason) console.warn(`skipped "${name}": ${reason}`);
  describe.skipIf(reason !== null)(`${name} (own PostgreSQL cluster)${reason ? ` — skipped: ${reason}` : ''}`, tests);
}

export interface OwnPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  /** Stops the server: `fast` (clean shutdown) or `immediate` (no checkpoint: the next start does crash recovery). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port; resolves once it accepts connections. */
  start(): Promise<void>;
  /**
   * Freezes the server without closing anything: SIGSTOP to the postmaster, then to every process
   * it forked (backends and auxiliary processes), until none is left running. Open connections stay
   * open and new ones are accepted by the kernel, but nothing answers: a hung host, as clients see it.
   */
  freeze(): Promise<void>;
  /** SIGCONT to every process `freeze` stopped (and any child of the postmaster). Idempotent; `destroy` calls it. */
  thaw(): void;
  /** Stops it (killing the postmaster if it will not stop) and removes its directory. Idempotent. */
  destroy(): Promise<void>;
  /** The server's log so far (for failure messages). */
  log(): string;
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const reason = ownPostgresUnavailable();
  if (reason) throw new Error(`cannot start a PostgreSQL cluster: ${reason}`);
  const bin = binDir()!;
  const dir = mkdtempSync(path.join(tmpdir(), 'loyalty-own-pg-'));
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'server.log');
  if (asRoot) {
    const { uid, gid } = postgresUser();
    chownSync(dir, uid, gid);
  }
  const port = await freePort();

  const run = async (program: string, args: string[]) => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(bin, program), ...args]] : [path.join(bin, program), args];
    try {
      await execFileAsync(file, argv, { cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C', LC_ALL: 'C' } });
    } catch (error) {
      const e = error as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${program} ${args.join(' ')} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}\n--- server log ---\n${readLog()}`);
    }
  };
  const readLog = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  const postmasterPid = (): number | null => {
    const pidFile = path.join(dataDir, 'postmaster.pid');
    if (!existsSync(pidFile)) return null;
    const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  };
  const serverOptions = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${dir}`,
    '-c fsync=off',
    '-c max_connections=200',
  ].join(' ');

  let running = false;
  let destroyed = false;
  const frozen = new Set<number>();
  const cluster: OwnPostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await run('pg_ctl', ['start', '-w', '-t', '30', '-D', dataDir, '-l', logFile, '-o', serverOptions]);
      running = true;
    },
    async stop(mode = 'fast') {
      await run('pg_ctl', ['stop', '-w', '-t', '30', '-m', mode, '-D', dataDir]);
      running = false;
    },
    async freeze() {
      const pid = postmasterPid();
      if (!pid) throw new Error('freeze: the server is not running');
      // The postmaster first, so it forks nothing new; then its children, until a pass finds no new one.
      signal(pid, 'SIGSTOP');
      frozen.add(pid);
      for (let pass = 0; pass < 10; pass++) {
        const fresh = childrenOf(pid).filter((child) => !frozen.has(child));
        if (fresh.length === 0 && pass > 0) break;
        for (const child of fresh) {
          signal(child, 'SIGSTOP');
          frozen.add(child);
        }
      }
      // Signals are delivered asynchronously: wait until each process is really stopped.
      const deadline = Date.now() + 5_000;
      while ([...frozen].some((p) => !isStopped(p))) {
        if (Date.now() > deadline) throw new Error(`freeze: processes ${[...frozen].filter((p) => !isStopped(p)).join(', ')} did not stop`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    thaw() {
      const pid = postmasterPid();
      for (const p of new Set([...frozen, ...(pid ? [pid, ...childrenOf(pid)] : [])])) signal(p, 'SIGCONT');
      frozen.clear();
    },
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      // A frozen server could be neither stopped nor killed cleanly (its children would stay stopped).
      cluster.thaw();
      if (running || postmasterPid()) {
        await cluster.stop('immediate').catch(() => {
          const pid = postmasterPid();
          if (pid) killQuietly(pid);
        });
      }
      rmSync(dir, { recursive: true, force: true });
    },
    log: readLog,
  };

  try {
    await run('initdb', ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '--encoding=UTF8', '--locale=C']);
    await cluster.start();
  } catch (error) {
    await cluster.destroy();
    throw error;
  }
  return cluster;
}

function postgresUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) throw new Error('no postgres user in /etc/passwd');
  return { uid: Number(uid), gid: Number(gid) };
}

function killQuietly(pid: number): void {
  signal(pid, 'SIGKILL');
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/** `/proc/<pid>/stat`, split after the command name (which may hold spaces and parentheses): [state, ppid, …]. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

function childrenOf(parent: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => statFields(pid)?.[1] === String(parent));
}

/** Stopped by a signal (state T), or gone. */
function isStopped(pid: number): boolean {
  const state = statFields(pid)?.[0];
  return state === undefined || state === 'T';
}
