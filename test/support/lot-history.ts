import {
  applyReversal,
  creditLot,
  expireLot,
  type Lot,
  noticeLot,
  planDebit,
  releaseLot,
  returnShares,
  type ReversalPlan,
  spendable,
  takeShares,
} from '../../src/events/lots.js';

/** A customer's lots as a test writes its history by hand: the decider's pure lot functions, shares as events record them. */
export class LotBookFixture {
  lots: Lot[] = [];

  /** Makes a lot; its times as a credit event carries them. */
  credit(transactionId: string, amount: number, createdAt: string, availableAt: string | null, expiresAt: string | null) {
    this.lots = creditLot(this.lots, { transactionId, amount, createdAt, availableAt, expiresAt });
    return { available_at: availableAt, expires_at: expiresAt };
  }

  debit(amount: number): Array<{ transaction_id: string; amount: number }> {
    const shares = planDebit(this.lots, amount);
    if (!shares) throw new Error(`cannot debit ${amount}`);
    this.lots = takeShares(this.lots, shares);
    return shares;
  }

  giveBack(shares: Array<{ transaction_id: string; amount: number }>): void {
    this.lots = returnShares(this.lots, shares);
  }

  release(transactionId: string): void {
    this.lots = releaseLot(this.lots, transactionId);
  }

  notice(transactionId: string): void {
    this.lots = noticeLot(this.lots, transactionId);
  }

  expire(transactionId: string): number {
    const { lots, amount } = expireLot(this.lots, transactionId);
    this.lots = lots;
    return amount;
  }

  reverse(transactionId: string, plan: ReversalPlan): void {
    this.lots = applyReversal(this.lots, transactionId, plan);
  }

  balance(): number {
    return spendable(this.lots);
  }
}
