import pino from 'pino';
import { type Config, loadConfig } from '../../src/config.js';
import { createApp } from '../../src/http/app.js';
import { createServices, type Services, type ServicesOptions } from '../../src/services.js';
import type { TestApp, TestResponse } from './test-app.js';

/** Another instance of the service on the test app's database; `request` goes through its HTTP app. */
export async function instanceBeside(app: TestApp, options: Partial<ServicesOptions> & { config?: Partial<Config> } = {}) {
  const services: Services = await createServices({
    runProjections: true,
    logger: pino({ level: 'silent' }),
    ...options,
    config: { ...loadConfig({}), logLevel: 'silent', rateLimitRps: 0, ...options.config },
    database: { ...app.services.database, close: async () => {} },
  });
  const http = createApp(services);
  return {
    services,
    async request(method: string, path: string, key: string, body?: unknown, headers: Record<string, string> = {}): Promise<TestResponse> {
      const init = body === undefined ? {} : { body: JSON.stringify(body) };
      const response = await http.request(path, { method, headers: { 'x-api-key': key, 'content-type': 'application/json', ...headers }, ...init });
      const text = await response.text();
      return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined, text };
    },
  };
}

