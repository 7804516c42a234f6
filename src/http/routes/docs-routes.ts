import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../env.js';

const swaggerUiDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Loyalty API reference</title>
  <link rel="icon" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>
    SwaggerUIBundle({ url: '/api/v1/openapi.json', dom_id: '#reference', validatorUrl: 'none', deepLinking: true });
  </script>
</body>
</html>`;

/**
 * The OpenAPI 3.1 document (generated from the zod schemas that validate requests) and a
 * reference page served entirely from local assets, so it works offline. Registered before
 * authentication: both are public.
 */
export function registerDocs(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerComponent('securitySchemes', 'ApiKeyHeader', { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  app.openAPIRegistry.registerComponent('securitySchemes', 'BearerKey', { type: 'http', scheme: 'bearer' });

  app.get('/api/v1/openapi.json', (c) =>
    c.json(
      app.getOpenAPI31Document({
        openapi: '3.1.0',
        info: {
          title: 'Loyalty API',
          version: '1.0.0',
          description:
            'Customers, points, tiers, rewards, events and webhooks over an event-sourced ledger. Errors are `{code, message, request_id}`; ' +
            'lists are JSON arrays with `limit`, `starting_after` and a `Link: rel="next"` header.',
        },
        servers: [{ url: '/' }],
        security: [{ ApiKeyHeader: [] }, { BearerKey: [] }],
      }),
    ),
  );
  app.get('/docs', (c) => c.html(PAGE));
  app.get('/docs/assets/:file', async (c) => {
    const file = c.req.param('file');
    const type = ASSETS[file];
    if (!type) return c.notFound();
    c.header('Content-Type', type);
    c.header('Cache-Control', 'public, max-age=86400');
    return c.body(await readFile(path.join(swaggerUiDir, file)));
  });
}
