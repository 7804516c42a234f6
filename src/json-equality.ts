/**
 * JSON with object keys sorted, so equal values serialize equally whatever their key order
 * (jsonb reorders keys, so values read back from PostgreSQL may come in another order).
 *
 * Exactly what `JSON.stringify` answers with a replacer that hands it every object with its
 * entries sorted (the definition the event hash chain was written with: docs/auditing.md), built
 * in one walk without the sorted copies: `toJSON` first, `undefined` and functions left out of
 * objects and `null` in arrays, and keys in the order such a copy has them — array-index keys
 * ("0", "12") in numeric order first, as JavaScript orders any object's, then the others sorted.
 */
export function canonicalJson(value: unknown): string {
  return serialized(value, '') ?? (undefined as unknown as string);
}

function serialized(input: unknown, key: string): string | undefined {
  let value = input;
  if (value !== null && (typeof value === 'object' || typeof value === 'bigint') && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON: (key: string) => unknown }).toJSON(key);
  }
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += `${i > 0 ? ',' : ''}${serialized(value[i], String(i)) ?? 'null'}`;
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  let out = '{';
  let first = true;
  for (const k of orderedKeys(record)) {
    const member = serialized(record[k], k);
    if (member === undefined) continue;
    out += `${first ? '' : ','}${JSON.stringify(k)}:${member}`;
    first = false;
  }
  return `${out}}`;
}

/** An array index as JavaScript orders property keys (canonical, below 2^32 − 1). */
const isIndex = (key: string) => {
  const first = key.charCodeAt(0);
  // Most keys start with a letter: no pattern to run for them (the hash chain serializes every event).
  return first >= 48 && first <= 57 && /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 4_294_967_295;
};

function orderedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (!keys.some(isIndex)) return keys;
  return [...keys.filter(isIndex).sort((a, b) => Number(a) - Number(b)), ...keys.filter((k) => !isIndex(k))];
}

/** Deep equality of JSON values, insensitive to object key order. */
export function sameJson(a: unknown, b: unknown): boolean {
  return a === b || canonicalJson(a) === canonicalJson(b);
}
