import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PERMISSIONS, PUBLIC_KEY_PERMISSIONS, type Permission } from '../../src/events/permissions.js';
import { startTestApp, type TestApp, type TestResponse } from '../support/test-app.js';
import { fillPath, type SeededBusiness, seedBusiness, servedApiRoutes } from '../support/seeded-business.js';

/** A request business B makes at business A's resources, and the answer it must get. */
interface ForeignProbe {
  /** Whose ids fill the path: A's (default), or B's with some of A's mixed in. */
  ids?: (a: SeededBusiness, b: SeededBusiness) => Record<string, string>;
  query?: (a: SeededBusiness) => string;
  body?: (a: SeededBusiness, b: SeededBusiness) => unknown;
  /** A 404 code, or a success status whose body must show nothing of A. */
  expect: string | 200 | 201;
}

interface RouteCase {
  /** CONTRACT.md §2: every permission the route needs. */
  permissions: Permission[];
  privateOnly?: boolean;
  /** A POST that records nothing (a preview): public keys may send it. */
  recordsNothing?: boolean;
  foreign: ForeignProbe[];
}

const mixed = (over: (a: SeededBusiness) => Record<string, string>) => (a: SeededBusiness, b: SeededBusiness) => ({ ...b.ids, ...over(a) });
const earn = { type: 'earn', amount: 5 };

/**
 * Every route the app serves must be here (the first test checks it against the router), with its
 * permissions from the contract and what another business gets when it aims at A's ids.
 */
