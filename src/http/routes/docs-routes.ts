import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../env.js';
import { finishDocument } from '../openapi/finish-document.js';
import { registerSharedComponents } from '../openapi/response-headers.js';
import { TAGS } from '../openapi/tags.js';
import { registerWebhooks } from '../openapi/webhooks.js';

const swaggerUiDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

/** package.json says private with no licence: proprietary until its owners choose one (an SPDX `LicenseRef-`, OpenAPI 3.1). */
const LICENSE = { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' };

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

/** Stands for the origin a request reached, in the document built once (`servers`). */
const PLACEHOLDER_ORIGIN = 'https://this-service.invalid';
const PLACEHOLDER_ORIGIN_JSON = JSON.stringify(PLACEHOLDER_ORIGIN);

function buildDocument(app: OpenAPIHono<AppEnv>) {
  return finishDocument(
    app.getOpenAPI31Document({
      openapi: '3.1.0',
      info: {
        title: 'Loyalty API',
        version: '1.0.0',
        license: LICENSE,
        description:
          'Customers, points, tiers, rewards, events and webhooks over an event-sourced ledger. Errors are `{code, message, request_id}`; ' +
          'lists are JSON arrays with `limit`, `starting_after` and a `Link: rel="next"` header.',
      },
      // Absolute, so a client generated from the document has a base URL: the origin it was fetched from.
      servers: [{ url: PLACEHOLDER_ORIGIN, description: 'This service' }],
      security: [{ ApiKeyHeader: [] }, { BearerKey: [] }],
      tags: TAGS,
    }),
  );
}

/**
 * The OpenAPI 3.1 document (generated from the zod schemas that validate requests) and a
 * reference page served entirely from local assets, so it works offline. Registered before
 * authentication: both are public.
 */
export function registerDocs(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerComponent('securitySchemes', 'ApiKeyHeader', { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  app.openAPIRegistry.registerComponent('securitySchemes', 'BearerKey', { type: 'http', scheme: 'bearer' });
  registerSharedComponents(app);
  registerWebhooks(app);

  // Built once, on the first request (every route is registered by then): generating it from the
  // schemas takes tens of milliseconds of CPU, and the path is public. Only `servers` differs per
  // request; it is put in where the placeholder origin stands.
  let documentText: string | undefined;
  app.get('/api/v1/openapi.json', (c) => {
    documentText ??= JSON.stringify(buildDocument(app));
    const origin = JSON.stringify(new URL(c.req.url).origin);
    return c.body(documentText.replace(PLACEHOLDER_ORIGIN_JSON, () => origin), 200, { 'Content-Type': 'application/json' });
  });
  app.get('/docs', (c) => c.html(PAGE));
  const assets = new Map<string, Uint8Array<ArrayBuffer>>();
  app.get('/docs/assets/:file', async (c) => {
    const file = c.req.param('file');
    const type = ASSETS[file];
    if (!type) return c.notFound();
    c.header('Content-Type', type);
    c.header('Cache-Control', 'public, max-age=86400');
    // Read once: three fixed files of the installed package.
    let bytes = assets.get(file);
    if (!bytes) assets.set(file, (bytes = new Uint8Array(await readFile(path.join(swaggerUiDir, file)))));
    return c.body(bytes);
  });
}
