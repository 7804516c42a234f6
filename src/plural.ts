/**
 * A count with its noun, singular for exactly one: what the command line prints.
 *
 * @example
 * counted(1, 'stream'); // "1 stream"
 * counted(3, 'stream'); // "3 streams"
 */
export function counted(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}
