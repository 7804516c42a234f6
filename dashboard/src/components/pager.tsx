import { useState } from 'preact/hooks';

/** Keyset pages (CONTRACT.md §4): the `starting_after` of each page seen, so Previous can go back. */
export function useCursor() {
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  return {
    after: cursors.at(-1) ?? null,
    /** `&starting_after=…` for the current page, or nothing on the first. */
    query: () => (cursors.at(-1) ? `&starting_after=${encodeURIComponent(cursors.at(-1)!)}` : ''),
    isFirst: cursors.length <= 1,
    back: () => setCursors(cursors.slice(0, -1)),
    forward: (next: string) => setCursors([...cursors, next]),
    reset: () => setCursors([null]),
  };
}

export function Pager({ cursor, next, labels = ['Previous page', 'Next page'] }: { cursor: ReturnType<typeof useCursor>; next: string | null | undefined; labels?: [string, string] }) {
  if (cursor.isFirst && !next) return null;
  return (
    <div class="pager">
      <button type="button" disabled={cursor.isFirst} onClick={cursor.back}>
        {labels[0]}
      </button>
      <button type="button" disabled={!next} onClick={() => next && cursor.forward(next)}>
        {labels[1]}
      </button>
    </div>
  );
}
