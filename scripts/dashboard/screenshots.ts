/**
 * `npm run docs:screenshots`: the dashboard's main pages at 1280 px and 390 px wide, into
 * docs/dashboard/. A fresh in-memory store is seeded with a month of a coffee shop's activity,
 * written through the real commands with their clock set to the day each thing happened (so the
 * overview's chart shows real per-day figures), then Debian's Chromium visits each page.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import pino from 'pino';
import { chromium, type Page } from 'playwright-core';
import { provisionBusiness } from '../../src/cli/provision.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import type { CommandContext } from '../../src/events/metadata.js';
import { streams } from '../../src/events/streams.js';
import { createApp } from '../../src/http/app.js';
import { createServices } from '../../src/services.js';

const OUT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/dashboard');
const CHROMIUM = process.env.LOYALTY_CHROMIUM ?? '/usr/bin/chromium';
const DAY = 86_400_000;

/** A small deterministic generator, so the pictures change only when the dashboard does. */
let seed = 42;
const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Radia', 'Linus', 'Frances', 'John', 'Hedy', 'Dennis', 'Katherine', 'Tim'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Perlman', 'Torvalds', 'Allen', 'Backus', 'Lamarr', 'Ritchie', 'Johnson', 'Berners-Lee'];

async function main() {
  const config = { ...loadConfig({}), logLevel: 'silent', rateLimitRps: 0, publicRateLimitRps: 0, webhookAllowPrivate: true };
  const database = await openDatabase({});
  const services = await createServices({ config, database, runProjections: true, logger: pino({ level: 'silent' }) });
  const app = createApp(services);
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const business = await provisionBusiness(services, 'Corner Coffee', 'unlimited');
  const key = business.private_key;
  const post = async (route: string, body: unknown) => {
    const response = await app.request(`/api/v1${route}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (response.status >= 300) throw new Error(`${route}: ${response.status} ${await response.text()}`);
    return (await response.json()) as { id: string };
  };

  await post('/tiers', { name: 'Silver', points_threshold: 1000, multiplier: 1.25, benefits: ['Free refills'] });
  await post('/tiers', { name: 'Gold', points_threshold: 3000, multiplier: 1.5, benefits: ['Free refills', 'Birthday cake'] });
  const rewards = [
    await post('/rewards', { title: 'Free espresso', points_cost: 150, reward_type: 'digital' }),
    await post('/rewards', { title: 'Pastry of the day', points_cost: 250, reward_type: 'physical', stock_quantity: 40 }),
    await post('/rewards', { title: 'Tote bag', points_cost: 900, reward_type: 'physical', stock_quantity: 12 }),
  ];
  await post('/event-types', {
    name: 'purchase',
    display_name: 'Purchase',
    default_points: 0,
    rules: [
      { points_per_unit: 10, unit_property: 'amount', description: '10 points per euro' },
      { conditions: [{ property: 'amount', op: 'gte', value: 20 }], points: 50, description: 'Bonus on orders of 20 € or more' },
    ],
  });
  await post('/keys', { type: 'private', name: 'Till 1', permissions: ['customers:read', 'customers:write', 'points:read', 'points:write', 'rewards:read'] });

  // A month of customers, earns and redemptions, each at its own time.
  const now = Date.now();
  const at = (daysAgo: number) => new Date(now - daysAgo * DAY + Math.floor(random() * 8 * 3600_000) - 4 * 3600_000);
  const ctx = (when: Date): CommandContext => ({ businessId: business.business_id, actor: 'seed', requestId: null, idempotencyKey: null, now: when });
  const { customers, redemptions, program, lifecycle } = services.commands;
  // Points expire a year after they are earned, and tiers count the last 180 days (CONTRACT.md §13).
  await program.changeSettings(ctx(at(30)), { points_expiry_days: 365, tier_qualification: { mode: 'rolling', window_days: 180 } });
  for (let i = 0; i < 36; i++) {
    const joined = 29 - Math.floor((i / 36) * 29);
    const first = FIRST[i % FIRST.length]!;
    const last = LAST[(i * 7) % LAST.length]!;
    const { streamId } = await customers.register(ctx(at(joined)), {
      email: `${first}.${last}${i}@example.com`.toLowerCase(),
      phone: null,
      first_name: first,
      last_name: last,
      external_reference: `crm-${1000 + i}`,
      metadata: {},
    });
    const id = streams.customerIdOf(streamId);
    let balance = 0;
    for (let day = joined; day >= 0; day -= 1 + Math.floor(random() * 5)) {
      const amount = 40 + Math.floor(random() * 260);
      const earned = await customers.recordPoints(ctx(at(day)), id, { pointsType: 'earn', amount, applyMultiplier: true, description: pick(['Coffee', 'Lunch', 'Beans 250 g', 'Breakfast']), reference: null, metadata: {} });
      balance += amount;
      // The first customer's first order was refunded in part.
      if (i === 0 && day === joined) {
        const { transaction_id } = earned.data as { transaction_id: string };
        await lifecycle.reverse(ctx(new Date(earned.recordedAt.getTime() + 3600_000)), id, { reversedId: transaction_id, amount: Math.floor(amount / 2), reference: 'refund-1001', description: 'Order refunded' });
        balance -= Math.floor(amount / 2);
      }
      if (balance > 400 && random() < 0.3) {
        const reward = pick(rewards.slice(0, 2));
        await redemptions.redeem(ctx(at(day)), { customerId: id, rewardId: reward.id, reference: null, metadata: {} });
        balance -= 200;
      }
    }
  }
  await services.projections.catchUp();
  // Added after the seeding, so its deliveries are a test message and what follows (nothing listens on port 9: they fail and retry).
  const hook = await post('/webhooks', { url: 'http://127.0.0.1:9/loyalty-hooks', events: ['tier.upgraded', 'reward.redeemed'], description: 'Shop backend' });
  await post(`/webhooks/${hook.id}/test`, {});

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const firstCustomer = (await services.queries.customers.list(business.business_id, {}, { limit: 1 })).items[0]!.id;
  const shots: Array<{ name: string; path: string; prepare?: (page: Page) => Promise<void> }> = [
    { name: 'overview', path: '/dashboard', prepare: (p) => p.locator('.ct-bar').first().waitFor({ state: 'attached' }) },
    { name: 'customers', path: '/dashboard/customers' },
    { name: 'customer', path: `/dashboard/customers/${firstCustomer}`, prepare: (p) => p.getByText('Hash chain intact').waitFor() },
    {
      name: 'event-types',
      path: '/dashboard/event-types',
      prepare: async (p) => {
        await p.getByLabel('Properties').fill('{"amount": 24.5}');
        await p.getByRole('button', { name: 'Preview points' }).click();
        await p.getByRole('status', { name: 'Preview result' }).waitFor();
      },
    },
    {
      name: 'webhooks',
      path: '/dashboard/webhooks',
      prepare: async (p) => {
        await p.getByRole('button', { name: 'Show deliveries' }).click();
        await p.locator('.attempts').first().waitFor();
      },
    },
    { name: 'keys', path: '/dashboard/keys' },
    { name: 'settings', path: '/dashboard/settings', prepare: (p) => p.getByRole('form', { name: 'Points program' }).waitFor() },
  ];
  for (const [width, height, suffix] of [
    [1280, 900, 'desktop'],
    [390, 844, 'mobile'],
  ] as const) {
    const context = await browser.newContext({ viewport: { width, height }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    await page.goto(`${origin}/dashboard`);
    if (suffix === 'desktop') await page.screenshot({ path: `${OUT}/sign-in-${suffix}.png` });
    await page.getByLabel('API key', { exact: true }).fill(key);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    for (const shot of shots) {
      await page.goto(`${origin}${shot.path}`);
      await page.locator('main h1').waitFor();
      await page.waitForLoadState('networkidle');
      await shot.prepare?.(page);
      await page.screenshot({ path: `${OUT}/${shot.name}-${suffix}.png`, fullPage: true });
      console.log(`${shot.name}-${suffix}.png`);
    }
    await context.close();
  }
  await browser.close();
  server.closeAllConnections();
  server.close();
  await services.close();
}

await main();
