/**
 * What the primary of `loyalty serve` and its children say to each other over their IPC channel.
 * Shutdown goes through these messages rather than signals: it goes in the primary's order (see
 * `stop` in cluster-primary.ts). The connections of the port come this way too, each with its socket
 * (connection-router.ts).
 */

/** The environment variable through which the primary tells a child its role (not a setting). */
export const CHILD_ROLE_VARIABLE = 'LOYALTY_CLUSTER_CHILD';

/** An HTTP process (`serve --role api`), or the one process of projections and webhook delivery. */
export type ChildRole = 'api' | 'workers';

/** One registry's `getMetricsAsJSON()`, as it crosses the channel. */
export type MetricsJson = object[];

export type ToChild =
  /** The instance is shutting down: answer `/readyz` with 503 `stopping`, serve on as usual. */
  | { type: 'loyalty:stopping' }
  /** A connection the primary accepted (its socket is the message's handle), with the bytes it read of it. */
  | { type: 'loyalty:connection'; head: string }
  /** The port's listening socket (the message's handle): accept its connections here (the instance's only HTTP child). */
  | { type: 'loyalty:port' }
  /** Shut down: answer what was received (`Connection: close`), stop background work, exit. */
  | { type: 'loyalty:drain' }
  /** Send this process's metrics (`metrics`). */
  | { type: 'loyalty:collect-metrics'; id: number }
  /** The instance's metrics, asked for with `metrics-request`. */
  | { type: 'loyalty:instance-metrics'; id: number; text?: string; error?: string }
  /** A key was revoked: forget every cached principal, then say `principals-forgotten`. */
  | { type: 'loyalty:forget-principals'; id: number }
  /** Every HTTP child has forgotten its principals (the answer to `key-revoked`). */
  | { type: 'loyalty:key-revoked-everywhere'; id: number };

export type ToPrimary =
  /** The workers child is caught up, has provisioned an empty store, and runs; an HTTP child takes connections. */
  | { type: 'loyalty:ready' }
  | { type: 'loyalty:metrics'; id: number; metrics?: MetricsJson; error?: string }
  /** An HTTP child was asked for `/metrics`: the instance's, please. */
  | { type: 'loyalty:metrics-request'; id: number }
  /** An HTTP child revoked a key: have every HTTP child forget its principals, then answer `key-revoked-everywhere`. */
  | { type: 'loyalty:key-revoked'; id: number }
  | { type: 'loyalty:principals-forgotten'; id: number }
  /** This child accepts the port's connections itself now (the answer to `port`). */
  | { type: 'loyalty:port-taken' };

/** Whether `message` is one of ours (cluster and prom-client send their own on the channel too). */
export function isLoyaltyMessage<T extends ToChild | ToPrimary>(message: unknown): message is T {
  const type = (message as { type?: unknown } | null)?.type;
  return typeof type === 'string' && type.startsWith('loyalty:');
}
