import cliProgress, { type Options, Presets, SingleBar } from 'cli-progress';

/**
 * The `projections rebuild` bar, on stderr so stdout stays the command's output (cli-progress
 * draws only on a terminal). Until a rate is known, its ETA reads `--`: cli-progress keeps the
 * ETA as `'0'`, `'NULL'` (NaN) or `'INF'` then, which its time format would print as `0s`, `LLs`
 * or `NFs`.
 *
 * @example
 * const bar = rebuildProgressBar();
 * bar.start(total, 0, { projector: 'customers', rate: 0 });
 */
export function rebuildProgressBar(stream: NodeJS.WritableStream = process.stderr, options: Partial<Options> = {}): SingleBar {
  return new SingleBar(
    {
      stream,
      format: '{projector} [{bar}] {percentage}% | {value}/{total} events | {rate} events/s | ETA {eta_formatted}',
      hideCursor: true,
      etaBuffer: 50,
      formatTime: (seconds, opts, roundTo) => (typeof seconds === 'number' && Number.isFinite(seconds) ? cliProgress.Format.TimeFormat(seconds, opts, roundTo) : '--'),
      ...options,
    },
    Presets.shades_classic,
  );
}
