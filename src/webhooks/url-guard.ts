import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { errors } from '../errors.js';

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

/**
 * True when the address is one a webhook must not be sent to: anything but public unicast
 * (loopback, private, link-local — where cloud metadata lives —, unique-local, reserved, …).
 * IPv4-mapped IPv6 is judged as its IPv4.
 */
export function isForbiddenAddress(address: string): boolean {
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  // Public IPv6 is global unicast (2000::/3); ipaddr.js calls older forms such as ::7f00:1 unicast too.
  if (parsed.kind() === 'ipv6' && !(parsed as ipaddr.IPv6).match(GLOBAL_UNICAST_V6)) return true;
  return parsed.range() !== 'unicast';
}

/**
 * Checks a webhook URL before it is saved and again before every delivery (DNS may change):
 * https only, and every address the host resolves to must be public. `allowPrivate`
 * (LOYALTY_WEBHOOK_ALLOW_PRIVATE=1) lifts both rules for local development and tests.
 */
export async function assertDeliverableUrl(raw: string, allowPrivate: boolean): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.validation([{ path: 'url', message: 'must be an absolute URL' }]);
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    throw errors.validation([{ path: 'url', message: 'must use https' }]);
  }
  if (url.username || url.password) throw errors.validation([{ path: 'url', message: 'must not carry credentials' }]);
  if (allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = ipaddr.isValid(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    throw errors.validation([{ path: 'url', message: `host '${host}' does not resolve` }]);
  }
  if (addresses.length === 0 || addresses.some(isForbiddenAddress)) {
    throw errors.validation([{ path: 'url', message: 'must not point at a loopback, private, link-local or metadata address' }]);
  }
  return url;
}
