import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * Tests that run the real `loyalty` program as a child process run the build (`node dist/cli.js`):
 * `node --import tsx src/cli.ts` transpiles the program again in every process, which cost more
 * than the test itself (about 0.6 s of CPU per process, and a suite starts hundreds). These make
 * sure the build they run is the source under test.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SRC = path.join(ROOT, 'src');
const DIST = path.join(ROOT, 'dist');
/** Whatever the build depends on besides src/ itself. */
const CONFIGS = ['tsconfig.json', 'tsconfig.build.json'].map((name) => path.join(ROOT, name));

export const CLI_ENTRY = path.join(DIST, 'cli.js');

function mtime(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * The first source file whose build output is missing or older than it (or than the build
 * configuration), or null when dist/ is the build of src/ as it is now.
 */
export function staleBuildOutput(): string | null {
  const configChanged = Math.max(...CONFIGS.map(mtime));
  const walk = (dir: string): string | null => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        const stale = walk(full);
        if (stale) return stale;
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        const built = mtime(path.join(DIST, path.relative(SRC, full)).replace(/\.ts$/, '.js'));
        if (built === 0 || built < statSync(full).mtimeMs || built < configChanged) return path.relative(ROOT, full);
      }
    }
    return null;
  };
  return walk(SRC);
}

/**
 * Compiles src/ to dist/ (the `tsc` half of `npm run build`) unless dist/ is already fresh. Called
 * once per run, from the global setup. A type error does not stop the run (tsc still emits, and
 * `npm run typecheck` is where type errors are reported); a build that leaves dist/ stale does.
 */
export async function ensureDistBuilt(): Promise<void> {
  if (!staleBuildOutput()) return;
  // Incremental first (as `npm run build`); it skips a source whose content it has seen, so a file
  // that was only touched, or an output deleted by hand, takes a full build.
  let output = await tsc([]);
  if (staleBuildOutput()) output = await tsc(['--incremental', 'false']);
  const stale = staleBuildOutput();
  if (stale) throw new Error(`could not build dist/ (${stale} has no fresh output): tsc -p tsconfig.build.json\n${output}`);
  if (output) console.warn(`[dist build] tsc reported errors; the tests run the emitted code:\n${output}`);
}

/** Runs `tsc -p tsconfig.build.json ...args`; resolves with its report when it found errors, else ''. */
async function tsc(args: string[]): Promise<string> {
  const bin = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    await promisify(execFile)(process.execPath, [bin, '-p', 'tsconfig.build.json', ...args], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
    return '';
  } catch (error) {
    const { stdout = '', stderr = '', message } = error as { stdout?: string; stderr?: string; message: string };
    return `${stdout}${stderr}`.trim() || message;
  }
}

/** Throws unless dist/ is fresh: a process test must never run an old build of the program. */
export function assertDistFresh(): void {
  const stale = staleBuildOutput();
  if (stale) {
    throw new Error(`dist/ is older than ${stale}: the process tests run the build. \`npm test\` builds it first; or run \`npm run build\`.`);
  }
}
