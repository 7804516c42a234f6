/**
 * Due work on a customer (CONTRACT.md §13), pure: releases, expiring notices, expiries and rolling
 * downgrades that have come due by a moment, decided one at a time in due order, each on the state
 * the previous one left. Every event carries its due instant, not the moment it was noticed.
 */
import type { TierDefinition } from '../../events/program-events.js';
import type { LotShare, TierSnapshot } from '../../events/customer-events.js';
import { type CustomerEvent, type CustomerState, evolveCustomer, type Lifecycle, type LifecyclePolicy, qualifyingCredits } from './customer-state.js';
import type { DueWork } from '../../events/lots.js';
import { dueTransactionId } from './due-ids.js';
import { addDays, type DowngradePlan, nextDowngrade } from './rolling-tiers.js';

/** A guard against a state that keeps producing work (it cannot: each step retires what it did). */
const MAX_STEPS = 100_000;

export function tierSnapshot(tier: TierDefinition): TierSnapshot {
  return { id: tier.tier_id, name: tier.name, points_threshold: tier.points_threshold, multiplier: tier.multiplier, benefits: tier.benefits };
}

/** The rolling downgrade the state is headed for (at any time), or null. */
export function plannedDowngrade(state: CustomerState, policy: LifecyclePolicy): DowngradePlan | null {
  const { mode, window_days } = policy.settings.tier_qualification;
  if (mode !== 'rolling' || window_days === null || !state.tier) return null;
  const held = policy.tiers.find((t) => t.tier_id === state.tier!.id)?.points_threshold ?? state.tier.points_threshold;
  const bounds = [state.tierCheckedAt, policy.qualificationSince && addDays(policy.qualificationSince, window_days)].filter((b): b is string => !!b);
  const notBefore = bounds.sort().at(-1) ?? '1970-01-01T00:00:00.000Z';
  return nextDowngrade(qualifyingCredits(state), window_days, held, notBefore, policy.tiers);
}

/**
 * When the next due work falls due (ISO), null when none will without a new event: the earliest
 * release, expiring notice, expiry and rolling downgrade. The scheduler's index and the decider agree.
 */
export function nextDueAt(state: CustomerState, policy: LifecyclePolicy): string | null {
  const lots = state.lots.nextDue(policy.settings.expiring_notice_days);
  const downgrade = plannedDowngrade(state, policy)?.at ?? null;
  return lots === null || (downgrade !== null && downgrade < lots) ? downgrade : lots;
}

/** The events of the work due at `lifecycle.now`, in due order ([] when nothing is due), and the state they lead to. */
export function decideDue(state: CustomerState, lifecycle: Lifecycle): { events: CustomerEvent[]; after: CustomerState } {
  const events: CustomerEvent[] = [];
  const now = lifecycle.now.toISOString();
  // The lots' work is listed once, not again after each step (O(n²) for n lots due at once): a
  // piece of it changes only its own lot and never makes another piece due or undue (a release
  // leaves its lot's notice or expiry as due as it was, a downgrade touches no lot), so the rest of
  // the list is what listing again would give (a property test compares the two).
  const work = state.lots.dueWork(lifecycle.now, lifecycle.settings.expiring_notice_days);
  let done = 0;
  let current = state;
  for (let step = 0; step < MAX_STEPS; step++) {
    const event = nextDueEvent(current, lifecycle, now, work, done);
    if (!event) return { events, after: current };
    if (event.type === 'PointsExpired') done += event.data.lots.length;
    else if (event.type !== 'TierDowngraded') done++;
    events.push(event);
    current = evolveCustomer(current, { ...event, recordedAt: lifecycle.now });
  }
  throw new Error(`customer ${state.id}: due work did not settle`);
}

/**
 * The next event of due work: the first piece of lot work left (`work[done]`) or a downgrade due
 * before it. An expiry takes with it every lot expiring at the same instant (the pieces after it
 * in due order): one event and ledger line per customer and instant, not one per lot.
 */
function nextDueEvent(state: CustomerState, lifecycle: Lifecycle, now: string, pieces: DueWork[], done: number): CustomerEvent | null {
  const work = pieces[done];
  const downgrade = plannedDowngrade(state, lifecycle);
  const dueDowngrade = downgrade && downgrade.at <= now ? downgrade : null;
  if (dueDowngrade && (!work || dueDowngrade.at < work.at)) {
    return {
      type: 'TierDowngraded',
      data: {
        previous_tier: state.tier!,
        new_tier: dueDowngrade.tier && tierSnapshot(dueDowngrade.tier),
        qualifying_points: dueDowngrade.qualifying,
        downgraded_at: dueDowngrade.at,
      },
    };
  }
  if (!work) return null;
  const lot = state.lots.get(work.transactionId)!;
  switch (work.kind) {
    case 'release':
      return {
        type: 'PointsReleased',
        data: {
          transaction_id: dueTransactionId(lot.transactionId, 'release', work.at),
          lot_transaction_id: lot.transactionId,
          amount: lot.remaining,
          balance: state.balance + lot.remaining,
          released_at: work.at,
        },
      };
    case 'notice':
      return { type: 'PointsExpiringNotified', data: { lot_transaction_id: lot.transactionId, amount: lot.remaining, expires_at: lot.expiresAt! } };
    case 'expire': {
      const lots: LotShare[] = [];
      let amount = 0;
      let pending = 0;
      for (let i = done; i < pieces.length && pieces[i]!.kind === 'expire' && pieces[i]!.at === work.at; i++) {
        const expiring = i === done ? lot : state.lots.get(pieces[i]!.transactionId)!;
        lots.push({ transaction_id: expiring.transactionId, amount: expiring.remaining });
        amount += expiring.remaining;
        if (expiring.status === 'pending') pending += expiring.remaining;
      }
      return {
        type: 'PointsExpired',
        data: {
          transaction_id: dueTransactionId(lot.transactionId, 'expire', work.at, lot.expiries),
          lots,
          amount,
          pending,
          balance: state.balance - (amount - pending),
          expired_at: work.at,
        },
      };
    }
  }
}
