/** A customer stream's event as `GET /customers/{id}/stream` returns it. */
export interface StreamEvent {
  type: string;
  data: { amount?: number; balance?: number } & Record<string, unknown>;
}

/**
 * Folds a customer's points events the way the ledger must: earns and adjustments add, deductions
 * take away. `after` is the balance after each points event, in stream order (what each event's own
 * `balance` must say).
 */
export function foldPoints(events: readonly StreamEvent[]) {
  let balance = 0;
  let earned = 0;
  let redeemed = 0;
  const after: Array<{ event: StreamEvent; balance: number }> = [];
  for (const e of events) {
    const amount = e.data.amount ?? 0;
    if (e.type === 'PointsEarned' || e.type === 'PointsAdjusted') {
      balance += amount;
      earned += amount;
    } else if (e.type === 'PointsDeducted') {
      balance -= amount;
      redeemed += amount;
    }
    if (e.type.startsWith('Points')) after.push({ event: e, balance });
  }
  return { balance, earned, redeemed, after };
}
