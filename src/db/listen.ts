import pg from 'pg';
import type { Logger } from 'pino';
import { CONNECT_TIMEOUT_MS } from './database.js';

/** Pause before reconnecting the LISTEN connection, doubling per failed attempt up to the cap. */
const RECONNECT_MS = { first: 100, max: 5_000 };

export interface Listener {
  /** Each notification on the channel, with its payload. */
  onNotification: (payload: string) => void;
  /** After the connection came back: notifications sent meanwhile were lost, so look for what they said. */
  onReconnect: () => void;
  /** Whether the connection is up (false from a loss until it is back). */
  onConnected?: (connected: boolean) => void;
  /** The warning logged when the connection drops. */
  what: string;
}

/**
 * LISTENs on a PostgreSQL channel on a connection of its own. The connection is reopened whenever
 * it drops (a database restart), with a growing pause. The first connection must succeed (the
 * caller fails to start otherwise). Returns what stops listening.
 */
export async function listen(databaseUrl: string, channel: string, listener: Listener, logger: Logger): Promise<() => Promise<void>> {
  let stopped = false;
  let client: pg.Client | null = null;
  let retry: NodeJS.Timeout | null = null;

  const open = async (): Promise<void> => {
    // A server that accepts the connection and never answers must not hold the reconnect loop for ever.
    const next = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true });
    next.on('notification', (message) => listener.onNotification(message.payload ?? ''));
    const lost = (error?: Error) => {
      if (client !== next || stopped) return;
      client = null;
      listener.onConnected?.(false);
      logger.warn({ err: error, channel }, listener.what);
      void next.end().catch(() => {});
      reconnect(RECONNECT_MS.first);
    };
    next.on('error', lost);
    next.on('end', () => lost());
    try {
      await next.connect();
      await next.query(`listen ${channel}`);
    } catch (error) {
      void next.end().catch(() => {});
      throw error;
    }
    if (stopped) {
      await next.end().catch(() => {});
      return;
    }
    client = next;
    listener.onConnected?.(true);
  };

  const reconnect = (delayMs: number): void => {
    if (stopped) return;
    retry = setTimeout(() => {
      retry = null;
      open().then(
        () => listener.onReconnect(),
        () => reconnect(Math.min(RECONNECT_MS.max, delayMs * 2)),
      );
    }, delayMs);
  };

  await open();
  return async () => {
    stopped = true;
    if (retry) clearTimeout(retry);
    await client?.end().catch(() => {});
    client = null;
  };
}
