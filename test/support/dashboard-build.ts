import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DASHBOARD_DIR } from '../../src/http/routes/dashboard-routes.js';

const SOURCES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dashboard');

/** The newest modification time under `dir` (0 when it does not exist). */
function newest(dir: string): number {
  let latest = 0;
  try {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
    }
  } catch {
    return 0;
  }
  return latest;
}

/**
 * Builds the dashboard (as `npm run build` does) when dist/dashboard is missing or older than its
 * sources, so tests never exercise a stale build. Called once per run, from the global setup
 * (a build empties dist/dashboard first: it must not run while a test file serves it).
 */
export async function ensureDashboardBuilt(): Promise<void> {
  let built = 0;
  try {
    built = statSync(path.join(DASHBOARD_DIR, 'index.html')).mtimeMs;
  } catch {
    built = 0;
  }
  if (built > 0 && built >= newest(SOURCES)) return;
  const { build } = await import('vite');
  await build({ configFile: path.join(SOURCES, 'vite.config.ts'), logLevel: 'warn' });
}
