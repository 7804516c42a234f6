import cluster from 'node:cluster';
import type { Socket } from 'node:net';
import type { Registry } from 'prom-client';
import { CHILD_ROLE_VARIABLE, type ChildRole, isLoyaltyMessage, type ToChild, type ToPrimary } from './cluster-messages.js';

/** How long an HTTP child waits for the instance's metrics (the primary itself waits 5 s per child). */
const INSTANCE_METRICS_TIMEOUT_MS = 10_000;
/** How long a revocation waits for the instance's HTTP processes to forget their principals (the primary waits 2 s per child). */
const KEY_REVOKED_TIMEOUT_MS = 3_000;

/** The role this process was forked for, when it is a child of a `loyalty serve` cluster. */
export function clusterChildRole(): ChildRole | undefined {
  if (!cluster.isWorker) return undefined;
  const role = process.env[CHILD_ROLE_VARIABLE];
  return role === 'api' || role === 'workers' ? role : undefined;
}

/** A child's side of the channel to its primary (see cluster-messages.ts). */
export interface PrimaryChannel {
  /** The workers child is running; an HTTP child takes connections. */
  ready(): void;
  /** Gives `act` every connection the primary hands this child (those that came before it, at once). */
  onConnection(act: (socket: Socket, head: Buffer) => void): void;
  /**
   * Gives `act` the port's listening socket when the primary hands it over (the instance's only
   * HTTP child accepts its connections itself); `taken` tells the primary it does.
   */
  onPort(act: (handle: object, taken: () => void) => void): void;
  /** Runs `act` when the primary says the instance is shutting down (at once if it already has). */
  onStopping(act: () => void): void;
  /** Runs `act` when the primary says to shut down (at once if it already has). */
  onDrain(act: () => void): void;
  /** Answers the primary's requests for this process's metrics from `registry`. */
  answerMetrics(registry: Registry): void;
  /** The whole instance's metrics, summed by the primary. */
  instanceMetrics(): Promise<string>;
  /** Runs `act` (forgetting this process's principals) whenever the primary says a key was revoked. */
  onForgetPrincipals(act: () => void): void;
  /** A key was revoked here: resolves once every HTTP process of the instance has forgotten its principals. */
  keyRevoked(): Promise<void>;
}

/**
 * Opens the channel. Call it first thing: a request to stop may come while the child is still
 * starting, and is kept until the child can act on it. From then on the child ignores SIGTERM and
 * SIGINT: Ctrl-C reaches every process of the group and systemd signals the whole control group,
 * but the drain must go in the primary's order (see cluster-primary.ts), so the primary, which
 * gets the signal too, passes it on as messages.
 *
 * @example
 * const channel = primaryChannel();
 * channel.onDrain(() => shutDown());
 */
export function primaryChannel(): PrimaryChannel {
  process.on('SIGTERM', () => {});
  process.on('SIGINT', () => {});
  const stopping = latch();
  let takeConnection: ((socket: Socket, head: Buffer) => void) | undefined;
  const early: Array<[Socket, Buffer]> = [];
  let takePort: ((handle: object, taken: () => void) => void) | undefined;
  let earlyPort: object | undefined;
  const drain = latch();
  let registry: Registry | undefined;
  let nextId = 0;
  const asked = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  const revocations = new Map<number, () => void>();
  let forgetPrincipals: () => void = () => {};

  // The callback swallows the error of a channel already closed: the primary is gone, and this child with it.
  const send = (message: ToPrimary) => void process.send!(message, undefined, undefined, () => {});
  const portTaken = () => send({ type: 'loyalty:port-taken' });

  process.on('message', (message: unknown, handle: unknown) => {
    if (!isLoyaltyMessage<ToChild>(message)) return;
    switch (message.type) {
      case 'loyalty:stopping':
        return stopping.fire();
      case 'loyalty:connection': {
        if (!handle) return; // the client went away while its socket was on its way
        const connection: [Socket, Buffer] = [handle as Socket, Buffer.from(message.head, 'latin1')];
        if (takeConnection) return takeConnection(...connection);
        return void early.push(connection);
      }
      case 'loyalty:port': {
        if (!handle) return;
        if (takePort) return takePort(handle as object, portTaken);
        earlyPort = handle as object;
        return;
      }
      case 'loyalty:drain':
        return drain.fire();
      case 'loyalty:collect-metrics': {
        const { id } = message;
        if (!registry) return send({ type: 'loyalty:metrics', id, metrics: [] });
        registry.getMetricsAsJSON().then(
          (metrics) => send({ type: 'loyalty:metrics', id, metrics }),
          (error: Error) => send({ type: 'loyalty:metrics', id, error: error.message }),
        );
        return;
      }
      case 'loyalty:forget-principals':
        forgetPrincipals();
        return send({ type: 'loyalty:principals-forgotten', id: message.id });
      case 'loyalty:key-revoked-everywhere':
        revocations.get(message.id)?.();
        revocations.delete(message.id);
        return;
      case 'loyalty:instance-metrics': {
        const request = asked.get(message.id);
        asked.delete(message.id);
        if (message.text !== undefined) request?.resolve(message.text);
        else request?.reject(new Error(`the instance's metrics could not be collected: ${message.error}`));
        return;
      }
      default: {
        const _exhaustive: never = message;
        return _exhaustive;
      }
    }
  });

  return {
    ready: () => send({ type: 'loyalty:ready' }),
    onConnection: (act) => {
      takeConnection = act;
      for (const connection of early.splice(0)) act(...connection);
    },
    onPort: (act) => {
      takePort = act;
      if (earlyPort) act(earlyPort, portTaken);
      earlyPort = undefined;
    },
    onStopping: (act) => stopping.on(act),
    onDrain: (act) => drain.on(act),
    answerMetrics: (r) => void (registry = r),
    onForgetPrincipals: (act) => void (forgetPrincipals = act),
    keyRevoked: () =>
      new Promise<void>((resolve) => {
        const id = nextId++;
        // A primary that does not answer (it is going away) must not hold the revocation's answer.
        const timer = setTimeout(() => {
          revocations.delete(id);
          resolve();
        }, KEY_REVOKED_TIMEOUT_MS);
        revocations.set(id, () => {
          clearTimeout(timer);
          resolve();
        });
        send({ type: 'loyalty:key-revoked', id });
      }),
    instanceMetrics: () =>
      new Promise<string>((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          asked.delete(id);
          reject(new Error(`the primary did not send the instance's metrics within ${INSTANCE_METRICS_TIMEOUT_MS} ms`));
        }, INSTANCE_METRICS_TIMEOUT_MS);
        const settle = <T>(then: (value: T) => void) => (value: T) => {
          clearTimeout(timer);
          then(value);
        };
        asked.set(id, { resolve: settle(resolve), reject: settle(reject) });
        send({ type: 'loyalty:metrics-request', id });
      }),
  };
}

/** Something that happens once, and an action that runs when it has, whichever comes first. */
function latch() {
  let fired = false;
  let action: (() => void) | undefined;
  return {
    fire() {
      if (fired) return;
      fired = true;
      action?.();
    },
    on(act: () => void) {
      action = act;
      if (fired) act();
    },
  };
}
