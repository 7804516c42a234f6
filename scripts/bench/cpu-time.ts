/**
 * CPU time of processes from /proc (user + system): what a request costs, measured on a busy
 * machine where throughput is not (a process waiting for the CPU is not charged for it).
 */
import { readFileSync } from 'node:fs';
import { descendants } from '../../test/support/process-tree.js';
import { withClient } from './postgres.js';

const TICK = 100; // clock ticks per second (getconf CLK_TCK)

/** CPU milliseconds `pid` has used so far (with `thread`, that thread of it alone); 0 once it is gone. */
export function cpuMs(pid: number, thread?: number): number {
  try {
    const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICK;
  } catch {
    return 0;
  }
}

/** The PostgreSQL backends serving database `db` (this client's own excluded). */
export async function backendPids(db: string): Promise<number[]> {
  return withClient(async (c) => (await c.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [db])).rows.map((r) => r.pid));
}

/**
 * CPU used by a server's processes and its database's backends while `work` runs, in ms; of that,
 * the main thread's of `mainPid` (the one that serves HTTP); and how busy
 * the whole machine was meanwhile (a share of all its cores; 1 = every core all the time).
 */
export async function cpuDuring<T>(
  serverPid: number,
  db: string,
  work: () => Promise<T>,
  /** The process whose main thread is told apart (serving from several: the HTTP child, `ServerProcess.httpPid`). */
  mainPid = serverPid,
): Promise<{ result: T; nodeMs: number; postgresMs: number; mainThreadMs: number; machineBusy: number }> {
  const sample = async () => {
    const node = descendants(serverPid);
    const backends = await backendPids(db);
    return { node: new Map(node.map((p) => [p, cpuMs(p)])), backends: new Map(backends.map((p) => [p, cpuMs(p)])), main: cpuMs(mainPid, mainPid), machine: machineCpuMs() };
  };
  const before = await sample();
  const result = await work();
  const after = await sample();
  const used = (a: Map<number, number>, b: Map<number, number>) => [...a].reduce((sum, [pid, ms]) => sum + ms - (b.get(pid) ?? 0), 0);
  return {
    result,
    nodeMs: used(after.node, before.node),
    postgresMs: used(after.backends, before.backends),
    mainThreadMs: after.main - before.main,
    machineBusy: (after.machine.busy - before.machine.busy) / Math.max(1, after.machine.total - before.machine.total),
  };
}

/** Busy and total CPU time of the whole machine so far, in ms (all cores, from /proc/stat). */
export function machineCpuMs(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = fields[3]! + (fields[4] ?? 0); // idle + iowait
  return { busy: ((total - idle) * 1000) / TICK, total: (total * 1000) / TICK };
}

