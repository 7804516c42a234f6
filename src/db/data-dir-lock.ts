import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * One process at a time may open the embedded store: PGlite is a single-user PostgreSQL, and two
 * processes writing one data directory would corrupt it. The lock is a pid file; a lock left by a
 * process that no longer runs (killed with -9) is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'loyalty.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => rmSync(file, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(readFileSync(file, 'utf8'));
      if (Number.isInteger(holder) && holder !== process.pid && isRunning(holder)) {
        throw new DataDirLocked(dataDir, holder);
      }
      rmSync(file, { force: true });
    }
  }
  throw new DataDirLocked(dataDir, NaN);
}

export class DataDirLocked extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `The embedded store in ${dataDir} is in use by another process (pid ${pid}). ` +
        'Stop it first, or point DATABASE_URL at a PostgreSQL server to share a store between processes.',
    );
    this.name = 'DataDirLocked';
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
