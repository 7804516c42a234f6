import { errors } from '../../errors.js';

/** Deepest nesting of objects and arrays a request body may have (CONTRACT.md §3). */
export const MAX_JSON_DEPTH = 32;

/**
 * Parses a request body the way CONTRACT.md §3 demands, refusing before anything recursive runs:
 * nesting deeper than 32 and duplicate keys in one object (`invalid_json`), then text no store can
 * keep, NUL or an unpaired UTF-16 surrogate in any key or string (`validation_error` naming where).
 */
export function parseStrictJson(text: string): unknown {
  const structural = scanStructure(text);
  if (structural) throw errors.invalidJson(structural);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw errors.invalidJson();
  }
  const bad = findUnstorableText(value, '');
  if (bad) throw errors.validation([{ path: bad.path || '(body)', message: bad.message }]);
  return value;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `text` is unusable as text for a store, or null: NUL or an unpaired UTF-16 surrogate. */
export function unstorableText(text: string): string | null {
  if (text.includes('\0')) return 'must not contain the NUL character (\\u0000)';
  if (LONE_SURROGATE.test(text)) return 'must not contain an unpaired UTF-16 surrogate';
  return null;
}

interface ObjectFrame {
  keys: Set<string>;
  expectingKey: boolean;
}

/**
 * One pass over the raw text, iterative, tracking only the open containers: the first structural
 * problem (too deep, a duplicate key), or null. Syntax errors are left to `JSON.parse`.
 */
function scanStructure(text: string): string | null {
  const stack: Array<ObjectFrame | null> = []; // null: an array
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      const start = i;
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) {
        if (text.charCodeAt(i) === 0x5c /* \ */) i++;
      }
      const frame = stack.at(-1);
      if (frame?.expectingKey) {
        let key: string;
        try {
          key = JSON.parse(text.slice(start, i + 1)) as string;
        } catch {
          return null; // malformed: JSON.parse says so
        }
        if (frame.keys.has(key)) return `duplicate key '${key}'`;
        frame.keys.add(key);
        frame.expectingKey = false;
      }
    } else if (ch === 0x7b /* { */ || ch === 0x5b /* [ */) {
      if (stack.length === MAX_JSON_DEPTH) return `nested deeper than ${MAX_JSON_DEPTH} levels`;
      stack.push(ch === 0x7b ? { keys: new Set(), expectingKey: true } : null);
    } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
      stack.pop();
    } else if (ch === 0x2c /* , */) {
      const frame = stack.at(-1);
      if (frame) frame.expectingKey = true;
    }
  }
  return null;
}

/** The first key or string (depth-first) that `unstorableText` refuses, with its dotted path. */
function findUnstorableText(value: unknown, path: string): { path: string; message: string } | null {
  if (typeof value === 'string') {
    const message = unstorableText(value);
    return message ? { path, message } : null;
  }
  if (value === null || typeof value !== 'object') return null;
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    const keyProblem = unstorableText(key);
    if (keyProblem) return { path: path || '(body)', message: `a key here ${keyProblem}` };
    const found = findUnstorableText(child, childPath);
    if (found) return found;
  }
  return null;
}
