import { serve as listen } from '@hono/node-server';
import type { Config } from '../config.js';
import { createApp } from '../http/app.js';
import { createServices } from '../services.js';
import { describeKeys, provisionBusiness } from './provision.js';

/**
 * Runs the API with its projections. On an empty store it first creates a business and prints
 * its keys, once. SIGTERM/SIGINT stop accepting, let in-flight requests finish, then close.
 */
export async function serve(config: Config): Promise<void> {
  const services = await createServices({ config });
  // Whether the store is new is read from the read models, so bring them up to the log first.
  await services.projections.catchUp();
  services.projections.start();
  services.dispatcher.start();
  if ((await services.queries.access.businesses()).length === 0) {
    const first = await provisionBusiness(services, 'My business', 'unlimited');
    process.stdout.write(`${describeKeys(first, 'First start: created a business and its API keys.')}\n`);
  }
  const app = createApp(services);
  const server = listen({ fetch: app.fetch, port: config.port, hostname: config.host }, (info) => {
    services.logger.info({ port: info.port, host: config.host, store: services.database.kind }, 'loyalty API listening');
    process.stdout.write(`Listening on http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${info.port}\n`);
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    services.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000).unref();
    server.close(async () => {
      await services.close();
      clearTimeout(force);
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
