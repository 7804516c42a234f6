import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { createApp } from '../../src/http/app.js';
import { createServices } from '../../src/services.js';

/** The OpenAPI document exactly as the app serves it, from a throwaway in-memory store. */
export async function openApiDocument(): Promise<unknown> {
  const services = await createServices({
    config: { ...loadConfig({}), logLevel: 'silent' },
    database: await openDatabase({}),
    logger: pino({ level: 'silent' }),
  });
  try {
    const response = await createApp(services).request('http://127.0.0.1:3000/api/v1/openapi.json');
    if (response.status !== 200) throw new Error(`GET /api/v1/openapi.json answered ${response.status}`);
    return await response.json();
  } finally {
    await services.close();
  }
}