const ROUTES: Record<string, RouteCase> = {
  'GET /api/v1/customers': {
    permissions: ['customers:read'],
    foreign: [{ query: () => '?external_reference=a-ext', expect: 200 }, { query: () => '?email=a%40example.com', expect: 200 }, { expect: 200 }],
  },
  'POST /api/v1/customers': {
    permissions: ['customers:write'],
    // A's e-mail and external reference are free in B: uniqueness never leaks across businesses.
    foreign: [{ body: () => ({ email: 'a@example.com', external_reference: 'a-ext' }), expect: 201 }],
  },
  'GET /api/v1/customers/:customer_id': { permissions: ['customers:read'], foreign: [{ expect: 'customer_not_found' }] },
  'PATCH /api/v1/customers/:customer_id': {
    permissions: ['customers:write'],
    foreign: [{ body: () => ({ first_name: 'Mallory' }), expect: 'customer_not_found' }],
  },
  'GET /api/v1/customers/:customer_id/summary': { permissions: ['customers:read', 'points:read'], foreign: [{ expect: 'customer_not_found' }] },
  'GET /api/v1/customers/:customer_id/transactions': { permissions: ['points:read'], foreign: [{ expect: 'customer_not_found' }] },
  'GET /api/v1/customers/:customer_id/lots': { permissions: ['points:read'], foreign: [{ expect: 'customer_not_found' }] },
  'GET /api/v1/customers/:customer_id/stream': { permissions: ['points:read'], privateOnly: true, foreign: [{ expect: 'customer_not_found' }] },
  'POST /api/v1/customers/:customer_id/points/transaction': {
    permissions: ['points:write'],
    foreign: [{ body: () => earn, expect: 'customer_not_found' }],
  },
  'POST /api/v1/customers/:customer_id/transactions/:transaction_id/reverse': {
    permissions: ['points:write'],
    foreign: [
      { body: () => ({ amount: 1 }), expect: 'customer_not_found' },
      // B's own customer cannot reverse A's credit: it is no transaction of B's customer.
      { ids: mixed((a) => ({ transaction_id: a.ids.transaction_id })), body: () => ({ amount: 1 }), expect: 'transaction_not_found' },
    ],
  },
  'GET /api/v1/customers/:customer_id/redemptions': { permissions: ['points:read'], foreign: [{ expect: 'customer_not_found' }] },
  'POST /api/v1/customers/:customer_id/redemptions': {
    permissions: ['points:write'],
    foreign: [
      { body: (a) => ({ reward_id: a.ids.reward_id }), expect: 'customer_not_found' },
      { ids: mixed(() => ({})), body: (a) => ({ reward_id: a.ids.reward_id }), expect: 'reward_not_found' },
    ],
  },
  'POST /api/v1/customers/:customer_id/redemptions/:redemption_id/cancel': {
    permissions: ['points:write'],
    foreign: [{ expect: 'customer_not_found' }, { ids: mixed((a) => ({ redemption_id: a.ids.redemption_id })), expect: 'redemption_not_found' }],
  },
  'POST /api/v1/events': {
    permissions: ['points:write'],
    foreign: [
      { body: (a) => ({ customer_id: a.ids.customer_id, event_type: a.ids.name }), expect: 'customer_not_found' },
      { body: (a, b) => ({ customer_id: b.ids.customer_id, event_type: a.ids.name }), expect: 'unknown_event_type' },
    ],
  },
  'GET /api/v1/events': {
    permissions: ['points:read'],
    foreign: [{ expect: 200 }, { query: (a) => `?event_type=${a.ids.name}`, expect: 200 }],
  },
  'POST /api/v1/keys': { permissions: ['keys:write'], foreign: [{ body: () => ({ type: 'public' }), expect: 201 }] },
  'GET /api/v1/keys': { permissions: ['keys:write'], foreign: [{ expect: 200 }] },
  'DELETE /api/v1/keys/:key_id': { permissions: ['keys:write'], foreign: [{ expect: 'key_not_found' }] },
  'POST /api/v1/tiers': {
    permissions: ['rewards:write'],
    // A's tier name is free in B.
    foreign: [{ body: () => ({ name: 'a gold', points_threshold: 750, multiplier: 1.5 }), expect: 201 }],
  },
  'GET /api/v1/tiers': { permissions: ['rewards:read'], foreign: [{ expect: 200 }] },
  // Each business has its own policy: B reads and changes its own.
  'GET /api/v1/program': { permissions: ['rewards:read'], foreign: [{ expect: 200 }] },
  'PATCH /api/v1/program': { permissions: ['rewards:write'], foreign: [{ body: () => ({ expiring_notice_days: 7 }), expect: 200 }] },
  'GET /api/v1/tiers/:tier_id': { permissions: ['rewards:read'], foreign: [{ expect: 'tier_not_found' }] },
  'PATCH /api/v1/tiers/:tier_id': { permissions: ['rewards:write'], foreign: [{ body: () => ({ multiplier: 9 }), expect: 'tier_not_found' }] },
  'POST /api/v1/event-types': {
    permissions: ['rewards:write'],
    foreign: [{ body: () => ({ name: 'a-purchase', display_name: 'Mine too', default_points: 1 }), expect: 201 }],
  },
  'GET /api/v1/event-types': { permissions: ['rewards:read'], foreign: [{ expect: 200 }] },
  'GET /api/v1/event-types/:name': { permissions: ['rewards:read'], foreign: [{ ids: (a) => ({ name: `x${a.ids.name}` }), expect: 'event_type_not_found' }] },
  'PATCH /api/v1/event-types/:name': {
    permissions: ['rewards:write'],
    foreign: [{ ids: (a) => ({ name: `x${a.ids.name}` }), body: () => ({ default_points: 999 }), expect: 'event_type_not_found' }],
  },
  'POST /api/v1/rewards': {
    permissions: ['rewards:write'],
    foreign: [{ body: () => ({ title: 'a coffee', points_cost: 1, reward_type: 'digital' }), expect: 201 }],
  },
  'GET /api/v1/rewards': { permissions: ['rewards:read'], foreign: [{ expect: 200 }] },
  'GET /api/v1/rewards/:reward_id': { permissions: ['rewards:read'], foreign: [{ expect: 'reward_not_found' }] },
  'PATCH /api/v1/rewards/:reward_id': { permissions: ['rewards:write'], foreign: [{ body: () => ({ active: false }), expect: 'reward_not_found' }] },
  'POST /api/v1/webhooks': { permissions: ['webhooks:write'], foreign: [{ body: () => ({ url: 'http://127.0.0.1:9/b', events: ['*'] }), expect: 201 }] },
  'GET /api/v1/webhooks': { permissions: ['webhooks:write'], foreign: [{ expect: 200 }] },
  'GET /api/v1/webhooks/:webhook_id': { permissions: ['webhooks:write'], foreign: [{ expect: 'webhook_not_found' }] },
  'PATCH /api/v1/webhooks/:webhook_id': { permissions: ['webhooks:write'], foreign: [{ body: () => ({ active: false }), expect: 'webhook_not_found' }] },
  'DELETE /api/v1/webhooks/:webhook_id': { permissions: ['webhooks:write'], foreign: [{ expect: 'webhook_not_found' }] },
  'POST /api/v1/webhooks/:webhook_id/rotate-secret': { permissions: ['webhooks:write'], foreign: [{ expect: 'webhook_not_found' }] },
  'GET /api/v1/webhooks/:webhook_id/deliveries': { permissions: ['webhooks:write'], foreign: [{ expect: 'webhook_not_found' }] },
  'POST /api/v1/webhooks/:webhook_id/test': { permissions: ['webhooks:write'], foreign: [{ expect: 'webhook_not_found' }] },
  'GET /api/v1/me': { permissions: [], foreign: [{ expect: 200 }] },
  'GET /api/v1/stats': { permissions: ['points:read'], privateOnly: true, foreign: [{ expect: 200 }] },
  'POST /api/v1/event-types/:name/preview': {
    permissions: ['rewards:read'],
    recordsNothing: true,
    foreign: [{ ids: (a) => ({ name: `x${a.ids.name}` }), body: () => ({ properties: {} }), expect: 'event_type_not_found' }],
  },
  'GET /api/v1/customers/:customer_id/audit': { permissions: ['points:read'], privateOnly: true, foreign: [{ expect: 'customer_not_found' }] },
};

