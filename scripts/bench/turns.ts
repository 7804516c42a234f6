/**
 * Two things measured in turns, A B B A per round, so that the machine's drift from one minute to
 * the next (15–25% here, docs/performance.md) hits both alike: `b`'s figure over `a`'s per round
 * (each the sum of its two turns), and the median of those. Each turn returns its figure (a rate).
 */
export async function inTurns(rounds: number, a: () => Promise<number>, b: () => Promise<number>): Promise<{ ratios: number[]; median: number }> {
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const a1 = await a();
    const b1 = await b();
    const b2 = await b();
    const a2 = await a();
    ratios.push((b1 + b2) / Math.max(Number.EPSILON, a1 + a2));
  }
  return { ratios, median: median(ratios) };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
