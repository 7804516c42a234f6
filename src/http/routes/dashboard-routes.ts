import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { ApiError } from '../../errors.js';
import type { AppEnv } from '../env.js';

/** Where `npm run build` puts the dashboard (vite, dashboard/vite.config.ts): `<package>/dist/dashboard`, from src/http/routes or dist/http/routes alike. */
export const DASHBOARD_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../dist/dashboard');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/**
 * Everything from this origin, nothing inline but styles (Chartist and Preact set style
 * attributes): the page can reach no CDN and no other host, and works offline.
 */
const CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

const notBuilt = () =>
  new ApiError(404, 'not_found', `The dashboard is not built (no ${DASHBOARD_DIR}/index.html): run \`npm run build\` (npm install and npm start do it).`);

async function read(file: string): Promise<Buffer | null> {
  try {
    return await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * The dashboard (CONTRACT.md §14): a single-page app served at `/dashboard` from the project's own
 * build. Hashed assets are cached for a year; every other path under /dashboard answers the page
 * itself (the app routes in the browser), never cached, so a new build shows on the next load.
 * Registered before authentication: the page holds no data; it calls the API with the key the
 * person signs in with.
 */
export function registerDashboard(app: OpenAPIHono<AppEnv>, dir = DASHBOARD_DIR): void {
  const page = async (c: Context<AppEnv>) => {
    const html = await read(path.join(dir, 'index.html'));
    if (!html) throw notBuilt();
    c.header('Content-Security-Policy', CSP);
    c.header('Cache-Control', 'no-cache');
    return c.html(html.toString('utf8'));
  };
  app.get('/dashboard/assets/:file', async (c) => {
    const file = c.req.param('file');
    const type = TYPES[path.extname(file)];
    const body = type && /^[\w.-]+$/.test(file) ? await read(path.join(dir, 'assets', file)) : null;
    if (!body) throw new ApiError(404, 'not_found', `No dashboard asset named '${file}'.`);
    c.header('Content-Type', type!);
    c.header('Cache-Control', 'public, max-age=31536000, immutable');
    return c.body(new Uint8Array(body));
  });
  app.get('/dashboard', page);
  app.get('/dashboard/*', page);
}
