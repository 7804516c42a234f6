import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyMultiplier, basePoints, conditionHolds, eventPoints, MAX_EVENT_POINTS, rulePoints, valueAt } from '../../src/commands/program/rules.js';
import { expectApiError } from '../support/decider-spec.js';
import type { Condition, Rule } from '../../src/events/program-events.js';

const when = (property: string, op: Condition['op'], value?: unknown): Condition =>
  value === undefined ? { property, op } : { property, op, value };

const order = { amount: 120, channel: 'web', tags: ['vip'], order: { total: 99.5, items: { count: 3 }, coupon: null } };

describe('event type rules', () => {
  describe('property paths', () => {
    it('read top-level and nested fields through dots', () => {
      expect(valueAt(order, 'amount')).toBe(120);
      expect(valueAt(order, 'order.total')).toBe(99.5);
      expect(valueAt(order, 'order.items.count')).toBe(3);
      expect(valueAt(order, 'order.coupon')).toBeNull();
    });

    it('give undefined for missing fields, paths through non-objects and inherited keys', () => {
      expect(valueAt(order, 'missing')).toBeUndefined();
      expect(valueAt(order, 'order.missing.deeper')).toBeUndefined();
      expect(valueAt(order, 'amount.value')).toBeUndefined();
      expect(valueAt(order, 'order.coupon.code')).toBeUndefined();
      expect(valueAt(order, 'toString')).toBeUndefined();
      expect(valueAt(order, 'order.constructor')).toBeUndefined();
    });
  });

  describe('conditions', () => {
    it('eq and ne compare values of the same type exactly', () => {
      expect(conditionHolds(when('channel', 'eq', 'web'), order)).toBe(true);
      expect(conditionHolds(when('channel', 'eq', 'store'), order)).toBe(false);
      expect(conditionHolds(when('order.items.count', 'eq', 3), order)).toBe(true);
      expect(conditionHolds(when('tags', 'eq', ['vip']), order)).toBe(true);
      expect(conditionHolds(when('channel', 'ne', 'store'), order)).toBe(true);
      expect(conditionHolds(when('channel', 'ne', 'web'), order)).toBe(false);
    });

    it('eq, ne and in compare objects as JSON does, whatever their key order', () => {
      const properties = { item: { colour: 'red', size: 'L' } };
      expect(conditionHolds(when('item', 'eq', { colour: 'red', size: 'L' }), properties)).toBe(true);
      expect(conditionHolds(when('item', 'eq', { size: 'L', colour: 'red' }), properties)).toBe(true);
      expect(conditionHolds(when('item', 'ne', { size: 'L', colour: 'red' }), properties)).toBe(false);
      expect(conditionHolds(when('item', 'in', [{ size: 'L', colour: 'red' }]), properties)).toBe(true);
      expect(conditionHolds(when('item', 'eq', { colour: 'red', size: 'M' }), properties)).toBe(false);
      // Arrays keep their order.
      expect(conditionHolds(when('tags', 'eq', ['b', 'a']), { tags: ['a', 'b'] })).toBe(false);
    });

    it('eq never matches a value of another type (the string "120" is not the number 120)', () => {
      expect(conditionHolds(when('amount', 'eq', '120'), order)).toBe(false);
      expect(conditionHolds(when('order.items.count', 'eq', true), order)).toBe(false);
      expect(conditionHolds(when('missing', 'eq', null), order)).toBe(false);
    });

    it('ne holds for a missing field or a value of another type (it is simply not equal)', () => {
      expect(conditionHolds(when('missing', 'ne', 'web'), order)).toBe(true);
      expect(conditionHolds(when('amount', 'ne', '120'), order)).toBe(true);
    });

    it('gt, gte, lt and lte order numbers, including nested ones', () => {
      expect(conditionHolds(when('amount', 'gt', 119), order)).toBe(true);
      expect(conditionHolds(when('amount', 'gt', 120), order)).toBe(false);
      expect(conditionHolds(when('amount', 'gte', 120), order)).toBe(true);
      expect(conditionHolds(when('amount', 'gte', 120.01), order)).toBe(false);
      expect(conditionHolds(when('order.total', 'lt', 100), order)).toBe(true);
      expect(conditionHolds(when('order.total', 'lt', 99.5), order)).toBe(false);
      expect(conditionHolds(when('order.total', 'lte', 99.5), order)).toBe(true);
      expect(conditionHolds(when('order.total', 'lte', 99.49), order)).toBe(false);
    });

    it('gt, gte, lt and lte order strings by code point', () => {
      expect(conditionHolds(when('channel', 'gt', 'app'), order)).toBe(true);
      expect(conditionHolds(when('channel', 'lt', 'app'), order)).toBe(false);
      expect(conditionHolds(when('channel', 'gte', 'web'), order)).toBe(true);
      expect(conditionHolds(when('channel', 'lte', 'wea'), order)).toBe(false);
    });

    it('comparisons never hold across types or on missing fields', () => {
      for (const op of ['gt', 'gte', 'lt', 'lte'] as const) {
        expect(conditionHolds(when('amount', op, '120'), order), `${op} number vs string`).toBe(false);
        expect(conditionHolds(when('channel', op, 5), order), `${op} string vs number`).toBe(false);
        expect(conditionHolds(when('missing', op, 0), order), `${op} missing`).toBe(false);
        expect(conditionHolds(when('order.coupon', op, 0), order), `${op} null`).toBe(false);
        expect(conditionHolds(when('order', op, 0), order), `${op} object`).toBe(false);
      }
    });

    it('in holds when the value is one of the listed ones, of the same type', () => {
      expect(conditionHolds(when('channel', 'in', ['store', 'web']), order)).toBe(true);
      expect(conditionHolds(when('channel', 'in', ['store', 'app']), order)).toBe(false);
      expect(conditionHolds(when('amount', 'in', ['120']), order)).toBe(false);
      expect(conditionHolds(when('order.items.count', 'in', [1, 2, 3]), order)).toBe(true);
      expect(conditionHolds(when('missing', 'in', ['web']), order)).toBe(false);
      expect(conditionHolds(when('channel', 'in', []), order)).toBe(false);
    });

    it('in never holds when its value is not an array', () => {
      expect(conditionHolds(when('channel', 'in', 'web'), order)).toBe(false);
    });

    it('exists holds for a present, non-null field; exists false for a missing or null one', () => {
      expect(conditionHolds(when('order.items.count', 'exists'), order)).toBe(true);
      expect(conditionHolds(when('order.items.count', 'exists', true), order)).toBe(true);
      expect(conditionHolds(when('order.missing', 'exists'), order)).toBe(false);
      expect(conditionHolds(when('order.coupon', 'exists'), order)).toBe(false);
      expect(conditionHolds(when('order.missing', 'exists', false), order)).toBe(true);
      expect(conditionHolds(when('order.coupon', 'exists', false), order)).toBe(true);
      expect(conditionHolds(when('amount', 'exists', false), order)).toBe(false);
      // 0, '' and false are present values
      expect(conditionHolds(when('z', 'exists'), { z: 0 })).toBe(true);
      expect(conditionHolds(when('z', 'exists'), { z: '' })).toBe(true);
      expect(conditionHolds(when('z', 'exists'), { z: false })).toBe(true);
    });
  });

  describe('points of one rule', () => {
    it('are the fixed points when every condition holds, 0 when any fails', () => {
      const rule: Rule = { conditions: [when('channel', 'eq', 'web'), when('amount', 'gte', 100)], points: 25 };
      expect(rulePoints(rule, order)).toBe(25);
      expect(rulePoints(rule, { ...order, amount: 99 })).toBe(0);
      expect(rulePoints(rule, { ...order, channel: 'store' })).toBe(0);
      expect(rulePoints({ points: 7 }, {})).toBe(7);
      expect(rulePoints({ conditions: [], points: 7 }, {})).toBe(7);
    });

    it('count whole units of unit_property, unit_size 1 by default', () => {
      expect(rulePoints({ points_per_unit: 1, unit_property: 'amount' }, { amount: 99.99 })).toBe(99);
      expect(rulePoints({ points_per_unit: 2, unit_property: 'amount' }, { amount: 100 })).toBe(200);
      expect(rulePoints({ points_per_unit: 3, unit_property: 'order.items.count' }, order)).toBe(9);
    });

    it('count units of unit_size: 5 points per full 10 spent', () => {
      const rule: Rule = { points_per_unit: 5, unit_property: 'amount', unit_size: 10 };
      expect(rulePoints(rule, { amount: 9.99 })).toBe(0);
      expect(rulePoints(rule, { amount: 10 })).toBe(5);
      expect(rulePoints(rule, { amount: 99 })).toBe(45);
      expect(rulePoints(rule, { amount: 100 })).toBe(50);
    });

    it('add the fixed points to the unit points and round the total down', () => {
      expect(rulePoints({ points: 10, points_per_unit: 1, unit_property: 'amount' }, { amount: 5.5 })).toBe(15);
      expect(rulePoints({ points_per_unit: 0.5, unit_property: 'n' }, { n: 3 })).toBe(1);
      expect(rulePoints({ points: 1, points_per_unit: 0.25, unit_property: 'n' }, { n: 7 })).toBe(2);
    });

    it('give no unit points when the unit property is missing or not a number', () => {
      const rule: Rule = { points: 3, points_per_unit: 1, unit_property: 'amount' };
      expect(rulePoints(rule, {})).toBe(3);
      expect(rulePoints(rule, { amount: '150' })).toBe(3);
      expect(rulePoints(rule, { amount: null })).toBe(3);
      expect(rulePoints(rule, { amount: { value: 150 } })).toBe(3);
    });

    it('are capped at max_points', () => {
      const rule: Rule = { points_per_unit: 2, unit_property: 'amount', max_points: 500 };
      expect(rulePoints(rule, { amount: 100 })).toBe(200);
      expect(rulePoints(rule, { amount: 250 })).toBe(500);
      expect(rulePoints(rule, { amount: 1_000_000 })).toBe(500);
      expect(rulePoints({ points: 40, max_points: 30 }, {})).toBe(30);
      expect(rulePoints({ points: 40, max_points: 0 }, {})).toBe(0);
    });

    it('are never negative, even for a negative unit property', () => {
      expect(rulePoints({ points_per_unit: 1, unit_property: 'amount' }, { amount: -50 })).toBe(0);
      expect(rulePoints({ points: 10, points_per_unit: 1, unit_property: 'amount' }, { amount: -50 })).toBe(0);
      expect(rulePoints({ points: 10, points_per_unit: 1, unit_property: 'amount' }, { amount: -0.5 })).toBe(9);
    });
  });

  describe('base points of an event type', () => {
    // The contract's example: 1 point per whole currency unit spent, 2 on orders of 100 or more, capped.
    const purchase = {
      default_points: 0,
      rules: [
        { conditions: [when('amount', 'lt', 100)], points_per_unit: 1, unit_property: 'amount' },
        { conditions: [when('amount', 'gte', 100)], points_per_unit: 2, unit_property: 'amount', max_points: 1000 },
      ] satisfies Rule[],
    };

    it('are the default points when no rule applies', () => {
      expect(basePoints({ default_points: 15, rules: [] }, {})).toBe(15);
      expect(basePoints({ default_points: 15, rules: [{ conditions: [when('x', 'exists')], points: 5 }] }, {})).toBe(15);
    });

    it('add every applying rule to the default points', () => {
      const type = {
        default_points: 10,
        rules: [
          { conditions: [when('channel', 'eq', 'web')], points: 5 },
          { conditions: [when('tags', 'exists')], points: 3 },
          { conditions: [when('channel', 'eq', 'store')], points: 100 },
        ],
      };
      expect(basePoints(type, order)).toBe(18);
    });

    it('follow the worked example: 1 per unit under 100, 2 per unit from 100, capped at 1000', () => {
      expect(basePoints(purchase, { amount: 0 })).toBe(0);
      expect(basePoints(purchase, { amount: 42.7 })).toBe(42);
      expect(basePoints(purchase, { amount: 99.99 })).toBe(99);
      expect(basePoints(purchase, { amount: 100 })).toBe(200);
      expect(basePoints(purchase, { amount: 250.5 })).toBe(500);
      expect(basePoints(purchase, { amount: 500 })).toBe(1000);
      expect(basePoints(purchase, { amount: 10_000 })).toBe(1000);
      expect(basePoints(purchase, {})).toBe(0);
    });

    it('are the default plus the sum of the rules, never below the default (property)', () => {
      const condition = fc.record({
        property: fc.constantFrom('a', 'b', 'n.x'),
        op: fc.constantFrom('eq', 'ne', 'gt', 'gte', 'lt', 'lte') as fc.Arbitrary<Condition['op']>,
        value: fc.integer({ min: -5, max: 5 }),
      });
      const rule: fc.Arbitrary<Rule> = fc.record(
        {
          conditions: fc.array(condition, { maxLength: 3 }),
          points: fc.integer({ min: 0, max: 100 }),
          points_per_unit: fc.integer({ min: 0, max: 10 }),
          unit_property: fc.constantFrom('a', 'b', 'n.x'),
          unit_size: fc.integer({ min: 1, max: 10 }),
          max_points: fc.integer({ min: 0, max: 500 }),
        },
        { requiredKeys: ['points'] },
      );
      const properties = fc.record({ a: fc.integer({ min: -1000, max: 1000 }), b: fc.double({ min: -1000, max: 1000, noNaN: true }), n: fc.record({ x: fc.integer({ min: -50, max: 50 }) }) });
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 1000 }), fc.array(rule, { maxLength: 5 }), properties, (defaultPoints, rules, props) => {
          const each = rules.map((r) => rulePoints(r, props));
          for (const [i, points] of each.entries()) {
            expect(Number.isInteger(points)).toBe(true);
            expect(points).toBeGreaterThanOrEqual(0);
            if (rules[i]!.max_points !== undefined) expect(points).toBeLessThanOrEqual(rules[i]!.max_points!);
          }
          const base = basePoints({ default_points: defaultPoints, rules }, props);
          expect(base).toBe(defaultPoints + each.reduce((a, b) => a + b, 0));
          expect(base).toBeGreaterThanOrEqual(defaultPoints);
        }),
      );
    });
  });

  describe('the tier multiplier', () => {
    it('rounds down, exactly for two-decimal multipliers', () => {
      expect(applyMultiplier(100, 1.15)).toBe(115); // 100 × 1.15 is 114.99999999999999 in floating point
      expect(applyMultiplier(100, 1.1)).toBe(110);
      expect(applyMultiplier(10, 1.29)).toBe(12);
      expect(applyMultiplier(7, 1.5)).toBe(10);
      expect(applyMultiplier(200, 1.25)).toBe(250);
      expect(applyMultiplier(3, 1.33)).toBe(3);
      expect(applyMultiplier(1000, 10)).toBe(10_000);
      expect(applyMultiplier(0, 2.5)).toBe(0);
      expect(applyMultiplier(123, 1)).toBe(123);
    });

    it('equals floor(points × cents / 100) computed in exact integers (property)', () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 1_000_000_000 }), fc.integer({ min: 100, max: 1000 }), (points, cents) => {
          const exact = Number((BigInt(points) * BigInt(cents)) / 100n);
          expect(applyMultiplier(points, cents / 100)).toBe(exact);
        }),
        { numRuns: 2000 },
      );
    });
  });

  describe('points of an event (at most 1,000,000,000)', () => {
    const perUnit = (points_per_unit: number, extra: Partial<Rule> = {}) => ({
      default_points: 0,
      rules: [{ points_per_unit, unit_property: 'n', ...extra }],
    });

    it('are the base points and floor(base × multiplier), up to exactly 1,000,000,000', () => {
      expect(eventPoints(perUnit(2), { n: 50 }, 1.5)).toEqual({ base: 100, awarded: 150 });
      expect(eventPoints(perUnit(1_000_000), { n: 1000 }, 1)).toEqual({ base: MAX_EVENT_POINTS, awarded: MAX_EVENT_POINTS });
    });

    it('refuse more than 1,000,000,000 with 422 points_out_of_range, before or after the multiplier', () => {
      expectApiError(() => eventPoints(perUnit(1_000_000), { n: 10_000 }, 1.5), 'points_out_of_range', 422);
      expectApiError(() => eventPoints(perUnit(1_000_000), { n: 1001 }, 1), 'points_out_of_range', 422);
      expectApiError(() => eventPoints(perUnit(1_000_000), { n: 1000 }, 1.01), 'points_out_of_range', 422);
      expectApiError(() => eventPoints(perUnit(1_000_000), { n: Number.MAX_VALUE }, 1), 'points_out_of_range', 422);
    });

    it('count a rule at its max_points, however many units, and nothing for 0 per unit', () => {
      expect(eventPoints(perUnit(1_000_000, { max_points: 500 }), { n: Number.MAX_VALUE }, 2)).toEqual({ base: 500, awarded: 1000 });
      expect(eventPoints(perUnit(0, { unit_size: 1e-300 }), { n: 1e300 }, 1)).toEqual({ base: 0, awarded: 0 });
    });
  });
});
