import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import { Argument, type Command, Option } from 'commander';
import type { Kysely } from 'kysely';
import { withoutQueryDeadline } from '../db/query-deadline.js';
import type { Database } from '../db/schema.js';
import { countExportRows, EXPORT_KINDS, type ExportKind, type ExportRequest, exportColumns, exportRows } from '../projections/export-rows.js';
import type { CliKit } from './cli-kit.js';
import { EXPORT_FORMATS, type ExportFormat, exportFormat } from './export-format.js';
import { exportProgressBar } from './progress-bar.js';

const NOUNS: Record<ExportKind, string> = { customers: 'customers', ledger: 'ledger lines', events: 'recorded events' };

export interface ExportProgress {
  start(total: number): void;
  update(done: number): void;
}

/**
 * Writes one export to `out`: the header, then page after page, waiting for `out` to drain when its
 * buffer is full, so memory holds one page whatever the size of the export. Reads one
 * repeatable-read snapshot: rows written meanwhile are not half in it. Without the query deadline
 * (like a rebuild): counting a million rows on a busy server may take longer than a request should.
 * Returns the rows written.
 */
export async function writeExport(
  db: Kysely<Database>,
  kind: ExportKind,
  format: ExportFormat,
  request: ExportRequest,
  out: NodeJS.WritableStream,
  progress?: ExportProgress,
): Promise<number> {
  const { header, lines } = exportFormat(format, exportColumns(kind));
  return withoutQueryDeadline(() => db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      progress?.start(await countExportRows(trx, kind, request));
      if (header && !out.write(header)) await once(out, 'drain');
      let done = 0;
      for await (const page of exportRows(trx, kind, request)) {
        done += page.length;
        if (!out.write(lines(page))) await once(out, 'drain');
        progress?.update(done);
      }
      return done;
    }));
}

/** `--from` / `--to`: an ISO 8601 date (midnight UTC) or date-time with `Z` or an offset. */
function instant(flag: string, fail: CliKit['fail']) {
  return (value: string | undefined): Date | undefined => {
    if (value === undefined) return undefined;
    const valid = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/.test(value);
    const at = new Date(value.length === 10 ? `${value}T00:00:00Z` : value);
    if (!valid || Number.isNaN(at.getTime())) throw fail(`${flag} must be an ISO 8601 date or date-time with Z or an offset (e.g. 2026-11-01 or 2026-11-01T00:00:00Z), not '${value}'.`);
    return at;
  };
}

/** The `--output` file, opened before anything is read: a path that cannot be written is one line, exit 1. */
async function openOutput(file: string, fail: CliKit['fail']): Promise<NodeJS.WritableStream & { end(): void }> {
  const out = createWriteStream(file);
  try {
    await once(out, 'open');
  } catch (error) {
    throw fail(`Cannot write '${file}': ${(error as Error).message}`);
  }
  return out;
}

/** `loyalty export customers|ledger|events --business ID [--from] [--to] --format csv|jsonl [--output FILE]`. */
export function registerExportCommands(program: Command, kit: CliKit): void {
  program
    .command('export')
    .description('write a business’s customers, ledger or recorded events as CSV or JSON Lines, streamed (progress on stderr)')
    .addArgument(new Argument('<what>', 'customers (analytics.customers), ledger (analytics.points_ledger) or events (analytics.events)').choices(EXPORT_KINDS))
    .requiredOption('--business <id>', 'the business')
    .addOption(new Option('--format <format>', 'csv (a header row, RFC 4180) or jsonl (one JSON object a line)').choices(EXPORT_FORMATS).makeOptionMandatory())
    .option('--from <iso>', 'only rows created at or after this date or date-time (inclusive)')
    .option('--to <iso>', 'only rows created before this date or date-time (exclusive)')
    .option('--output <file>', 'write to this file instead of stdout')
    .action((kind: ExportKind, opts: { business: string; format: ExportFormat; from?: string; to?: string; output?: string }) => {
      const from = instant('--from', kit.fail)(opts.from);
      const to = instant('--to', kit.fail)(opts.to);
      if (from && to && to <= from) throw kit.fail('--to must be later than --from.');
      return kit.withServices(async (services) => {
        if (!(await services.queries.access.business(opts.business))) throw kit.fail(`No business with id '${opts.business}'.`);
        const out = opts.output ? await openOutput(opts.output, kit.fail) : kit.io.stdout;
        const bar = exportProgressBar(kit.io.stderr);
        const started = performance.now();
        const written = await writeExport(services.db, kind, opts.format, { businessId: opts.business, from, to }, out, {
          start: (total) => bar.start(total, 0, { what: NOUNS[kind], rate: 0 }),
          update: (done) => bar.update(done, { rate: Math.round(done / Math.max((performance.now() - started) / 1000, 0.001)) }),
        }).finally(() => bar.stop());
        if (out !== kit.io.stdout) {
          out.end();
          await finished(out);
        }
        const seconds = ((performance.now() - started) / 1000).toFixed(1);
        kit.io.stderr.write(`Exported ${written} ${NOUNS[kind]} (${opts.format}) in ${seconds} s${opts.output ? ` to ${opts.output}` : ''}.\n`);
      });
    });
}
