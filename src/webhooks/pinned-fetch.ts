import { type LookupAddress, type LookupAllOptions, lookup as dnsLookup } from 'node:dns';
import { Agent, fetch as undiciFetch } from 'undici';
import { isForbiddenAddress } from './url-guard.js';

/** The code of the error a refused connection fails with (as `cause` of fetch's TypeError). */
export const FORBIDDEN_ADDRESS = 'EFORBIDDENADDRESS';

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * The DNS lookup of every outgoing webhook connection: it refuses a host that resolves to any
 * forbidden address, so the address checked is the address connected to. Checking the URL first
 * and letting fetch resolve it again would let a host answer with a public address to the check
 * and a private one to the connection (DNS rebinding).
 */
export function guardedLookup(hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true } as LookupAllOptions, (error, addresses) => {
    if (error) return callback(error, []);
    const forbidden = addresses.find((a) => isForbiddenAddress(a.address));
    if (addresses.length === 0 || forbidden) {
      const refused: NodeJS.ErrnoException = new Error(`${hostname} resolved to ${forbidden?.address ?? 'nothing'}, which webhooks must not be sent to`);
      refused.code = FORBIDDEN_ADDRESS;
      return callback(refused, []);
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

/**
 * The fetch webhook deliveries use. Without `allowPrivate` its connections resolve through
 * `guardedLookup`. (IP literals never reach a lookup; `assertDeliverableUrl` judges those.)
 */
export function webhookFetch(allowPrivate: boolean): typeof fetch {
  if (allowPrivate) return globalThis.fetch;
  const dispatcher = new Agent({ connect: { lookup: guardedLookup as never } });
  return ((input: string | URL, init?: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher })) as unknown as typeof fetch;
}
