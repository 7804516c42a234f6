/**
 * The event loop's time for one customer decision, by what the customer's history holds: the cost
 * that grows with a history and that no throughput row shows until one customer is large enough
 * to stall a server. Pure: the decider alone, no database. Usage:
 *   tsx scripts/bench/decision-cost.ts [sizes=100,1000,3000]
 * Prints, per size n:
 * - lifetime: ms per earn decision of a customer with n credits (the default policy), the baseline;
 * - expiring: the same, each credit expiring a year after it was made (its notice not sent yet);
 * - rolling: ms per earn decision of a customer holding a tier, with n credits in a rolling window;
 * - deduct: ms per deduct decision of a customer with n open lots (none spent yet);
 * - deducts: µs to fold one more deduct onto a customer with n deducts before it.
 */
import { customerDecider, type CustomerCommand, type CustomerEvent, type CustomerState } from '../../src/commands/customer/customer-decider.js';
import { DEFAULT_PROGRAM_SETTINGS, type TierDefinition } from '../../src/events/program-events.js';

const sizes = (process.argv[2] ?? '100,1000,3000').split(',').map(Number);
const START = Date.parse('2026-01-01T00:00:00.000Z');
const MINUTE = 60_000;
const TIERS: TierDefinition[] = [{ tier_id: 'tier_silver', name: 'Silver', points_threshold: 100, multiplier: 1, benefits: [], metadata: {} }];
const id = (i: number) => `txn_${String(i).padStart(20, '0')}`;

function fold(events: Array<{ event: CustomerEvent; at: number }>): CustomerState {
  let state = customerDecider.initialState();
  for (const { event, at } of events) state = customerDecider.evolve(state, { ...event, recordedAt: new Date(at) });
  return state;
}

const registered = {
  event: {
    type: 'CustomerRegistered',
    data: { customer_id: 'cus_probe', business_id: 'bus_probe', email: null, phone: null, first_name: null, last_name: null, external_reference: null, metadata: {} },
  } as CustomerEvent,
  at: START,
};

const YEAR = 365 * 86_400_000;
const earned = (i: number, amount: number, balance: number, expiresAt: string | null = null): CustomerEvent => ({
  type: 'PointsEarned',
  data: { transaction_id: id(i), amount, base_amount: amount, multiplier: 1, balance, reference: null, description: null, metadata: {}, available_at: null, expires_at: expiresAt },
});

/** Mean ms of `run` over enough repetitions to take about half a second, after a warm-up. */
function timed(run: () => void): number {
  for (let i = 0; i < 5; i++) run();
  let reps = 0;
  const started = performance.now();
  while (performance.now() - started < 500) {
    run();
    reps++;
  }
  return (performance.now() - started) / reps;
}

/** A customer with `n` earns of 10 points a minute apart (each expiring a year on, with `expiring`), and a command at the minute after the last. */
function customerWith(n: number, settings = DEFAULT_PROGRAM_SETTINGS, expiring = false) {
  const expiry = (i: number) => (expiring ? new Date(START + i * MINUTE + YEAR).toISOString() : null);
  const history = [registered, ...Array.from({ length: n }, (_, i) => ({ event: earned(i, 10, 10 * (i + 1), expiry(i)), at: START + i * MINUTE }))];
  const lifecycle = { settings, qualificationSince: null, tiers: TIERS, now: new Date(START + n * MINUTE + 1_000) };
  return { state: fold(history), lifecycle };
}

function points(pointsType: 'earn' | 'deduct', lifecycle: ReturnType<typeof customerWith>['lifecycle']): CustomerCommand {
  return { type: 'RecordPoints', pointsType, transactionId: 'txn_probe', amount: 5, applyMultiplier: false, description: null, reference: null, metadata: {}, tiers: TIERS, lifecycle };
}

function lifetime(n: number): number {
  const { state, lifecycle } = customerWith(n);
  return timed(() => customerDecider.decide(points('earn', lifecycle), state));
}

function expiring(n: number): number {
  const { state, lifecycle } = customerWith(n, DEFAULT_PROGRAM_SETTINGS, true);
  return timed(() => customerDecider.decide(points('earn', lifecycle), state));
}

function rolling(n: number): number {
  const { state: folded, lifecycle } = customerWith(n, { ...DEFAULT_PROGRAM_SETTINGS, tier_qualification: { mode: 'rolling', window_days: 365 } });
  const state: CustomerState = { ...folded, tier: { id: 'tier_silver', name: 'Silver', points_threshold: 100, multiplier: 1, benefits: [] }, tierCheckedAt: new Date(START).toISOString() };
  return timed(() => customerDecider.decide(points('earn', lifecycle), state));
}

function deduct(n: number): number {
  const { state, lifecycle } = customerWith(n);
  return timed(() => customerDecider.decide(points('deduct', lifecycle), state));
}

function deducts(n: number): number {
  const big = { event: earned(0, 1_000_000_000, 1_000_000_000), at: START };
  const deduct = (i: number): CustomerEvent => ({
    type: 'PointsDeducted',
    data: { transaction_id: id(i), amount: 1, balance: 1_000_000_000 - i, reference: null, description: null, metadata: {}, lots: [{ transaction_id: id(0), amount: 1 }] },
  });
  const state = fold([registered, big, ...Array.from({ length: n }, (_, i) => ({ event: deduct(i + 1), at: START + i }))]);
  const next = { ...deduct(n + 1), recordedAt: new Date(START + n) };
  return timed(() => customerDecider.evolve(state, next)) * 1_000;
}

for (const n of sizes) {
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  console.log(
    `n=${n}: earn decision ${ms(lifetime(n))} (lifetime tiers), ${ms(expiring(n))} (each credit expiring), ${ms(rolling(n))} (rolling); deduct decision ${ms(deduct(n))}; one more deduct folded ${deducts(n).toFixed(1)} µs`,
  );
}
