// Idiomatic Emmett earn service, used only as a yardstick for the bench:
// hono + Emmett's PostgreSQL event store, a pure decider, no read models.
//
//   node server.mjs <port> <postgres connection string> [processes=1]
//
// POST /api/v1/customers/:id/points/transaction
//   header x-api-key: emmett-reference-key
//   body   {"type":"earn","amount":<positive integer>[,"reference":"..."]}
//   201    {"balance":<new balance>,"customer_id":"<id>"}
import cluster from 'node:cluster';
import process from 'node:process';
import {
  DeciderCommandHandler,
  isExpectedVersionConflictError,
} from '@event-driven-io/emmett';
import { getPostgreSQLEventStore } from '@event-driven-io/emmett-postgresql';
import { Hono } from 'hono';
import { serve } from '@hono/node-server';

const API_KEY = 'emmett-reference-key';

const [portArg, connectionString, processesArg = '1'] = process.argv.slice(2);
const port = Number(portArg);
const processes = Number(processesArg);
if (!Number.isInteger(port) || port <= 0 || !connectionString || !Number.isInteger(processes) || processes < 1) {
  console.error('usage: node server.mjs <port> <postgres connection string> [processes=1]');
  process.exit(2);
}

// ---------------------------------------------------------------------------
// Pure decider: a customer's points.
// ---------------------------------------------------------------------------
const initialState = () => ({ balance: 0 });

const evolve = (state, event) => {
  switch (event.type) {
    case 'PointsEarned':
      return { balance: state.balance + event.data.amount };
    default:
      return state;
  }
};

const decide = (command, _state) => {
  switch (command.type) {
    case 'EarnPoints': {
      const { customerId, amount, reference } = command.data;
      return {
        type: 'PointsEarned',
        data: reference === undefined ? { customerId, amount } : { customerId, amount, reference },
      };
    }
    default:
      throw new Error(`unknown command ${command.type}`);
  }
};

// Emmett's command handler: aggregateStream (read + evolve) -> decide ->
// appendToStream with the read stream version as the expected version.
// Emmett's own default is NO retry; `retry: { onVersionConflict: true }` is its
// built-in preset for version conflicts (CommandHandlerStreamVersionConflictRetryOptions:
// 3 retries, minTimeout 100 ms, factor 1.5, only on ExpectedVersionConflictError).
const handle = DeciderCommandHandler({
  decide,
  evolve,
  initialState,
  mapToStreamId: (id) => `customer-${id}`,
  retry: { onVersionConflict: true },
});

// ---------------------------------------------------------------------------
// HTTP worker
// ---------------------------------------------------------------------------
const startWorker = () => {
  // Emmett creates its schema on first use (autoMigration default).
  const eventStore = getPostgreSQLEventStore(connectionString);

  const app = new Hono();

  app.post('/api/v1/customers/:id/points/transaction', async (c) => {
    if (c.req.header('x-api-key') !== API_KEY) {
      return c.json({ error: 'unauthorized' }, 401);
    }
    let body;
    try {
      body = await c.req.json();
    } catch {
      return c.json({ error: 'invalid JSON body' }, 400);
    }
    if (body === null || typeof body !== 'object' || body.type !== 'earn') {
      return c.json({ error: 'type must be "earn"' }, 400);
    }
    const { amount, reference } = body;
    if (!Number.isSafeInteger(amount) || amount <= 0) {
      return c.json({ error: 'amount must be a positive integer' }, 400);
    }
    if (reference !== undefined && typeof reference !== 'string') {
      return c.json({ error: 'reference must be a string' }, 400);
    }

    const customerId = c.req.param('id');
    try {
      const { newState } = await handle(eventStore, customerId, {
        type: 'EarnPoints',
        data: { customerId, amount, reference },
      });
      return c.json({ balance: newState.balance, customer_id: customerId }, 201);
    } catch (error) {
      if (isExpectedVersionConflictError(error)) {
        return c.json({ error: 'version conflict, retries exhausted' }, 409);
      }
      console.error(error);
      return c.json({ error: 'internal error' }, 500);
    }
  });

  app.notFound((c) => c.json({ error: 'not found' }, 404));

  const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) => {
    console.log(`listening on http://127.0.0.1:${info.port}`);
  });

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.close(async () => {
      try {
        await eventStore.close();
      } finally {
        process.exit(0);
      }
    });
    // keep-alive sockets would hold close() open forever
    server.closeIdleConnections?.();
    setTimeout(() => process.exit(0), 5000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
};

// ---------------------------------------------------------------------------
// Primary / cluster
// ---------------------------------------------------------------------------
const startPrimary = async () => {
  // Create Emmett's schema once before forking so workers don't race on it.
  const eventStore = getPostgreSQLEventStore(connectionString);
  await eventStore.schema.migrate();
  await eventStore.close();

  let stopping = false;
  for (let i = 0; i < processes; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) console.error(`worker ${worker.process.pid} exited (${signal ?? code})`);
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(stopping ? 0 : 1);
  });
  const stop = () => {
    if (stopping) return;
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
};

if (processes > 1 && cluster.isPrimary) {
  startPrimary().catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  startWorker();
}
