/** The line formats of `loyalty export`. */
export const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A value as text: times in ISO 8601 UTC with milliseconds, objects (metadata, properties) as JSON. */
function text(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** RFC 4180: a field holding a comma, quote or line break is quoted, its quotes doubled; null is empty. */
function csvField(value: unknown): string {
  const s = text(value);
  if (s === null) return '';
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** JSON with times as ISO strings, jsonb values as nested objects. */
function jsonValue(value: unknown): unknown {
  return value instanceof Date ? value.toISOString() : value;
}

/**
 * Turns an export's pages into text: `header` once (CSV: the column names; JSON Lines: nothing),
 * then `lines(rows)` for each page, each line ending in `\n`.
 *
 * @example
 * const format = exportFormat('csv', ['customer_id', 'email']);
 * format.header + format.lines([['cust_1', 'a@example.com']]); // 'customer_id,email\ncust_1,a@example.com\n'
 */
export function exportFormat(format: ExportFormat, columns: string[]): { header: string; lines: (rows: unknown[][]) => string } {
  if (format === 'csv') {
    return { header: `${columns.map(csvField).join(',')}\n`, lines: (rows) => rows.map((row) => `${row.map(csvField).join(',')}\n`).join('') };
  }
  return {
    header: '',
    lines: (rows) => rows.map((row) => `${JSON.stringify(Object.fromEntries(columns.map((name, i) => [name, jsonValue(row[i])])))}\n`).join(''),
  };
}
