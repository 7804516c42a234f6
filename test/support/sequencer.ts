import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Longest files first, so that the two workers finish together instead of one starting a long file
 * near the end. Vitest's own order does this only with the durations it cached from an earlier run
 * (node_modules/.vite, which `npm ci` empties: a CI run has none); without them it runs larger
 * files first, and the long files are not the large ones: they are the ones that start the real
 * program, a PostgreSQL cluster or a browser. So: the longer of the cached duration (where there is
 * one) and an estimate from what the file imports.
 */
const SLOW_IMPORTS = /from '[^']*\/(?:process-helpers|own-postgres|browser|earning-service)\.js'/;
/** What a file that starts processes is assumed to take (ms) when no run has been cached. */
const PROCESS_FILE_ESTIMATE_MS = 60_000;
/** Per byte of source, for the other files (a 10 KB file of in-process tests: about 5 s). */
const MS_PER_BYTE = 0.5;

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const cache = this.ctx.cache;
    const weight = new Map<TestSpecification, number>();
    for (const file of files) {
      const key = `${file.project.name}:${relative(this.ctx.config.root, file.moduleId)}`;
      const cached = cache.getFileTestResults(key);
      // A file that failed last time runs first, as with vitest's own order.
      if (cached?.failed) {
        weight.set(file, Number.MAX_SAFE_INTEGER);
        continue;
      }
      const source = readFileSync(file.moduleId, 'utf8');
      const estimate = SLOW_IMPORTS.test(source) ? PROCESS_FILE_ESTIMATE_MS : source.length * MS_PER_BYTE;
      // Never less than the estimate: the server pass finds the embedded pass's durations cached,
      // and there the server-only files (clusters, several processes on one database) were
      // skipped in a few seconds; taken as is, they ran last and the pass ended on them.
      weight.set(file, Math.max(cached?.duration ?? 0, estimate));
    }
    return [...files].sort((a, b) => weight.get(b)! - weight.get(a)!);
  }
}
