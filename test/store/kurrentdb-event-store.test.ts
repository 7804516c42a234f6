import { describe } from 'vitest';
import { KurrentDbEventStore } from '../../src/store/kurrentdb-event-store.js';
import { eventStoreContract } from './event-store.contract.js';

/** The image testcontainers starts when no EVENTSTORE_URL is given (25.1+: multiStreamAppend). */
const IMAGE = process.env.KURRENTDB_IMAGE ?? 'kurrentplatform/kurrentdb:25.1.0';

/**
 * Where the contract runs: the server of EVENTSTORE_URL, else a KurrentDB container when a
 * container runtime answers, else nowhere — and then the suite is reported as skipped, with why.
 */
async function kurrentDbTarget(): Promise<{ start: () => Promise<{ url: string; stop: () => Promise<void> }> } | { skipped: string }> {
  const url = process.env.EVENTSTORE_URL;
  if (url) return { start: async () => ({ url, stop: async () => {} }) };
  const { getContainerRuntimeClient, GenericContainer, Wait } = await import('testcontainers');
  try {
    await getContainerRuntimeClient();
  } catch {
    return { skipped: 'no EVENTSTORE_URL and no container runtime' };
  }
  return {
    start: async () => {
      const container = await new GenericContainer(IMAGE)
        .withEnvironment({ KURRENTDB_CLUSTER_SIZE: '1', KURRENTDB_RUN_PROJECTIONS: 'None', KURRENTDB_INSECURE: 'true' })
        .withExposedPorts(2113)
        .withWaitStrategy(Wait.forHttp('/health/live', 2113).forStatusCode(204))
        .withStartupTimeout(120_000)
        .start();
      return {
        url: `kurrentdb://${container.getHost()}:${container.getMappedPort(2113)}?tls=false`,
        stop: async () => void (await container.stop()),
      };
    },
  };
}

const target = await kurrentDbTarget();
const name = 'skipped' in target ? `kurrentdb (skipped: ${target.skipped})` : 'kurrentdb';

describe.skipIf('skipped' in target)(name, () => {
  // The contract names every stream `contract…`; the service's prefixes would hide them from readAll.
  eventStoreContract('kurrentdb', async () => {
    const server = await (target as Exclude<typeof target, { skipped: string }>).start();
    const store = KurrentDbEventStore.connect(server.url, { streamPrefixes: ['contract'] });
    return {
      store,
      async close() {
        await store.close();
        await server.stop();
      },
    };
  });
});
