import cliProgress, { type Options, Presets, SingleBar } from 'cli-progress';

/**
 * The `projections rebuild` bar, on stderr so stdout stays the command's output (cli-progress
 * draws only on a terminal). Until a rate is known, its ETA reads `--`: cli-progress keeps the
 * ETA as `'0'`, `'NULL'` (NaN) or `'INF'` then, which its time format would print as `0s`, `LLs`
 * or `NFs`.
 *
 * @example
 * const bar = rebuildProgressBar();
 * bar.start(total, 0, { projector: 'customers', rate: 0, stage: '' });
 * bar.update(total, { stage: REBUILD_STAGES.indexes });
 */
export function rebuildProgressBar(stream: NodeJS.WritableStream = process.stderr, options: Partial<Options> = {}): SingleBar {
  return progressBar(stream, '{projector} [{bar}] {percentage}% | {value}/{total} events | {rate} events/s | ETA {eta_formatted}{stage}', options);
}

/** What the rebuild bar says after the replay, while there are no events left to count. */
export const REBUILD_STAGES = { replay: '', indexes: " | building the copies' indexes", swap: ' | swapping the copies in' } as const;

/**
 * The `loyalty export` bar, on stderr (stdout carries the export). Drawn when stderr is not a
 * terminal too, a line every 2 s, so an export run from cron or CI shows that it moves.
 *
 * @example
 * const bar = exportProgressBar();
 * bar.start(total, 0, { what: 'ledger lines', rate: 0 });
 */
export function exportProgressBar(stream: NodeJS.WritableStream = process.stderr, options: Partial<Options> = {}): SingleBar {
  return progressBar(stream, 'export [{bar}] {percentage}% | {value}/{total} {what} | {rate}/s | ETA {eta_formatted}', {
    noTTYOutput: true,
    notTTYSchedule: 2_000,
    ...options,
  });
}

function progressBar(stream: NodeJS.WritableStream, format: string, options: Partial<Options>): SingleBar {
  return new SingleBar(
    {
      stream,
      format,
      hideCursor: true,
      etaBuffer: 50,
      formatTime: (seconds, opts, roundTo) => (typeof seconds === 'number' && Number.isFinite(seconds) ? cliProgress.Format.TimeFormat(seconds, opts, roundTo) : '--'),
      ...options,
    },
    Presets.shades_classic,
  );
}
