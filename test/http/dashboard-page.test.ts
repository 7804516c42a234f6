import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDashboard } from '../../src/http/routes/dashboard-routes.js';
import { createRouter } from '../../src/http/routes/router.js';
import { expectError } from '../support/expectations.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

/** The dashboard's files, served by the API process at /dashboard (CONTRACT.md §14). */
describe('dashboard page', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('serves the page from the build, allowing nothing from another origin, and its hashed assets for a year', async () => {
    const page = await t.request('GET', '/dashboard');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('cache-control')).toBe('no-cache');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(page.text).not.toMatch(/https?:\/\//);
    const assets = [...page.text.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    for (const asset of assets) {
      const answer = await t.request('GET', asset);
      expect(answer.status, asset).toBe(200);
      expect(answer.headers.get('cache-control')).toContain('immutable');
      // Bundled: no module is fetched from a CDN at run time.
      expect(answer.text).not.toMatch(/import\s*\(?\s*["']https?:/);
    }
  });

  it('answers the page for every path under /dashboard (the app routes in the browser), and JSON 404s for unknown assets', async () => {
    const page = await t.request('GET', '/dashboard');
    for (const path of ['/dashboard/', '/dashboard/customers/cust_123', '/dashboard/keys']) {
      const answer = await t.request('GET', path);
      expect(answer.status, path).toBe(200);
      expect(answer.text, path).toBe(page.text);
    }
    expectError(await t.request('GET', '/dashboard/assets/nope.js'), 404, 'not_found');
    expectError(await t.request('GET', '/dashboard/assets/..%2F..%2Fpackage.json'), 404, 'not_found');
    expectError(await t.request('POST', '/dashboard', { body: {} }), 405, 'method_not_allowed');
  });

  it('says how to build it when the build is missing', async () => {
    const app = createRouter();
    registerDashboard(app, '/nonexistent/dashboard');
    app.onError((error) => Response.json({ code: (error as { code?: string }).code, message: error.message }, { status: (error as { status?: number }).status ?? 500 }));
    const answer = await app.request('/dashboard');
    expect(answer.status).toBe(404);
    expect(await answer.json()).toMatchObject({ code: 'not_found', message: expect.stringContaining('npm run build') });
  });
});
