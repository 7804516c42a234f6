import type { ProvisionedBusiness } from '../../src/cli/provision.js';
import type { TestApp } from './test-app.js';

/** A business holding one of every resource the API serves, and the ids that address them. */
export interface SeededBusiness extends ProvisionedBusiness {
  ids: {
    customer_id: string;
    /** The customer's earn (a credit). */
    transaction_id: string;
    tier_id: string;
    name: string;
    reward_id: string;
    redemption_id: string;
    key_id: string;
    webhook_id: string;
  };
}

/**
 * A business with a customer (with points and a redemption), a tier, an event type, a reward, a
 * webhook and a spare API key, all made through the API. `tag` keeps names unique across calls.
 * Webhooks need `config.webhookAllowPrivate` (their URL is a local one that is never called when
 * the dispatcher does not run).
 */
export async function seedBusiness(t: TestApp, tag: string): Promise<SeededBusiness> {
  const business = await t.business();
  const post = async (path: string, body: unknown) => {
    const response = await t.request('POST', path, { key: business.private_key, body });
    if (response.status !== 201) throw new Error(`seeding ${path}: ${response.status} ${response.text}`);
    return response.body;
  };
  const customer = await post('/api/v1/customers', { email: `${tag}@example.com`, external_reference: `${tag}-ext` });
  const earn = await post(`/api/v1/customers/${customer.id}/points/transaction`, { type: 'earn', amount: 1000, reference: `${tag}-order` });
  const tier = await post('/api/v1/tiers', { name: `${tag} gold`, points_threshold: 500, multiplier: 1.5 });
  const eventType = await post('/api/v1/event-types', { name: `${tag}-purchase`, display_name: 'Purchase', default_points: 10 });
  const reward = await post('/api/v1/rewards', { title: `${tag} coffee`, points_cost: 100, reward_type: 'digital', stock_quantity: 100 });
  const redemption = await post(`/api/v1/customers/${customer.id}/redemptions`, { reward_id: reward.id });
  const key = await post('/api/v1/keys', { type: 'private', name: `${tag} spare`, permissions: ['keys:write'] });
  const webhook = await post('/api/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] });
  return {
    ...business,
    ids: {
      customer_id: customer.id,
      transaction_id: earn.id,
      tier_id: tier.id,
      name: eventType.name,
      reward_id: reward.id,
      redemption_id: redemption.id,
      key_id: key.id,
      webhook_id: webhook.id,
    },
  };
}

/** `/api/v1/customers/:customer_id` with the business's ids in place of the parameters. */
export function fillPath(path: string, ids: Record<string, string>): string {
  return path.replace(/:([a-z_]+)/g, (_, name: string) => {
    const id = ids[name];
    if (id === undefined) throw new Error(`no id for path parameter ${name}`);
    return encodeURIComponent(id);
  });
}

/** The API routes the app serves, `METHOD /api/v1/...`, one each (hono lists a route once per middleware). */
export function servedApiRoutes(t: TestApp): string[] {
  const routes = t.app.routes
    .filter((r) => r.path.startsWith('/api/v1/') && r.method !== 'ALL' && !r.path.includes('*') && r.path !== '/api/v1/openapi.json')
    .map((r) => `${r.method} ${r.path}`);
  return [...new Set(routes)].sort();
}
