/**
 * Rows as aligned text columns under a header row, for list commands (their `--json` prints the
 * rows themselves). An empty list prints `empty` instead.
 *
 * ```ts
 * textTable([{ id: 'key_…', type: 'private' }], { id: 'ID', type: 'TYPE' }, 'No keys.')
 * ```
 */
export function textTable<Row extends Record<string, unknown>>(rows: Row[], columns: { [K in keyof Row]?: string }, empty: string): string {
  if (rows.length === 0) return empty;
  const keys = Object.keys(columns) as Array<keyof Row>;
  const cells = [keys.map((key) => columns[key]!), ...rows.map((row) => keys.map((key) => cell(row[key])))];
  const widths = keys.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  return cells.map((line) => line.map((value, i) => (i === line.length - 1 ? value : value.padEnd(widths[i]!))).join('  ').trimEnd()).join('\n');
}

const cell = (value: unknown): string => (value === null || value === undefined ? '-' : Array.isArray(value) ? value.join(',') : String(value));