const split = (route: string) => {
  const [method, path] = route.split(' ') as [string, string];
  return { method, path };
};

describe('isolation sweep over every route', () => {
  let t: TestApp;
  let a: SeededBusiness;
  let b: SeededBusiness;
  let routes: string[];

  beforeAll(async () => {
    t = await startTestApp({ config: { webhookAllowPrivate: true }, runDispatcher: false });
    a = await seedBusiness(t, 'a');
    b = await seedBusiness(t, 'b');
    routes = servedApiRoutes(t);
  });
  afterAll(() => t.close());

  /** A's own view of everything it holds: every GET route, with A's ids and A's key. */
  async function viewOfA(): Promise<string[]> {
    const reads = routes.filter((r) => r.startsWith('GET '));
    const responses = await Promise.all(reads.map((r) => t.request('GET', fillPath(split(r).path, a.ids), { key: a.private_key })));
    return responses.map((r, i) => `${reads[i]} ${r.status} ${r.text}`);
  }

  it('has a case for every route the app serves, and no case for a route it does not', () => {
    expect(routes.length).toBeGreaterThan(30);
    expect(routes.filter((r) => !(r in ROUTES))).toEqual([]);
    expect(Object.keys(ROUTES).filter((r) => !routes.includes(r))).toEqual([]);
  });

  it("answers another business's ids with 404, shows nothing of them in lists, and changes nothing of theirs", async () => {
    const before = await viewOfA();
    const aIds = Object.values(a.ids).filter((id) => id !== a.ids.name);
    // In the table's order (the same set as the router's, by the first test): POST /events is
    // probed before B creates an event type named like A's.
    for (const route of Object.keys(ROUTES)) {
      const { method, path } = split(route);
      for (const probe of ROUTES[route]!.foreign) {
        const ids = probe.ids?.(a, b) ?? a.ids;
        const url = fillPath(path, ids) + (probe.query?.(a) ?? '');
        const body = probe.body?.(a, b) ?? (method === 'GET' || method === 'DELETE' ? undefined : {});
        const response = await t.request(method, url, { key: b.private_key, ...(body === undefined ? {} : { body }) });
        const where = `${route} as ${url}: ${response.text}`;
        if (typeof probe.expect === 'string') {
          expect(response.status, where).toBe(probe.expect.endsWith('_not_found') ? 404 : 422);
          expect(response.body.code, where).toBe(probe.expect);
        } else {
          expect(response.status, where).toBe(probe.expect);
          for (const id of aIds) expect(response.text, where).not.toContain(id);
        }
      }
    }
    expect(await viewOfA()).toEqual(before);
  });

  it('refuses public keys on every write (403 public_key_not_allowed), and on reads beyond their permissions', async () => {
    for (const route of routes) {
      const { method, path } = split(route);
      const { permissions, privateOnly, recordsNothing } = ROUTES[route]!;
      const response = await t.request(method, fillPath(path, b.ids), { key: b.public_key, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
      const where = `${route}: ${response.text}`;
      if (recordsNothing) {
        // let through to the schema, which refuses the empty body
        expect(response.status, where).toBe(400);
        expect(response.body.code, where).toBe('validation_error');
      } else if (method !== 'GET' || privateOnly) {
        expect(response.status, where).toBe(403);
        expect(response.body.code, where).toBe('public_key_not_allowed');
      } else if (route === 'GET /api/v1/customers') {
        // a public key looks customers up by an exact filter; it does not list them
        expect(response.status, where).toBe(403);
        expect(response.body.code, where).toBe('public_key_not_allowed');
      } else if (permissions.every((p) => PUBLIC_KEY_PERMISSIONS.includes(p))) {
        expect(response.status, where).toBe(200);
      } else {
        expect(response.status, where).toBe(403);
        expect(['insufficient_permissions', 'public_key_not_allowed'], where).toContain(response.body.code);
      }
    }
  });

  it('refuses a restricted key every route whose permission it lacks, naming it, and lets it through where it holds them', async () => {
    const createKey = async (permissions: Permission[]) => {
      const response = await t.request('POST', '/api/v1/keys', { key: b.private_key, body: { type: 'private', permissions } });
      expect(response.status, response.text).toBe(201);
      return response.body.key as string;
    };
    const allBut = new Map(await Promise.all(PERMISSIONS.map(async (p) => [p, await createKey(PERMISSIONS.filter((q) => q !== p))] as const)));
    const exactly = new Map<string, string>();
    for (const route of routes) {
      const { permissions } = ROUTES[route]!;
      const set = [...permissions].sort().join(',');
      // A route needing no permission (GET /me) takes any key: one holding a single read permission.
      if (!exactly.has(set)) exactly.set(set, await createKey(permissions.length > 0 ? permissions : ['customers:read']));
    }

    const send = (route: string, key: string): Promise<TestResponse> => {
      const { method, path } = split(route);
      return t.request(method, fillPath(path, b.ids), { key, ...(method === 'GET' || method === 'DELETE' ? {} : { body: {} }) });
    };
    for (const route of routes) {
      const { permissions } = ROUTES[route]!;
      for (const missing of permissions) {
        const response = await send(route, allBut.get(missing)!);
        expect(response.status, `${route} without ${missing}: ${response.text}`).toBe(403);
        expect(response.body.code).toBe('insufficient_permissions');
        expect(response.body.message).toContain(missing);
      }
      // Holding just the listed permissions is enough: whatever the answer (400 for the empty
      // body, 200, 404 for a key revoked by the DELETE route), it is not a refusal.
      const response = await send(route, exactly.get([...permissions].sort().join(','))!);
      expect(response.status, `${route} with ${permissions.join(',')}: ${response.text}`).not.toBe(403);
      expect(response.status, `${route}: ${response.text}`).toBeLessThan(500);
    }
  });
});
