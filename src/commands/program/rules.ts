import { errors } from '../../errors.js';
import type { Condition, EventTypeDefinition, Rule } from '../../events/program-events.js';
import { sameJson } from '../../json-equality.js';

/** The value at a dotted path (`order.total`) of an event's properties; undefined when absent. */
export function valueAt(properties: unknown, path: string): unknown {
  let current: unknown = properties;
  for (const key of path.split('.')) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function compare(actual: unknown, expected: unknown): number | null {
  if (typeof actual === 'number' && typeof expected === 'number') return actual - expected;
  if (typeof actual === 'string' && typeof expected === 'string') return actual < expected ? -1 : actual > expected ? 1 : 0;
  return null; // different types never compare: the condition does not hold
}


export function conditionHolds(condition: Condition, properties: unknown): boolean {
  const actual = valueAt(properties, condition.property);
  switch (condition.op) {
    case 'exists':
      return (actual !== undefined && actual !== null) === (condition.value ?? true);
    case 'eq':
      return sameJson(actual, condition.value);
    case 'ne':
      return !sameJson(actual, condition.value);
    case 'in':
      return Array.isArray(condition.value) && condition.value.some((v) => sameJson(actual, v));
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const order = compare(actual, condition.value);
      if (order === null) return false;
      return condition.op === 'gt' ? order > 0 : condition.op === 'gte' ? order >= 0 : condition.op === 'lt' ? order < 0 : order <= 0;
    }
    default: {
      const exhaustive: never = condition.op;
      return exhaustive;
    }
  }
}

/** What one rule is worth for these properties: 0 unless all its conditions hold; never negative. */
export function rulePoints(rule: Rule, properties: unknown): number {
  if (!(rule.conditions ?? []).every((c) => conditionHolds(c, properties))) return 0;
  let points = rule.points ?? 0;
  // 0 per unit adds nothing, even for units that overflow to Infinity (0 × Infinity is NaN).
  if (rule.points_per_unit && rule.unit_property !== undefined) {
    const units = valueAt(properties, rule.unit_property);
    if (typeof units === 'number' && Number.isFinite(units)) {
      points += Math.floor(units / (rule.unit_size ?? 1)) * rule.points_per_unit;
    }
  }
  points = Math.max(0, Math.floor(points));
  return rule.max_points === undefined ? points : Math.min(points, rule.max_points);
}

/** Base points of an event: the type's default plus every applying rule (before the tier multiplier). */
export function basePoints(eventType: Pick<EventTypeDefinition, 'default_points' | 'rules'>, properties: unknown): number {
  return eventType.rules.reduce((sum, rule) => sum + rulePoints(rule, properties), eventType.default_points);
}

/** floor(points × multiplier), exact for multipliers of at most two decimals (100 × 1.15 = 115). */
export function applyMultiplier(points: number, multiplier: number): number {
  return Math.floor((points * Math.round(multiplier * 100)) / 100);
}

/** The most one event may award (CONTRACT.md §1: a single amount is at most 1,000,000,000). */
export const MAX_EVENT_POINTS = 1_000_000_000;

/**
 * What an event is worth: its base points and those awarded under the tier `multiplier`
 * (CONTRACT.md §8). Rules scale with the event's properties, so nothing bounds them in advance:
 * more than MAX_EVENT_POINTS awarded (or no finite number) is 422 `points_out_of_range`.
 *
 * @example eventPoints({ default_points: 10, rules: [] }, {}, 1.5) // { base: 10, awarded: 15 }
 */
export function eventPoints(
  eventType: Pick<EventTypeDefinition, 'default_points' | 'rules'>,
  properties: unknown,
  multiplier: number,
): { base: number; awarded: number } {
  const base = basePoints(eventType, properties);
  // Checked before multiplying too: the product of a huge base is not exact.
  const awarded = base <= MAX_EVENT_POINTS ? applyMultiplier(base, multiplier) : Number.POSITIVE_INFINITY;
  if (!(awarded <= MAX_EVENT_POINTS)) {
    throw errors.pointsOutOfRange(
      `This event would award more than ${MAX_EVENT_POINTS.toLocaleString('en-US')} points (the most one event may award); nothing was recorded.`,
    );
  }
  return { base, awarded };
}
