import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestResponse } from '../support/test-app.js';
import { ISO_MS, expectError } from '../support/expectations.js';


describe('event types', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());


  const detailPaths = (response: TestResponse): string[] => (response.body.details ?? []).map((d: { path: string }) => d.path);

  async function createType(key: string, body: Record<string, unknown>) {
    const response = await t.request('POST', '/api/v1/event-types', { key, body });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  const purchaseRules = [
    { conditions: [{ property: 'amount', op: 'lt', value: 100 }], points_per_unit: 1, unit_property: 'amount', description: '1 per unit' },
    { conditions: [{ property: 'amount', op: 'gte', value: 100 }], points_per_unit: 2, unit_property: 'amount', max_points: 1000 },
  ];

  describe('managing event types', () => {
    it('creates an event type with its rules and answers it', async () => {
      const { private_key: key } = await t.business();
      const response = await t.request('POST', '/api/v1/event-types', {
        key,
        body: { name: 'purchase', display_name: 'Purchase', default_points: 0, rules: purchaseRules, metadata: { source: 'pos' } },
      });
      expect(response.status, response.text).toBe(201);
      expect(response.body).toEqual({
        id: expect.stringMatching(/^evtp_[A-Za-z0-9_-]{16,}$/),
        name: 'purchase',
        display_name: 'Purchase',
        default_points: 0,
        rules: purchaseRules,
        metadata: { source: 'pos' },
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
      });
      const bare = await createType(key, { name: 'signup', display_name: 'Sign-up', default_points: 50 });
      expect(bare).toMatchObject({ rules: [], metadata: {}, default_points: 50 });

      const got = await t.request('GET', '/api/v1/event-types/purchase', { key });
      expect(got.status).toBe(200);
      expect(got.body).toEqual(response.body);
    });

    it('lists event types oldest first, with pages', async () => {
      const { private_key: key } = await t.business();
      for (const name of ['zeta', 'alpha', 'mid']) await createType(key, { name, display_name: name, default_points: 1 });
      const listed = await t.request('GET', '/api/v1/event-types', { key });
      expect(listed.status).toBe(200);
      expect(listed.body.map((e: { name: string }) => e.name)).toEqual(['zeta', 'alpha', 'mid']);

      const first = await t.request('GET', '/api/v1/event-types?limit=2', { key });
      expect(first.body.map((e: { name: string }) => e.name)).toEqual(['zeta', 'alpha']);
      const next = /<([^>]+)>;\s*rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
      const second = await t.request('GET', next!, { key });
      expect(second.body.map((e: { name: string }) => e.name)).toEqual(['mid']);
    });

    it('accepts names matching [a-z0-9][a-z0-9_.-]{0,63} and refuses others', async () => {
      const { private_key: key } = await t.business();
      for (const name of ['a', '7', 'order.completed', 'review_left-v2', `x${'y'.repeat(63)}`]) {
        const created = await createType(key, { name, display_name: 'ok', default_points: 1 });
        expect(created.name).toBe(name);
      }
      for (const name of ['', 'Purchase', '_hidden', '-x', '.x', 'with space', 'ünï', 'a/b', `x${'y'.repeat(64)}`]) {
        const response = await t.request('POST', '/api/v1/event-types', { key, body: { name, display_name: 'bad', default_points: 1 } });
        expectError(response, 400, 'validation_error');
        expect(detailPaths(response), name).toContain('name');
      }
    });

    it('refuses missing or out-of-range fields and unknown ones', async () => {
      const { private_key: key } = await t.business();
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ name: 'a', default_points: 1 }, 'display_name'],
        [{ name: 'a', display_name: 'A' }, 'default_points'],
        [{ name: 'a', display_name: 'A', default_points: -1 }, 'default_points'],
        [{ name: 'a', display_name: 'A', default_points: 1.5 }, 'default_points'],
        [{ name: 'a', display_name: 'A', default_points: 1, rules: {} }, 'rules'],
        [{ name: 'a', display_name: 'A', default_points: 1, points: 4 }, 'points'],
      ];
      for (const [body, path] of cases) {
        const response = await t.request('POST', '/api/v1/event-types', { key, body });
        expectError(response, 400, 'validation_error');
        expect(detailPaths(response), JSON.stringify(body)).toContain(path);
      }
      expect((await t.request('GET', '/api/v1/event-types', { key })).body).toEqual([]);
    });

    it('refuses a name already taken in the business with 409 conflict, not in another business', async () => {
      const { private_key: key } = await t.business();
      const { private_key: otherKey } = await t.business();
      await createType(key, { name: 'purchase', display_name: 'Purchase', default_points: 1 });
      expectError(await t.request('POST', '/api/v1/event-types', { key, body: { name: 'purchase', display_name: 'Again', default_points: 5 } }), 409, 'conflict');
      const unchanged = await t.request('GET', '/api/v1/event-types/purchase', { key });
      expect(unchanged.body).toMatchObject({ display_name: 'Purchase', default_points: 1 });
      await createType(otherKey, { name: 'purchase', display_name: 'Theirs', default_points: 9 });
    });

    it('creates exactly one event type when several race for one name', async () => {
      const { private_key: key } = await t.business();
      const responses = await Promise.all(
        Array.from({ length: 6 }, (_, i) => t.request('POST', '/api/v1/event-types', { key, body: { name: 'visit', display_name: `Visit ${i}`, default_points: i } })),
      );
      const created = responses.filter((r) => r.status === 201);
      expect(created).toHaveLength(1);
      for (const r of responses.filter((x) => x.status !== 201)) expectError(r, 409, 'conflict');
      const listed = await t.request('GET', '/api/v1/event-types', { key });
      expect(listed.body).toEqual([created[0]!.body]);
    });

    it('patches display_name, default_points, rules and metadata by name', async () => {
      const { private_key: key } = await t.business();
      const created = await createType(key, { name: 'purchase', display_name: 'Purchase', default_points: 1, rules: purchaseRules });
      const patched = await t.request('PATCH', '/api/v1/event-types/purchase', {
        key,
        body: { display_name: 'Order', default_points: 5, rules: [{ points: 3 }], metadata: { v: 2 } },
      });
      expect(patched.status, patched.text).toBe(200);
      expect(patched.body).toEqual({
        ...created,
        display_name: 'Order',
        default_points: 5,
        rules: [{ points: 3 }],
        metadata: { v: 2 },
        updated_at: expect.stringMatching(ISO_MS),
      });
      expect((await t.request('GET', '/api/v1/event-types/purchase', { key })).body).toEqual(patched.body);

      const cleared = await t.request('PATCH', '/api/v1/event-types/purchase', { key, body: { rules: [] } });
      expect(cleared.body.rules).toEqual([]);
      // The name is the identity: it cannot be patched.
      expectError(await t.request('PATCH', '/api/v1/event-types/purchase', { key, body: { name: 'order' } }), 400, 'validation_error');
    });

    it('answers 404 event_type_not_found for an unknown name, also one only another business has', async () => {
      const { private_key: key } = await t.business();
      const { private_key: otherKey } = await t.business();
      await createType(otherKey, { name: 'theirs', display_name: 'Theirs', default_points: 1 });
      for (const name of ['nothing', 'theirs']) {
        expectError(await t.request('GET', `/api/v1/event-types/${name}`, { key }), 404, 'event_type_not_found');
        expectError(await t.request('PATCH', `/api/v1/event-types/${name}`, { key, body: { default_points: 7 } }), 404, 'event_type_not_found');
      }
      expect((await t.request('GET', '/api/v1/event-types/theirs', { key: otherKey })).body.default_points).toBe(1);
      expect((await t.request('GET', '/api/v1/event-types', { key })).body).toEqual([]);
    });

    it('needs rewards:write to write and rewards:read to read; a public key reads only', async () => {
      const biz = await t.business();
      const key = biz.private_key;
      await createType(key, { name: 'purchase', display_name: 'Purchase', default_points: 1 });
      const keyWith = async (permissions: string[]) =>
        (await t.request('POST', '/api/v1/keys', { key, body: { type: 'private', permissions } })).body.key as string;
      const reader = await keyWith(['rewards:read']);
      const writer = await keyWith(['rewards:write']);
      const body = { name: 'signup', display_name: 'Sign-up', default_points: 1 };

      const denied = await t.request('POST', '/api/v1/event-types', { key: reader, body });
      expectError(denied, 403, 'insufficient_permissions');
      expect(denied.body.message).toContain('rewards:write');
      expectError(await t.request('PATCH', '/api/v1/event-types/purchase', { key: reader, body: { default_points: 2 } }), 403, 'insufficient_permissions');
      expectError(await t.request('POST', '/api/v1/event-types', { key: biz.public_key, body }), 403, 'public_key_not_allowed');
      expectError(await t.request('GET', '/api/v1/event-types', { key: writer }), 403, 'insufficient_permissions');
      expectError(await t.request('GET', '/api/v1/event-types/purchase', { key: writer }), 403, 'insufficient_permissions');

      expect((await t.request('POST', '/api/v1/event-types', { key: writer, body })).status).toBe(201);
      expect((await t.request('PATCH', '/api/v1/event-types/purchase', { key: writer, body: { default_points: 2 } })).status).toBe(200);
      expect((await t.request('GET', '/api/v1/event-types/purchase', { key: reader })).body.default_points).toBe(2);
      const listed = await t.request('GET', '/api/v1/event-types', { key: biz.public_key });
      expect(listed.body.map((e: { name: string }) => e.name)).toEqual(['purchase', 'signup']);
    });
  });

  describe('rule validation', () => {
    const invalidRules: Array<[string, unknown, string]> = [
      ['an unknown op', { conditions: [{ property: 'amount', op: 'between', value: 1 }], points: 1 }, 'rules.0.conditions.0.op'],
      ['"in" without an array', { conditions: [{ property: 'channel', op: 'in', value: 'web' }], points: 1 }, 'rules.0.conditions.0.value'],
      ['"gt" with an object value', { conditions: [{ property: 'amount', op: 'gt', value: { n: 1 } }], points: 1 }, 'rules.0.conditions.0.value'],
      ['"eq" without a value', { conditions: [{ property: 'amount', op: 'eq' }], points: 1 }, 'rules.0.conditions.0.value'],
      ['"exists" with a non-boolean value', { conditions: [{ property: 'amount', op: 'exists', value: 'yes' }], points: 1 }, 'rules.0.conditions.0.value'],
      ['a condition without a property', { conditions: [{ op: 'exists' }], points: 1 }, 'rules.0.conditions.0.property'],
      ['a malformed property path', { conditions: [{ property: 'order..total', op: 'exists' }], points: 1 }, 'rules.0.conditions.0.property'],
      ['points_per_unit without unit_property', { points_per_unit: 1 }, 'rules.0.unit_property'],
      ['unit_property without points_per_unit', { points: 1, unit_property: 'amount' }, 'rules.0.unit_property'],
      ['neither points nor points_per_unit', { conditions: [{ property: 'amount', op: 'exists' }], max_points: 10 }, 'rules.0.points'],
      ['negative points', { points: -5 }, 'rules.0.points'],
      ['fractional points', { points: 1.5 }, 'rules.0.points'],
      ['a zero unit_size', { points_per_unit: 1, unit_property: 'amount', unit_size: 0 }, 'rules.0.unit_size'],
      ['a negative max_points', { points: 1, max_points: -1 }, 'rules.0.max_points'],
      ['an unknown field in a rule', { points: 1, multiplier: 2 }, 'rules.0.multiplier'],
      ['an unknown field in a condition', { conditions: [{ property: 'amount', op: 'gt', value: 1, negate: true }], points: 1 }, 'rules.0.conditions.0.negate'],
    ];

    it.each(invalidRules)('refuses %s with 400 validation_error and a detail at its path', async (_what, rule, path) => {
      const { private_key: key } = await t.business();
      const response = await t.request('POST', '/api/v1/event-types', {
        key,
        body: { name: 'purchase', display_name: 'Purchase', default_points: 0, rules: [rule] },
      });
      expectError(response, 400, 'validation_error');
      expect(detailPaths(response)).toContain(path);
      expectError(await t.request('GET', '/api/v1/event-types/purchase', { key }), 404, 'event_type_not_found');
    });

    it('refuses invalid rules on patch too, leaving the type unchanged', async () => {
      const { private_key: key } = await t.business();
      await createType(key, { name: 'purchase', display_name: 'Purchase', default_points: 0, rules: purchaseRules });
      const response = await t.request('PATCH', '/api/v1/event-types/purchase', {
        key,
        body: { rules: [{ points: 1 }, { points_per_unit: 2 }] },
      });
      expectError(response, 400, 'validation_error');
      expect(detailPaths(response)).toContain('rules.1.unit_property');
      expect((await t.request('GET', '/api/v1/event-types/purchase', { key })).body.rules).toEqual(purchaseRules);
    });

    it('accepts every op on dotted paths', async () => {
      const { private_key: key } = await t.business();
      const rules = [
        {
          conditions: [
            { property: 'order.total', op: 'gte', value: 10 },
            { property: 'order.total', op: 'lt', value: 1000 },
            { property: 'order.channel', op: 'in', value: ['web', 'app'] },
            { property: 'order.coupon', op: 'exists', value: false },
            { property: 'customer.vip', op: 'eq', value: true },
            { property: 'country', op: 'ne', value: 'XX' },
            { property: 'order.items', op: 'gt', value: 0 },
            { property: 'order.items', op: 'lte', value: 99 },
          ],
          points: 5,
          points_per_unit: 1.5,
          unit_property: 'order.total',
          unit_size: 10,
          max_points: 100,
          description: 'everything',
        },
      ];
      const created = await createType(key, { name: 'purchase', display_name: 'Purchase', default_points: 0, rules });
      expect(created.rules).toEqual(rules);
    });
  });

  describe('changing rules', () => {
    it('affects only events recorded afterwards', async () => {
      const { private_key: key } = await t.business();
      const customer = await t.request('POST', '/api/v1/customers', { key, body: { email: 'rules-change@example.com' } });
      const customerId = customer.body.id as string;
      await createType(key, { name: 'purchase', display_name: 'Purchase', default_points: 0, rules: purchaseRules });
      const record = async (amount: number, reference: string) => {
        const response = await t.request('POST', '/api/v1/events', {
          key,
          body: { customer_id: customerId, event_type: 'purchase', properties: { amount }, reference },
        });
        expect(response.status, response.text).toBe(201);
        return response.body;
      };

      const before = await record(150, 'order-1');
      expect(before.points_awarded).toBe(300);

      const patched = await t.request('PATCH', '/api/v1/event-types/purchase', {
        key,
        body: { default_points: 10, rules: [{ points_per_unit: 1, unit_property: 'amount', unit_size: 10 }] },
      });
      expect(patched.status, patched.text).toBe(200);

      const after = await record(150, 'order-2');
      expect(after).toMatchObject({ base_points: 25, points_awarded: 25, balance: 325 });

      const listed = await t.request('GET', `/api/v1/events?customer_id=${customerId}`, { key });
      expect(listed.body.map((e: { reference: string; points_awarded: number }) => [e.reference, e.points_awarded])).toEqual([
        ['order-1', 300],
        ['order-2', 25],
      ]);
      const summary = await t.request('GET', `/api/v1/customers/${customerId}/summary`, { key });
      expect(summary.body.points).toEqual({ balance: 325, lifetime_earned: 325, lifetime_redeemed: 0, pending: 0, lifetime_expired: 0, next_expiring: null });
    });
  });
});
