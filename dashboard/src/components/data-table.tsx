import type { ComponentChildren } from 'preact';
import type { Page } from '../api.js';
import type { Loaded } from '../load.js';
import { LoadError, Loading } from './ui.js';

export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
  /** Right-aligned, tabular figures. */
  numeric?: boolean;
  /** Hidden on a phone, where the table must fit 390 px. */
  wide?: boolean;
}

/** A table of rows, one column definition each (the dashboard's every list). */
export function DataTable<T>({ rows, columns, rowKey, className }: { rows: T[]; columns: Column<T>[]; rowKey: (row: T) => string | number; className?: string }) {
  const cls = (c: Column<T>) => [c.numeric ? 'num' : '', c.wide ? 'hide-narrow' : ''].join(' ').trim() || undefined;
  return (
    <div class="table-wrap">
      <table class={className}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" class={cls(c)} key={c.header}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((c) => (
                <td class={cls(c)} key={c.header}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A loaded page of a list: its error, a loading note, the empty state, or what `children` makes of the items. */
export function Listing<T>({ loaded, empty, children }: { loaded: Loaded<Page<T>>; empty: ComponentChildren; children: (items: T[], next: string | null) => ComponentChildren }) {
  if (loaded.error) return <LoadError error={loaded.error} />;
  if (!loaded.data) return <Loading />;
  if (loaded.data.items.length === 0) return <>{empty}</>;
  return <>{children(loaded.data.items, loaded.data.next)}</>;
}
