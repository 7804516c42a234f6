/**
 * JSON with object keys sorted, so equal values serialize equally whatever their key order
 * (jsonb reorders keys, so values read back from PostgreSQL may come in another order).
 *
 * Exactly what `JSON.stringify` answers with a replacer that hands it every object with its
 * entries sorted (the definition the event hash chain was written with: docs/auditing.md). Built
 * the same way, without the replacer: one walk makes the sorted copies (calling `toJSON` as
 * `JSON.stringify` would, once), and `JSON.stringify` serializes them natively. About twice as
 * fast as serializing member by member in JavaScript, and one flat string instead of a rope of
 * pieces for the hash to flatten (the hash chain serializes every event).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortedCopy(value, ''));
}

function sortedCopy(input: unknown, key: string): unknown {
  let value = input;
  if (value !== null && (typeof value === 'object' || typeof value === 'bigint') && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON: (key: string) => unknown }).toJSON(key);
  }
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const copy = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) copy[i] = sortedCopy(value[i], String(i));
    return copy;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  sortKeys(keys);
  const copy: Record<string, unknown> = {};
  for (const k of keys) {
    const member = sortedCopy(record[k], k);
    // Left out here as JSON.stringify leaves them out of an object; a function kept in the copy
    // under the name `toJSON` would be called by it.
    if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
    if (k === '__proto__') Object.defineProperty(copy, k, { value: member, enumerable: true, writable: true, configurable: true });
    else copy[k] = member;
  }
  return copy;
}

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Sorts in place by code units. A few keys by insertion, which allocates nothing: `sort` copies
 * the array to a work area on every call, and was a tenth of what a lifecycle run allocated.
 */
function sortKeys(keys: string[]): void {
  if (keys.length > 16) {
    keys.sort(byCodeUnits);
    return;
  }
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
}

/** Deep equality of JSON values, insensitive to object key order. */
export function sameJson(a: unknown, b: unknown): boolean {
  return a === b || canonicalJson(a) === canonicalJson(b);
}
