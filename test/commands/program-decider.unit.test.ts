import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ProgramCommand, programDecider, type ProgramEvent, type ProgramState, tiersByThreshold } from '../../src/commands/program/program-decider.js';
import { fold } from '../../src/commands/decider.js';
import { deciderSpec, expectApiError } from '../support/decider-spec.js';
import type { EventTypeDefinition, TierDefinition } from '../../src/events/program-events.js';

const { given } = deciderSpec(programDecider);

const tier = (id: string, name: string, threshold: number, overrides: Partial<TierDefinition> = {}): TierDefinition => ({
  tier_id: id,
  name,
  points_threshold: threshold,
  multiplier: 1,
  benefits: [],
  metadata: {},
  ...overrides,
});

const eventType = (name: string, overrides: Partial<EventTypeDefinition> = {}): EventTypeDefinition => ({
  event_type_id: `evtp_${name}`,
  name,
  display_name: name.toUpperCase(),
  default_points: 10,
  rules: [],
  metadata: {},
  ...overrides,
});

const tierCreated = (t: TierDefinition): ProgramEvent => ({ type: 'TierCreated', data: t });
const typeCreated = (e: EventTypeDefinition): ProgramEvent => ({ type: 'EventTypeCreated', data: e });

const silver = tier('tier_s', 'Silver', 100, { multiplier: 1.25, benefits: ['free shipping'] });
const gold = tier('tier_g', 'Gold', 1000, { multiplier: 1.5 });

