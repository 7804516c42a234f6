import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { type Browser, chromium } from 'playwright-core';
import { DASHBOARD_DIR } from '../../src/http/routes/dashboard-routes.js';
import { startTestApp, type TestApp, type TestAppOptions } from './test-app.js';

/** Debian's Chromium (`apt-get install chromium`); another binary through LOYALTY_CHROMIUM. Never downloaded. */
export const CHROMIUM = process.env.LOYALTY_CHROMIUM ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or null when they can. */
export const browserUnavailable: string | null = !existsSync(CHROMIUM)
  ? `no Chromium at ${CHROMIUM} (install the chromium package, or set LOYALTY_CHROMIUM)`
  : !existsSync(`${DASHBOARD_DIR}/index.html`)
    ? `the dashboard is not built (${DASHBOARD_DIR}): run npm run build`
    : null;

/**
 * Headless Chromium as root in a container. Playwright's `launch` gives every browser a fresh
 * temporary user-data-dir of its own (removed on close), so nothing carries over between runs.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export interface DashboardServer extends TestApp {
  /** `http://127.0.0.1:<port>` */
  origin: string;
}

/** The real service on a fresh database, listening on a free local port (the dashboard's origin). */
export async function startDashboardServer(options: TestAppOptions = {}): Promise<DashboardServer> {
  const t = await startTestApp(options);
  const server = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  const { port } = server.address() as AddressInfo;
  return {
    ...t,
    origin: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await t.close();
    },
  };
}