describe('the program decider', () => {
  describe('creating tiers', () => {
    it('creates a tier on an empty program', () => {
      given().when({ type: 'CreateTier', tier: silver }).then([tierCreated(silver)]);
    });

    it('refuses a name already taken, compared case-insensitively', () => {
      for (const name of ['Silver', 'silver', 'SILVER', 'sIlVeR']) {
        const error = given(tierCreated(silver)).when({ type: 'CreateTier', tier: tier('tier_x', name, 500) }).thenThrows('conflict', 409);
        expect(error.message).toContain(name);
      }
    });

    it('refuses a threshold already taken', () => {
      const error = given(tierCreated(silver)).when({ type: 'CreateTier', tier: tier('tier_x', 'Bronze', 100) }).thenThrows('conflict', 409);
      expect(error.message).toContain('Silver');
    });

    it('accepts another name at another threshold', () => {
      given(tierCreated(silver)).when({ type: 'CreateTier', tier: gold }).then([tierCreated(gold)]);
    });

    it('lists tiers by threshold whatever their creation order', () => {
      const bronze = tier('tier_b', 'Bronze', 0);
      const { state } = given(tierCreated(gold), tierCreated(bronze), tierCreated(silver));
      expect(tiersByThreshold(state).map((t) => t.name)).toEqual(['Bronze', 'Silver', 'Gold']);
    });

    it('never holds two tiers sharing a name or a threshold, whatever is attempted (property)', () => {
      const attempt = fc.record({
        name: fc.constantFrom('Bronze', 'bronze', 'Silver', 'GOLD', 'gold', 'Platinum'),
        threshold: fc.integer({ min: 0, max: 5 }).map((n) => n * 100),
      });
      fc.assert(
        fc.property(fc.array(attempt, { maxLength: 15 }), (attempts) => {
          let state: ProgramState = programDecider.initialState();
          attempts.forEach(({ name, threshold }, i) => {
            const candidate = tier(`tier_${i}`, name, threshold);
            const clash = Object.values(state.tiers).some(
              (t) => t.name.toLowerCase() === name.toLowerCase() || t.points_threshold === threshold,
            );
            if (clash) {
              expectApiError(() => programDecider.decide({ type: 'CreateTier', tier: candidate }, state), 'conflict', 409);
              return;
            }
            for (const event of programDecider.decide({ type: 'CreateTier', tier: candidate }, state)) state = programDecider.evolve(state, event);
          });
          const tiers = Object.values(state.tiers);
          expect(new Set(tiers.map((t) => t.name.toLowerCase())).size).toBe(tiers.length);
          expect(new Set(tiers.map((t) => t.points_threshold)).size).toBe(tiers.length);
        }),
      );
    });
  });

  describe('updating tiers', () => {
    it('emits only the fields that changed', () => {
      given(tierCreated(silver))
        .when({ type: 'UpdateTier', tierId: 'tier_s', changes: { name: 'Silver', multiplier: 1.5, benefits: ['free shipping'], points_threshold: 100 } })
        .then([{ type: 'TierUpdated', data: { tier_id: 'tier_s', multiplier: 1.5 } }]);
    });

    it('emits nothing when nothing changes', () => {
      given(tierCreated(silver)).when({ type: 'UpdateTier', tierId: 'tier_s', changes: { name: 'Silver', metadata: {} } }).then([]);
      given(tierCreated(silver)).when({ type: 'UpdateTier', tierId: 'tier_s', changes: {} }).then([]);
    });

    it('applies the change to the state, keeping the other fields', () => {
      const { state } = given(tierCreated(silver), { type: 'TierUpdated', data: { tier_id: 'tier_s', points_threshold: 200 } });
      expect(state.tiers['tier_s']).toEqual({ ...silver, points_threshold: 200 });
    });

    it('lets a tier keep its own name in another case and its own threshold', () => {
      given(tierCreated(silver), tierCreated(gold))
        .when({ type: 'UpdateTier', tierId: 'tier_s', changes: { name: 'SILVER', points_threshold: 100 } })
        .then([{ type: 'TierUpdated', data: { tier_id: 'tier_s', name: 'SILVER' } }]);
    });

    it("refuses another tier's name or threshold", () => {
      given(tierCreated(silver), tierCreated(gold)).when({ type: 'UpdateTier', tierId: 'tier_s', changes: { name: 'gold' } }).thenThrows('conflict', 409);
      given(tierCreated(silver), tierCreated(gold))
        .when({ type: 'UpdateTier', tierId: 'tier_s', changes: { points_threshold: 1000 } })
        .thenThrows('conflict', 409);
    });

    it('answers tier_not_found for an unknown tier', () => {
      given(tierCreated(silver)).when({ type: 'UpdateTier', tierId: 'tier_nope', changes: { multiplier: 2 } }).thenThrows('tier_not_found', 404);
    });
  });

  describe('event types', () => {
    const purchase = eventType('purchase', { rules: [{ points: 5 }] });

    it('creates an event type', () => {
      given().when({ type: 'CreateEventType', eventType: purchase }).then([typeCreated(purchase)]);
    });

    it('refuses a name already taken', () => {
      given(typeCreated(purchase)).when({ type: 'CreateEventType', eventType: eventType('purchase', { event_type_id: 'evtp_2' }) }).thenThrows('conflict', 409);
    });

    it('emits only the fields that changed', () => {
      given(typeCreated(purchase))
        .when({ type: 'UpdateEventType', name: 'purchase', changes: { display_name: 'PURCHASE', default_points: 20, rules: [{ points: 5 }] } })
        .then([{ type: 'EventTypeUpdated', data: { name: 'purchase', default_points: 20 } }]);
      given(typeCreated(purchase))
        .when({ type: 'UpdateEventType', name: 'purchase', changes: { rules: [{ points: 6 }] } })
        .then([{ type: 'EventTypeUpdated', data: { name: 'purchase', rules: [{ points: 6 }] } }]);
    });

    it('emits nothing when nothing changes', () => {
      given(typeCreated(purchase)).when({ type: 'UpdateEventType', name: 'purchase', changes: { default_points: 10 } }).then([]);
    });

    it('applies an update to the state, keeping the id and other fields', () => {
      const { state } = given(typeCreated(purchase), { type: 'EventTypeUpdated', data: { name: 'purchase', rules: [] } });
      expect(state.eventTypes['purchase']).toEqual({ ...purchase, rules: [] });
    });

    it('answers event_type_not_found for an unknown name', () => {
      given(typeCreated(purchase)).when({ type: 'UpdateEventType', name: 'signup', changes: { default_points: 1 } }).thenThrows('event_type_not_found', 404);
    });
  });
});
